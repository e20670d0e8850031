"""A JupyterHub service that answers OAuth discovery at the host root for every user's server.

Behind a Hub the proxy sends only ``/user/<name>/...`` to a user's server; the host-root
``/.well-known/...`` paths that agent hosts ask first (RFC 9728 and RFC 8414 put the well-known part
before the resource's or issuer's path) reach the Hub, which knows nothing of them. This service,
given those paths by a proxy route, sends each one to the same document inside the server's prefix:

    /.well-known/<kind><base_url>user/<name>/<path>  ->  307  <base_url>user/<name>/<path>/.well-known/<kind>

where the server itself answers (``auth/handlers.py``), so the document's ``resource`` or ``issuer``
is the URL the client started from. It holds no state and calls no Hub API. Enable it in
``jupyterhub_config.py`` with ``hub_config(port)``'s two settings (a managed service and the proxy
routes); it runs as ``python -m jupyter_mcp_ext.auth.hub_discovery``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
from typing import Any
from urllib.parse import urlsplit

from tornado import web

KINDS = ("oauth-protected-resource", "oauth-authorization-server", "openid-configuration")
SERVICE_NAME = "mcp-discovery"
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9._~%!$&'()*+,;=:@/-]*$")  # percent-encoded, no '\', '?' or '#'


def target(kind: str, path: str, users_prefix: str) -> str | None:
    """Where the document for ``path`` (still percent-encoded) lives, or None if not a user's server's."""
    path = path.rstrip("/")
    segments = path.split("/")[1:]
    if not _SAFE_PATH.match(path) or not path.startswith(users_prefix) or len(path) <= len(users_prefix):
        return None
    if any(s in ("", ".", "..") or s.lower() in ("%2e", "%2e%2e", ".%2e", "%2e.") for s in segments):
        return None  # no '//' (a protocol-relative Location) and no dot segments
    return f"{path}/.well-known/{kind}"


class WellKnown(web.RequestHandler):
    """``/.well-known/<kind>/user/<name>/...``: redirect into the user's server; else a JSON 404."""

    def initialize(self, users_prefix: str) -> None:
        self.users_prefix = users_prefix

    def set_default_headers(self) -> None:
        self.set_header("Access-Control-Allow-Origin", "*")  # browser-based hosts (the MCP Inspector)
        self.set_header("Cache-Control", "no-store")

    def options(self, kind: str) -> None:
        self.set_header("Access-Control-Allow-Methods", "GET, OPTIONS")
        self.set_header("Access-Control-Allow-Headers", "mcp-protocol-version")
        self.set_status(204)
        self.finish()

    def get(self, kind: str) -> None:
        # The path as sent (percent-encoded): what follows "/.well-known/<kind>".
        path = self.request.path[len(f"/.well-known/{kind}") :]
        found = target(kind, path, self.users_prefix) if path else None
        if found is None:
            self.set_status(404)
            self.set_header("Content-Type", "application/json")
            where = f"{self.users_prefix}<name>/mcp"
            self.finish(
                json.dumps(
                    {
                        "error": "not_found",
                        "error_description": f"This JupyterHub serves OAuth discovery for each user's "
                        f"server only: ask /.well-known/{kind}{where} for the server at {where}.",
                    }
                )
            )
            return
        self.redirect(found, status=307)


class About(web.RequestHandler):
    """The service's own page under ``/services/<name>/``: what it is, for an admin checking it runs."""

    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(
            json.dumps({"service": SERVICE_NAME, "answers": [f"/.well-known/{k}/..." for k in KINDS]})
        )


def make_app(hub_base_url: str = "/", service_prefix: str = "") -> web.Application:
    users_prefix = hub_base_url.rstrip("/") + "/user/"
    kinds = "|".join(re.escape(k) for k in KINDS)
    handlers: list[Any] = [(rf"/\.well-known/({kinds})(?:/.*)?", WellKnown, {"users_prefix": users_prefix})]
    if service_prefix:
        handlers.append((re.escape(service_prefix.rstrip("/")) + "/?", About))
    return web.Application(handlers)


def hub_config(port: int, ip: str = "127.0.0.1", python: str = sys.executable) -> dict[str, Any]:
    """The two ``jupyterhub_config.py`` settings that enable the service on ``ip:port``."""
    url = f"http://{ip}:{port}"
    return {
        "JupyterHub.services": [
            {
                "name": SERVICE_NAME,
                "url": url,
                "command": [python, "-m", "jupyter_mcp_ext.auth.hub_discovery"],
                "display": False,
            }
        ],
        # These three only: the rest of /.well-known/ (an ACME challenge, say) stays where it went.
        "Proxy.extra_routes": {f"/.well-known/{kind}/": url for kind in KINDS},
    }


async def _serve(ip: str, port: int) -> None:
    app = make_app(
        os.environ.get("JUPYTERHUB_BASE_URL", "/"), os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "")
    )
    app.listen(port, ip, xheaders=True)
    print(f"{SERVICE_NAME}: answering /.well-known/... for users' servers at http://{ip}:{port}", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    """Listen where the Hub says (``$JUPYTERHUB_SERVICE_URL``) or where ``--ip``/``--port`` say."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    service = urlsplit(os.environ.get("JUPYTERHUB_SERVICE_URL", ""))
    parser.add_argument("--ip", default=service.hostname or "127.0.0.1")
    parser.add_argument("--port", type=int, default=service.port or 10101)
    args = parser.parse_args(argv)
    asyncio.run(_serve(args.ip, args.port))


if __name__ == "__main__":
    main()
