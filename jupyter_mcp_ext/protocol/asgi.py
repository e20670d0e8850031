"""The ASGI scope of a Tornado request: how the SDK's Starlette apps see a request Tornado received."""

from __future__ import annotations

from typing import Any

from tornado.httputil import HTTPServerRequest


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
