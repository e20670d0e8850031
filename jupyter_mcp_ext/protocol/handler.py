"""The ``<base_url>/mcp`` route: Jupyter authenticates the request, then the transport serves it.

Also the OAuth discovery routes: a server without OAuth answers them with a quiet 404.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable
from http.client import responses
from typing import Any

from jupyter_server.auth.authorizer import Authorizer
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from tornado import web

from ..auth.handlers import resource_metadata_url
from ..auth.principal import AgentUser, CredentialAuthorizer, agent_token, authenticate
from ..auth.tokens import TokenStore
from ..loop.gate import LoopGate
from ..tools.authz import JUPYTER_HANDLER_KEY
from .transport import MCPTransport

NO_TOKEN = (
    "This MCP endpoint needs an agent token, sent as 'Authorization: Bearer <token>': the person mints "
    "one with `jupyter mcp token create --name <agent>` (or in the MCP panel)."
)
NO_CREDENTIALS = (
    "This MCP endpoint needs authorization. An agent host with MCP's OAuth signs in from this URL (the "
    "person allows it in JupyterLab); a script sends 'Authorization: Bearer <token>' with a token from "
    "`jupyter mcp token create --name <agent>`."
)
BAD_TOKEN = (
    "The token sent was not accepted by this server. Sign in again from this URL (MCP's OAuth), or send "
    "'Authorization: Bearer <token>' with a token from `jupyter mcp token create --name <agent>`."
)
BAD_AGENT_TOKEN = (
    "This agent token is not accepted here: it was revoked, it expired, or it belongs to another server. "
    "Ask the person for a new one (`jupyter mcp token create`, or the MCP panel), or connect again."
)
PERSON_TOKEN_REFUSED = (
    "This server does not let agents use the person's own Jupyter token at /mcp "
    "(MCPExtensionApp.accept_jupyter_token is False). Use an agent token: `jupyter mcp token create "
    "--name <agent> --policy ask` prints one, sent as 'Authorization: Bearer <token>'."
)
OAUTH_DISCOVERY_ROUTES = [
    r"/\.well-known/oauth-protected-resource(/.*)?",
    r"/\.well-known/oauth-authorization-server(/.*)?",
    r"/\.well-known/openid-configuration(/.*)?",
]


DRAINED_BODY_BYTES = 64 * 1024
"""A request refused for its credentials has a body up to this size read (and dropped) first."""


def body_limit(max_file_bytes: int) -> int:
    """Largest request body: a file of ``max_file_bytes`` fits as a JSON string even if escaping doubles it."""
    return max(4 * 1024 * 1024, 2 * max_file_bytes + 1024 * 1024)


def _json_rpc_error(message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}})


@web.stream_request_body
class MCPHandler(APIHandler):
    """Streamable HTTP endpoint. Every method needs a Jupyter identity: no login redirect, a 403.

    Jupyter's own checks run first, on the headers alone: the Host check (DNS rebinding), the Origin
    check, and XSRF for cookie-authenticated POSTs (a token is exempt, as in all of Jupyter; without
    auth, so is a program's JSON POST without an ``Origin``, see ``_from_a_program``). The body
    is read only after that, and only up to ``max_body_bytes``: a refused request is answered before
    its body is read, and no body is held whole in memory unless it may be served.
    """

    # Checked per tool with the authorizer; being authenticated is what the route itself needs.
    auth_resource = "contents"

    def initialize(
        self,
        transport: MCPTransport,
        max_body_bytes: int,
        gate: LoopGate | None = None,
        tokens: TokenStore | None = None,
        accept_jupyter_token: bool = True,
        oauth: bool = False,
    ) -> None:
        self.oauth = oauth
        self.transport = transport
        self.tokens = tokens
        self.accept_jupyter_token = accept_jupyter_token
        self.gate = gate
        self._waiting: asyncio.Future[None] | None = None
        self._client_gone = False
        self.on_close: Callable[[], None] | None = None  # the transport's: the client has left
        self.max_body_bytes = max_body_bytes
        self._body = bytearray()
        self._too_large = False
        self._refusal: str | None = None  # why a request without credentials is refused
        self._refusal_status = 403

    def _execute(self, transforms: Any, *args: Any, **kwargs: Any) -> Any:
        """Tornado's own entry of a request: metered whole as MCP work.

        Private to Tornado (stable since 2012), overridden so that the gate also counts Jupyter's
        auth, the answer's write and the access log, a good part of a small call's CPU. Should it be
        renamed, those parts go unmetered; the call itself still is (``_serve``).
        """
        work = super()._execute(transforms, *args, **kwargs)
        return self.gate.metered(work) if self.gate is not None else work

    @property
    def authorizer(self) -> Authorizer:
        """An agent may do what its person could when they let it in (kept on its credential), under
        its policy; Jupyter's authorizer knows people (under JupyterHub it would ask the Hub about a
        token it never saw)."""
        if isinstance(getattr(self, "_jupyter_current_user", None), AgentUser):
            return _BY_CREDENTIAL
        return super().authorizer

    def check_xsrf_cookie(self) -> None:
        if agent_token(self.request.headers) is not None:
            return  # a bearer token is not a cookie: nothing for a cross-site page to ride on
        if not hasattr(self, "_jupyter_current_user"):
            return  # asked before prepare() identified the caller: checked again then, as Jupyter does
        if not self.identity_provider.auth_enabled and self._from_a_program():
            return
        # A request nobody authenticated is refused for its missing token (below), not for XSRF:
        # XSRF protects what a cookie authenticated, and such a request still gets the check.
        if self.current_user is not None:
            super().check_xsrf_cookie()

    def _from_a_program(self) -> bool:
        """On a server without auth, whether a request comes from a program, not a web page.

        Without auth there is no cookie, so XSRF's form token is all that keeps a page on another site
        from running code here; an agent host cannot have that token. A program's JSON POST carries no
        ``Origin``, while a browser sends one on every cross-site POST, and a page can only send JSON
        cross-site after a CORS preflight Jupyter refuses. A foreign ``Origin`` is refused outright (the
        MCP transport's defence against DNS rebinding); the page's own origin keeps the XSRF check.
        """
        origin = self.request.headers.get("Origin")
        if origin is not None:
            if not self.check_origin():
                raise web.HTTPError(
                    403,
                    f"A request to this MCP endpoint from the web page at {origin} is refused: only "
                    "programs (agent hosts) and this server's own pages may call it. To let that site "
                    "in, set ServerApp.allow_origin.",
                )
            return False
        media_type = self.request.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        return self.request.method != "POST" or media_type == "application/json"

    async def prepare(self) -> None:  # type: ignore[override]  # a coroutine, as Tornado allows; its stub says Awaitable | None
        refusal = None
        bearer = agent_token(self.request.headers)
        if bearer is not None:
            refusal = self._as_agent(bearer)
        else:
            try:
                await super().prepare()
            except web.HTTPError as err:
                if not (err.status_code == 403 and self.check_host()):
                    raise
                # No credentials, or a caller refused by XSRF or for its Origin: answered as below.
                refusal = (
                    self._credentials_problem()
                    if self.current_user is None
                    else err.log_message or "Forbidden"
                )
            if refusal is None and self.current_user is None:
                refusal = self._credentials_problem()
            if refusal is None and not self.accept_jupyter_token and self.token_authenticated:
                refusal = PERSON_TOKEN_REFUSED
        declared = self.request.headers.get("Content-Length", "")
        if not declared and "Transfer-Encoding" not in self.request.headers:
            declared = "0"  # no body (a GET): answered after its end, or Tornado drops the connection
        if refusal is not None:
            if declared.isdigit() and int(declared) <= DRAINED_BODY_BYTES:
                # A small body is read and dropped before the 403: a proxy in front (JupyterHub's)
                # that is still sending it when the connection closes answers a 503 of its own.
                self._refusal, self._too_large = refusal, True
                return
            self._refusal = refusal
            raise web.HTTPError(self._refusal_status, refusal)  # refused before any of a large body is read
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            raise web.HTTPError(413, self._too_large_message(int(declared)))

    def _as_agent(self, token: str) -> str | None:
        """Authenticate an agent token (never shown to Jupyter's identity provider); why not, if not."""
        if not self.check_host():
            self.current_user = self._jupyter_current_user = None
            raise web.HTTPError(403)
        user = authenticate(self.tokens, token) if self.tokens is not None else None
        self.current_user = self._jupyter_current_user = user
        if user is None:
            self._refusal_status = 401
            return BAD_AGENT_TOKEN
        self.set_cors_headers()
        return None

    def _credentials_problem(self) -> str:
        sent = "Authorization" in self.request.headers or "token" in self.request.query_arguments
        if sent:
            return BAD_TOKEN
        if self.oauth:  # MCP's authorization spec: a 401 naming where to start (RFC 9728)
            self._refusal_status = 401
            return NO_CREDENTIALS
        return NO_TOKEN

    def _too_large_message(self, size: int | None = None) -> str:
        got = f"{size} bytes" if size is not None else "larger than that"
        return (
            f"The request body is {got}; this server takes at most {self.max_body_bytes} bytes per request "
            "(MCPExtensionApp.max_file_bytes sets it). Send the content in smaller parts."
        )

    def data_received(self, chunk: bytes) -> None:
        if self._too_large:
            return
        if len(self._body) + len(chunk) > self.max_body_bytes:
            self._too_large, self._body = True, bytearray()  # read on, keep nothing, answer 413
            return
        self._body += chunk

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Errors as JSON-RPC errors with a message that says what to do: agent hosts show it as is."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = getattr(exc, "log_message", None) or responses.get(status_code, "Error")
        if status_code in (401, 403) and self._refusal is not None:
            message = self._refusal
            self.set_status(self._refusal_status)
            if self._refusal_status == 401:
                self.set_header("WWW-Authenticate", self._challenge())
        self.set_header("Content-Type", "application/json")
        self.finish(_json_rpc_error(message))

    def _challenge(self) -> str:
        """``WWW-Authenticate`` of a 401: where the resource metadata is, and what was wrong."""
        parts = ["Bearer"]
        if self.oauth:
            parts.append(f'resource_metadata="{resource_metadata_url(self)}"')
        if self._refusal != NO_CREDENTIALS:
            parts.append('error="invalid_token"')
        return parts[0] + " " + ", ".join(parts[1:])

    def _principal(self) -> str:
        """Who owns an MCP session (the SDK answers 404 to anyone else presenting its id), its runs
        and its tasks: an agent credential by its id, never by a name the agent chose.

        Jupyter names a token-authenticated client without a cookie jar anew on every request, so
        the token itself (hashed) identifies it; otherwise the user name does (JupyterHub, a login
        cookie). A server with authentication off has one anonymous principal.
        """
        user = self.current_user
        if isinstance(user, AgentUser):
            return "agent:" + user.credential.id
        provider = self.identity_provider
        if not provider.auth_enabled:
            return "anonymous"
        if self.token_authenticated:
            token = provider.get_token(self) or ""
            return "token:" + hashlib.sha256(token.encode()).hexdigest()[:32]
        return "user:" + self.current_user.username

    async def _serve(self) -> None:
        if self._refusal is not None:  # an identity Jupyter knows, refused here (accept_jupyter_token)
            raise web.HTTPError(self._refusal_status, self._refusal)
        if self._too_large:
            raise web.HTTPError(413, self._too_large_message())
        principal = self._principal()
        user = AuthenticatedUser(AccessToken(token="", client_id=principal, scopes=[]))
        extra: dict[str, Any] = {"user": user, JUPYTER_HANDLER_KEY: self}
        self.update_api_activity()
        body, self._body = bytes(self._body), bytearray()
        if self.gate is None:
            await self.transport.serve(self, body, principal, extra)
            return
        # Agents' calls take their turn within their share of the loop; a call whose
        # client leaves while it waits is dropped (on_connection_close).
        key = self.request.headers.get("mcp-session-id") or principal
        self._waiting = asyncio.ensure_future(self.gate.turn(key))
        try:
            await self._waiting
        except asyncio.CancelledError:
            if not self._client_gone:
                raise  # not the client leaving: the server is stopping
            return
        finally:
            self._waiting = None
        serving = self.transport.serve(self, body, principal, extra)
        await self.gate.run(key, serving, meter=False, turn=False)  # metered whole, from _execute

    def on_connection_close(self) -> None:
        # A call waiting for its turn is dropped; one being served hears it through ``on_close``
        # (Tornado keeps the bound method it saw at creation: replacing this method does nothing).
        self._client_gone = True
        if self._waiting is not None:
            self._waiting.cancel()
        if self.on_close is not None:
            self.on_close()

    @web.authenticated
    async def post(self) -> None:
        await self._serve()

    @web.authenticated
    async def get(self) -> None:
        await self._serve()

    @web.authenticated
    async def delete(self) -> None:
        await self._serve()


_BY_CREDENTIAL = CredentialAuthorizer()


class _QuietLog(logging.LoggerAdapter):
    """Jupyter logs every 4xx as a warning; a discovery probe answered as expected is routine."""

    def warning(self, msg: object, *args: Any, **kwargs: Any) -> None:
        self.debug(msg, *args, **kwargs)


class NoOAuthHandler(JupyterHandler):
    """OAuth discovery (RFC 9728, RFC 8414), which MCP clients probe: this server has no OAuth.

    A 404 is what the MCP authorization spec expects then; the client goes on with the token it was
    given. Answered here so that each connection does not log five warnings.
    """

    @property
    def log(self) -> logging.LoggerAdapter:  # type: ignore[override]  # a per-request adapter of the Logger
        return _QuietLog(super().log, {})

    def check_xsrf_cookie(self) -> None:
        return

    async def prepare(self) -> None:  # type: ignore[override]  # a coroutine, as Tornado allows; its stub says Awaitable | None
        # No authentication: it says only that there is nothing here, as a 404 from any server would.
        self.set_status(404)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": "not_found", "message": "This Jupyter server has no OAuth."}))
