"""The SDK's Starlette apps serving Tornado requests: a request's ASGI scope (``http_scope``, which the
MCP transport uses too), and one of the SDK's request handlers run for it (``serve``: the OAuth
endpoints).

Here, below the MCP edge (``protocol/``), because both the edge and the OAuth endpoints use it.

The request's body is already read (small: the caller bounds it); the handler's Response is an
ASGI app whose messages are written back to the Tornado handler, unless the Tornado handler's
``before_answer(response)`` raises (an error it answers in its own form).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from tornado import web
from tornado.httputil import HTTPServerRequest

Message = MutableMapping[str, Any]


def http_scope(request: HTTPServerRequest, **extra: Any) -> dict[str, Any]:
    host, _, port = request.host.partition(":")
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": request.version.removeprefix("HTTP/"),
        "method": request.method,
        "scheme": request.protocol,
        "path": request.path,
        "raw_path": request.path.encode("latin-1"),
        "query_string": request.query.encode("latin-1"),
        "root_path": "",
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.get_all()],
        "client": (request.remote_ip, 0),
        "server": (host, int(port) if port.isdigit() else None),
        "state": {},
        **extra,
    }


async def serve(handler: web.RequestHandler, endpoint: Callable[[Request], Awaitable[Response]]) -> None:
    request = handler.request
    scope = http_scope(request)
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
    before_answer = getattr(handler, "before_answer", None)
    if before_answer is not None:  # the handler may answer otherwise (``OAuthEndpoint``: a page)
        before_answer(response)
    await response(scope, receive, send)
    handler.finish()
