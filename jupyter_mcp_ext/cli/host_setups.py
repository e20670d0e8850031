"""What each agent host is given to connect: the URL alone (the host signs in with MCP's OAuth), or,
for a host that can only send a fixed header, the URL and ``Authorization: Bearer <agent token>``.

One text for ``jupyter mcp config <host>`` and the panel's Connect section. Claude Code's set-up is a
command line, so it never carries a token (shell history, ``ps``). Stdlib only: the command starts fast.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

HOSTS = ("claude", "codex", "cursor", "vscode", "json")
HEADER_HOSTS = ("codex", "cursor", "vscode", "json")
"""The hosts whose set-up is a file, which can carry an agent token's header."""


def config_text(host: str, url: str, token: str = "", name: str = "jupyter") -> str:
    """A set-up for ``host``, ready to paste; ``token`` (an agent token) only in a file-based one."""
    # "Bearer" carries an agent token, and Jupyter takes its own token in it too.
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if host == "claude":  # the URL alone: a token on a command line stays in shell history and `ps`
        return shlex.join(["claude", "mcp", "add", "--transport", "http", name, url])
    if host == "codex":
        lines = ["# ~/.codex/config.toml", f"[mcp_servers.{name}]", f"url = {json.dumps(url)}"]
        if headers:
            pairs = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in headers.items())
            lines.append(f"http_headers = {{ {pairs} }}")
        return "\n".join(lines)
    server: dict[str, Any] = {"url": url, "headers": headers}
    if host == "cursor":
        return "// ~/.cursor/mcp.json (or .cursor/mcp.json in a project)\n" + json.dumps(
            {"mcpServers": {name: server}}, indent=2
        )
    if host == "vscode":
        return "// .vscode/mcp.json\n" + json.dumps({"servers": {name: {"type": "http", **server}}}, indent=2)
    return json.dumps({"mcpServers": {name: {"type": "http", **server}}}, indent=2)
