"""An agent host with MCP Apps, as far as the server can tell: the official SDK's client declaring
the extension (``io.modelcontextprotocol/ui`` with the app MIME type), as VS Code or Cursor do."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from mcp.client import Client
from mcp.client.extension import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

from .mcp_client import HANDSHAKE, connect

APPS = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})


@asynccontextmanager
async def apps_client(
    server_url: str, headers: Mapping[str, str], mode: str = HANDSHAKE
) -> AsyncIterator[Client]:
    async with connect(server_url, headers, mode, extensions=[APPS]) as client:
        yield client


def listing_bytes(tools: list[Any]) -> int:
    """``tools/list`` as the suite measures it: the tools array, compact JSON."""
    dumped = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
    return len(json.dumps(dumped, separators=(",", ":")).encode())
