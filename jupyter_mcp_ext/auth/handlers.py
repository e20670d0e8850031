"""The OAuth routes as Tornado handlers: discovery, the SDK's authorize/token/register/revoke, consent.

Discovery must work under any ``base_url`` and behind JupyterHub, where only ``<base_url>...``
reaches this server. So the issuer has a path (``<base_url>oauth``): of the URLs an MCP client tries
for an issuer with a path, ``<issuer>/.well-known/openid-configuration`` reaches the server there,
and the 401 at ``/mcp`` names the resource metadata's URL inside the prefix. The RFC locations at
the host root are served too, for a server that owns its host.

The protocol endpoints are the SDK's own Starlette handlers, run through ``asgi.serve``; they are
not cookie-authenticated (an agent host calls them), so they skip XSRF and answer any origin. The
consent page is the one place a person acts: behind Jupyter's login, XSRF-checked, never framed.
What a browser opens (authorize, consent) answers refusals with pages (``refusals``); the rest, read
by programs, with JSON.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import RevocationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import ClientAuthenticator
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.responses import Response
from tornado import web

from . import consent, pages, provider, refusals, resource
from .asgi import serve
from .principal import permissions_of
from .provider import AgentAuthorizationServer, ClientRefused, is_loopback
from .tokens import POLICIES

MAX_BODY = 16 * 1024  # an OAuth request's form or registration JSON is small; more is refused unread


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def origin(handler: web.RequestHandler) -> str:
    return f"{handler.request.protocol}://{handler.request.host}"


def issuer(handler: Any) -> str:
    return origin(handler) + url_path_join(handler.base_url, "oauth")


def resource_metadata_url(handler: Any) -> str:
    """Where a client finds the protected resource metadata: inside this server's prefix."""
    return origin(handler) + url_path_join(handler.base_url, ".well-known", "oauth-protected-resource", "mcp")


class OAuthEndpoint(JupyterHandler):
    """An endpoint an agent host calls without Jupyter credentials: only the Host check of Jupyter's."""

    def initialize(self, server: AgentAuthorizationServer) -> None:
        self.server = server

    def check_xsrf_cookie(self) -> None:
        return  # nothing here trusts a cookie

    async def prepare(self) -> None:  # type: ignore[override]  # a coroutine, as Tornado allows; its stub says Awaitable | None
        if not self.check_host():
            raise web.HTTPError(403)
        declared = self.request.headers.get("Content-Length", "0")
        if not declared.isdigit() or int(declared) > MAX_BODY or len(self.request.body) > MAX_BODY:
            raise web.HTTPError(413, f"An OAuth request body may be at most {MAX_BODY} bytes.")
        self.set_header("Access-Control-Allow-Origin", "*")  # browser-based hosts (the MCP Inspector)
        resource.begin(
            origin(self) + url_path_join(self.base_url, "mcp"), self.get_argument("resource", None)
        )
        self.set_header("Cache-Control", "no-store")

    def options(self, *args: Any) -> None:
        self.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
        self.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, mcp-protocol-version")
        self.set_status(204)
        self.finish()

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """A page where a person's browser asked (by path: ``pages.PERSON_PATHS``), else JSON."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if pages.shown_to_a_person(self):
            self.current_user = None  # nothing here reads a login; the page shows no one's
            self.finish(refusals.page(self, status_code, exc))
            return
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        message = refusals.said(exc) or "request refused"
        error = getattr(exc, "error", "invalid_request")
        self.finish(json.dumps({"error": error, "error_description": message}))

    def before_answer(self, response: Response) -> None:
        """The SDK's refusal that it could not redirect (JSON) becomes a page where a person sees it."""
        if response.status_code >= 400 and pages.shown_to_a_person(self):
            raise refusals.from_sdk(response.status_code, bytes(response.body))


