"""A request to /mcp without credentials is answered 401 on a connection that stays open, as HTTP/1.1
keep-alive promises: a host reuses it for its next request (the OAuth discovery that the 401 points
to). Dropped without a ``Connection: close``, the host's next request fails on a dead connection
(Codex CLI: "OAuth metadata discovery failed ... error sending request")."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import pytest


async def answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    """The status and headers of the next HTTP/1.1 response on ``reader`` (its body read past)."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
    await reader.readexactly(int(headers.get("content-length", "0")))
    return int(head[0].split()[1]), headers


@pytest.mark.parametrize(
    "request_line",
    [
        "GET {path}mcp HTTP/1.1",
        "POST {path}mcp HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2",
    ],
    ids=["GET", "POST"],
)
async def test_the_401_leaves_the_connection_open_for_the_discovery_it_points_to(server_url, request_line):
    where = urlsplit(server_url)
    reader, writer = await asyncio.open_connection(where.hostname, where.port)
    try:
        host = f"Host: {where.netloc}\r\n"
        first = request_line.format(path=where.path)
        body = "{}" if first.startswith("POST") else ""
        writer.write(f"{first}\r\n{host}\r\n{body}".encode())
        status, headers = await answer(reader)
        assert status == 401 and "resource_metadata" in headers["www-authenticate"]
        assert headers.get("connection", "").lower() != "close"
        writer.write(
            f"GET /.well-known/oauth-protected-resource{where.path}mcp HTTP/1.1\r\n{host}\r\n".encode()
        )
        status, _ = await answer(reader)  # on the same connection: it is still open
        assert status == 200
    finally:
        writer.close()
