"""Run one of the SDK's Starlette request handlers for a Tornado request (the OAuth endpoints).

The request's body is already read (small: the caller bounds it); the handler's Response is an
ASGI app whose messages are written back to the Tornado handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from tornado import web

Message = MutableMapping[str, Any]


async def serve(handler: web.RequestHandler, endpoint: Callable[[Request], Awaitable[Response]]) -> None:
    request = handler.request
    host, _, port = request.host.partition(":")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.protocol,
        "path": request.path,
        "raw_path": request.path.encode("latin-1"),
        "query_string": request.query.encode("latin-1"),
        "root_path": "",
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.get_all()],
        "client": (request.remote_ip, 0),
        "server": (host, int(port) if port.isdigit() else None),
    }
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": request.body or b"", "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            handler.set_status(message["status"])
            for name, value in message.get("headers", []):
                if name.lower() != b"content-length":
                    handler.set_header(name.decode("latin-1"), value.decode("latin-1"))
        elif message["type"] == "http.response.body":
            handler.write(message.get("body", b""))

    response = await endpoint(Request(scope, receive))
    await response(scope, receive, send)
    handler.finish()