class AuthorizationServerMetadata(OAuthEndpoint):
    """RFC 8414 (and the OpenID-style path): where to authorize, get tokens, register, revoke."""

    def get(self, *args: Any) -> None:
        metadata = build_metadata(
            AnyHttpUrl(issuer(self)),
            None,
            ClientRegistrationOptions(enabled=True),
            RevocationOptions(enabled=True),
        )
        metadata.client_id_metadata_document_supported = self.server.documents.mode != "off" or None
        data = metadata.model_dump(mode="json", exclude_none=True)
        methods = ["client_secret_post", "client_secret_basic", "none"]  # "none": a public client's id alone
        data["token_endpoint_auth_methods_supported"] = data["revocation_endpoint_auth_methods_supported"] = (
            methods
        )
        # Behind a Hub only <issuer>/.well-known/openid-configuration reaches us, and the TypeScript
        # SDK reads that as OpenID discovery, which must name these (no ID token is ever issued:
        # no "openid" scope, and the key set is empty).
        data["jwks_uri"] = issuer(self) + "/jwks"
        data["subject_types_supported"] = ["public"]
        data["id_token_signing_alg_values_supported"] = ["RS256"]
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data))


class Keys(OAuthEndpoint):
    """The key set OpenID discovery must name: empty, since nothing here is signed."""

    def get(self) -> None:
        self.set_header("Content-Type", "application/jwk-set+json")
        self.finish(json.dumps({"keys": []}))


class ProtectedResource(OAuthEndpoint):
    """RFC 9728: this server's /mcp is protected by its own authorization server."""

    def get(self, *args: Any) -> None:
        metadata = ProtectedResourceMetadata(
            resource=AnyHttpUrl(origin(self) + url_path_join(self.base_url, "mcp")),
            authorization_servers=[AnyHttpUrl(issuer(self))],
            resource_name="Jupyter (MCP)",
        )
        self.set_header("Content-Type", "application/json")
        self.finish(metadata.model_dump_json(exclude_none=True))


class Authorize(OAuthEndpoint):
    """The SDK's authorize endpoint, once this server has found the client and checked where its
    answer goes. Until both hold, an error is shown here and never redirected; and, no person having
    been asked yet, the SDK's error answers go only to a loopback redirect URI (the agent host's own
    listener): a redirect elsewhere would lend this server's address to whoever registered it."""

    async def get(self) -> None:
        await self._authorize(self.request.query_arguments)

    async def post(self) -> None:
        await self._authorize(self.request.body_arguments)

    async def _authorize(self, args: dict[str, list[bytes]]) -> None:
        def arg(name: str) -> str | None:
            values = args.get(name)
            return values[0].decode("utf-8", "replace") if values else None

        repeated = sorted(name for name, values in args.items() if len(values) > 1)
        if repeated:  # RFC 6749 3.1; and the SDK would read the last where this reads the first
            raise web.HTTPError(400, f"Give each parameter once; repeated: {', '.join(repeated)[:200]}.")
        where = provider.source.set(self.request.remote_ip or "")
        try:
            try:
                client = await self.server.resolve_client(arg("client_id") or "", arg("redirect_uri"))
            except ClientRefused as e:
                raise refusals.Refused(400, e.kind, str(e)) from None
            resolved = self.server.resolved(client)
            try:
                await serve(self, self._answer)
            finally:
                resolved.var.reset(resolved)
        finally:
            provider.source.reset(where)

    async def _answer(self, request: Any) -> Any:
        response = await AuthorizationHandler(self.server).handle(request)
        location = response.headers.get("location", "")
        answered = response.status_code == 302 and not location.startswith(self.server.consent_url)
        if answered and not is_loopback(location):
            why = query_of(location).get("error_description") or "the request is not valid"
            raise web.HTTPError(400, f"The agent's sign-in request was refused: {why}")
        return response


class Token(OAuthEndpoint):
    async def post(self) -> None:
        await serve(self, TokenHandler(self.server, ClientAuthenticator(self.server)).handle)


class Register(OAuthEndpoint):
    async def post(self) -> None:
        options = ClientRegistrationOptions(enabled=True)
        where = provider.source.set(self.request.remote_ip or "")  # registrations are bounded per source
        try:
            await serve(self, RegistrationHandler(self.server, options=options).handle)
        finally:
            provider.source.reset(where)


class Revoke(OAuthEndpoint):
    async def post(self) -> None:
        # mcp 2.3's RevocationRequest requires a client_secret field even of a public client (RFC 7009
        # has none); an empty one is what such a client means, and ClientAuthenticator ignores it.
        if b"client_secret=" not in self.request.body:
            self.request.body += b"&client_secret="
        await serve(self, RevocationHandler(self.server, ClientAuthenticator(self.server)).handle)


