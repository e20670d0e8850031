"""A real MCP client (the official SDK, Streamable HTTP) pointed at the test server's /mcp."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

HANDSHAKE = "legacy"  # initialize + Mcp-Session-Id (protocol 2025-11-25 and older)
STATELESS = "2026-07-28"  # one request per POST, no session, reached by discovery as a client does
MODES = (HANDSHAKE, STATELESS)


@asynccontextmanager
async def connect(
    server_url: str, headers: Mapping[str, str], mode: str = HANDSHAKE, **options: Any
) -> AsyncIterator[Client]:
    """``options`` go to the SDK's ``Client`` (e.g. ``client_info=Implementation(...)``)."""
    http = httpx2.AsyncClient(headers=dict(headers), timeout=httpx2.Timeout(30, read=60))
    # "auto" probes server/discover first, as a client in the field does; it must land on the 2026 form.
    client_mode = "auto" if mode == STATELESS else mode
    transport = streamable_http_client(f"{server_url}mcp", http_client=http)
    async with http, Client(transport, mode=client_mode, **options) as client:
        if mode == STATELESS:
            assert client.protocol_version == STATELESS
        yield client


def text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def call(client: Client, tool: str, **arguments: Any) -> CallToolResult:
    return await client.call_tool(tool, arguments)


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; returns its structured content."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def fails(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail as a tool error (isError, not a protocol error); returns its message."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} should have failed: {text(result)}"
    return text(result)


# For tests that speak the handshake over bare HTTP (to see status codes, headers and bodies as sent).
RAW_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
RAW_VERSION = "2025-06-18"


def raw_initialize(version: str = RAW_VERSION) -> dict[str, Any]:
    """The JSON-RPC initialize request of a handshake-era client asking for protocol ``version``."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }


RAW_INITIALIZE = raw_initialize()


async def raw_session(http: Any, url: str, version: str = RAW_VERSION) -> dict[str, str]:
    """Open a handshake-era session over bare HTTP (``http`` sends RAW_HEADERS); returns the headers
    its requests carry."""
    opened = await http.post(url, json=raw_initialize(version))
    assert opened.status_code == 200, opened.text
    return {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": version}
