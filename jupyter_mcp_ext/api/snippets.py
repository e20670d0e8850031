"""The Connect section's set-ups: exactly what ``jupyter mcp config <host>`` prints.

``snippets`` carry the URL alone (the host signs in). ``token_snippets`` are the file-based ones with
``Authorization: Bearer <TOKEN>``: the panel fills in an agent token it has just minted, never the
person's Jupyter token, and Claude Code's command line is not among them.
"""

from __future__ import annotations

from ..cli.host_setups import HEADER_HOSTS, HOSTS, config_text

TOKEN = "<TOKEN>"


def snippets(url: str) -> dict[str, str]:
    return {host: config_text(host, url) for host in HOSTS}


def token_snippets(url: str) -> dict[str, str]:
    return {host: config_text(host, url, TOKEN) for host in HEADER_HOSTS}
