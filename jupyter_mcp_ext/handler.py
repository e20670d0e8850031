"""The ``<base_url>/mcp`` route: Jupyter authenticates the request, then the transport serves it."""

from __future__ import annotations

from typing import Any

from jupyter_server.base.handlers import APIHandler
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from tornado import web

from .transport import MCPTransport

JUPYTER_HANDLER_KEY = "jupyter_mcp_ext.handler"
"""ASGI scope key under which tools find the Tornado handler (for the authorizer) of their request."""


class MCPHandler(APIHandler):
    """Streamable HTTP endpoint. Every method needs a Jupyter identity: no login redirect, a 403.

    Jupyter's own checks run first: the Host check (DNS rebinding), the Origin check, and XSRF for
    cookie-authenticated POSTs (a token in the Authorization header is exempt, as in all of Jupyter).
    """

    # Checked per tool with the authorizer; being authenticated is what the route itself needs.
    auth_resource = "contents"

    def initialize(self, transport: MCPTransport) -> None:
        self.transport = transport

    async def _serve(self) -> None:
        user = self.current_user
        # The SDK binds each MCP session to the identity that opened it: another user presenting
        # the session id gets 404, as if it did not exist.
        principal = AuthenticatedUser(AccessToken(token="", client_id=user.username, scopes=[]))
        extra: dict[str, Any] = {"user": principal, JUPYTER_HANDLER_KEY: self}
        self.update_api_activity()
        await self.transport.serve(self, extra)

    @web.authenticated
    async def post(self) -> None:
        await self._serve()

    @web.authenticated
    async def get(self) -> None:
        await self._serve()

    @web.authenticated
    async def delete(self) -> None:
        await self._serve()