class Consent(JupyterHandler):
    """The person's Allow / Deny, behind Jupyter's login; the only place a code is made."""

    def initialize(self, server: AgentAuthorizationServer) -> None:
        self.server = server

    @property
    def content_security_policy(self) -> str:
        return pages.CSP

    def set_default_headers(self) -> None:
        super().set_default_headers()
        self.set_header("X-Frame-Options", "DENY")
        self.set_header("Cache-Control", "no-store")
        self.set_header("Referrer-Policy", "same-origin")  # "no-referrer" makes the form's Origin null

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.finish(refusals.page(self, status_code, kwargs.get("exc_info", (None, None, None))[1]))

    @web.authenticated
    def get(self) -> None:
        found = self.server.peek_consent(self.get_query_argument("request", ""))
        if found is None:
            raise refusals.Refused(400, "expired", "This consent request is unknown or expired.")
        held = self.server.store.held_by(found.client.client_id or "", self._username())
        self.finish(consent.page(self, found, held))

    @web.authenticated
    async def post(self) -> None:
        # Jupyter checked _xsrf before we got here (a cookie-authenticated POST).
        found = self.server.take_consent(self.get_body_argument("request", ""))
        if found is None:
            raise refusals.Refused(
                400, "expired", "This consent request is unknown, expired or answered already."
            )
        if self.get_body_argument("decision", "") != "allow":
            self.redirect(self.server.deny(found))
            return
        policy = self.get_body_argument("policy", "")
        if policy not in POLICIES:
            raise refusals.Refused(400, "request", f"policy must be one of {', '.join(POLICIES)}.")
        name = self._username()
        display = getattr(self.current_user, "display_name", "") or name
        permissions = await permissions_of(self, self.server.store.checked)
        self.redirect(self.server.grant(found, name, display, policy, permissions))

    def _username(self) -> str:
        return getattr(self.current_user, "username", "") or "anonymous"


class MCPIssuerMetadata(AuthorizationServerMetadata):
    """The same server's metadata (its endpoints under ``<base_url>oauth``) for a client that took
    the MCP URL for the issuer, having found no resource metadata: RFC 8414 wants the issuer named
    as the one the client derived the document's URL from."""

    def finish(self, chunk: Any = None) -> Any:
        if isinstance(chunk, str) and self.get_status() == 200:
            data = json.loads(chunk)
            data["issuer"] = origin(self) + url_path_join(self.base_url, "mcp")
            chunk = json.dumps(data)
        return super().finish(chunk)


def routes(
    base_url: str, server: AgentAuthorizationServer
) -> list[tuple[str, type[web.RequestHandler], dict[str, Any]]]:
    """Every OAuth route; register them before any catch-all for ``/.well-known``."""
    oauth = url_path_join(base_url, "oauth")
    mcp = url_path_join(base_url, "mcp")
    as_meta = r"/\.well-known/(?:oauth-authorization-server|openid-configuration)"
    table: list[tuple[str, type[web.RequestHandler]]] = [
        (oauth + as_meta, AuthorizationServerMetadata),
        (as_meta + oauth, AuthorizationServerMetadata),
        (url_path_join(base_url, r"\.well-known/oauth-protected-resource") + r"(?:/mcp)?", ProtectedResource),
        (r"/\.well-known/oauth-protected-resource" + mcp, ProtectedResource),
        (oauth + "/authorize", Authorize),
        (oauth + "/token", Token),
        (oauth + "/register", Register),
        (oauth + "/revoke", Revoke),
        (oauth + "/jwks", Keys),
        # Discovery from the MCP URL itself, inside the prefix (what a Hub's proxy sends here).
        (mcp + r"/\.well-known/oauth-protected-resource", ProtectedResource),
        (mcp + as_meta, MCPIssuerMetadata),
        (as_meta + mcp, MCPIssuerMetadata),
    ]
    found: list[tuple[str, type[web.RequestHandler], dict[str, Any]]] = [
        (p, h, {"server": server}) for p, h in table
    ]
    found.append((oauth + "/consent", Consent, {"server": server}))
    return found
