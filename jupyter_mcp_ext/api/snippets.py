"""How to connect each common MCP client to this server, with ``<TOKEN>`` for the person to fill in.

The panel substitutes the real token only when the person asks, so a snippet on screen never
shows it by accident.
"""

from __future__ import annotations

import json

TOKEN = "<TOKEN>"


def snippets(url: str) -> dict[str, str]:
    header = f"token {TOKEN}"
    return {
        "claude": f'claude mcp add --transport http jupyter {url} --header "Authorization: {header}"',
        "codex": f'[mcp_servers.jupyter]\nurl = "{url}"\nhttp_headers = {{ Authorization = "{header}" }}',
        "cursor": _json({"mcpServers": {"jupyter": {"url": url, "headers": {"Authorization": header}}}}),
        "vscode": _json(
            {"servers": {"jupyter": {"type": "http", "url": url, "headers": {"Authorization": header}}}}
        ),
        "json": _json(
            {"mcpServers": {"jupyter": {"type": "http", "url": url, "headers": {"Authorization": header}}}}
        ),
    }


def _json(value: object) -> str:
    return json.dumps(value, indent=2)
