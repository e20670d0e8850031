"""The ``<base_url>/mcp`` route: Jupyter authenticates the request, then the transport serves it."""

from __future__ import annotations

import hashlib
from typing import Any

from jupyter_server.base.handlers import APIHandler
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from tornado import web

from ..tools.authz import JUPYTER_HANDLER_KEY
from .transport import MCPTransport


class MCPHandler(APIHandler):
    """Streamable HTTP endpoint. Every method needs a Jupyter identity: no login redirect, a 403.

    Jupyter's own checks run first: the Host check (DNS rebinding), the Origin check, and XSRF for
    cookie-authenticated POSTs (a token in the Authorization header is exempt, as in all of Jupyter).
    """

    # Checked per tool with the authorizer; being authenticated is what the route itself needs.
    auth_resource = "contents"

    def initialize(self, transport: MCPTransport) -> None:
        self.transport = transport

    def _principal(self) -> str:
        """Who owns an MCP session: the SDK answers 404 to anyone else presenting its id.

        Jupyter names a token-authenticated client without a cookie jar anew on every request, so
        the token itself (hashed) identifies it; otherwise the user name does (JupyterHub, a login
        cookie). A server with authentication off has one anonymous principal.
        """
        provider = self.identity_provider
        if not provider.auth_enabled:
            return "anonymous"
        if self.token_authenticated:
            token = provider.get_token(self) or ""
            return "token:" + hashlib.sha256(token.encode()).hexdigest()[:32]
        return "user:" + self.current_user.username

    async def _serve(self) -> None:
        principal = AuthenticatedUser(AccessToken(token="", client_id=self._principal(), scopes=[]))
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
