"""``jupyter mcp``: the command line, and what it shares with the server (endpoint discovery, the
set-up each agent host is given). Stdlib only at import, so the command starts fast."""

from .commands import main

__all__ = ["main"]
