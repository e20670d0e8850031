"""The OAuth 2.1 authorization server's state, behind the MCP SDK's own OAuth handlers.

The SDK (``mcp.server.auth.handlers``) parses and checks every request: client authentication,
registered redirect URIs, PKCE S256 (a missing challenge, ``plain`` or a wrong verifier is refused),
code expiry, redirect_uri unchanged between authorize and token, refresh scopes. This provider
(its ``OAuthAuthorizationServerProvider`` protocol) finds clients (registered ones persisted with
the credentials, documented ones fetched, unverified ones on loopback) and keeps codes (in memory,
single use, 60 s) and tokens (``TokenStore``: hashed); a consent waiting for the person is carried
signed in its own URL (``consent_requests``). What a person consents to becomes a ``Credential``.

The authorize handler resolves the client and checks its redirect URI first (``resolve_client``),
so that nothing before that is ever redirected; the SDK's handler then finds that client here.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from .budgets import PerSource
from .client_documents import ClientDocumentError, ClientDocuments, is_document_id
from .consent_requests import Consent, ConsentRequests
from .redirect_uris import AgentClient, UnverifiedClient, is_loopback, normalise, normalise_all
from .tokens import TokenStore

__all__ = ["AgentAuthorizationServer", "ClientRefused", "Consent", "is_loopback", "source"]

CODE_LIFETIME = 60.0  # seconds an authorization code may wait for its exchange
CONSENT_LIFETIME = 600.0  # seconds a consent page may wait for the person (a login in between)
SPENT_CODE_WINDOW = 600.0  # seconds a used code, replayed by its own client, still revokes what it made
MAX_SPENT_CODES = 1000
MAX_CLIENTS = 200  # registered clients kept; past it the oldest never used are dropped
REGISTRATIONS_PER_MINUTE = 20  # from one source (address)
MAX_NAME_CHARS = 100
MAX_STATE_CHARS = 1000

# The address a request came from (Tornado's ``remote_ip``), set by the handler for the SDK's calls.
source: ContextVar[str] = ContextVar("source", default="")
# The client the authorize handler resolved for this request (fetched, unverified or registered).
_resolved: ContextVar[OAuthClientInformationFull | None] = ContextVar("resolved", default=None)


class ClientRefused(Exception):
    """Why an authorize request's client or redirect URI is refused: shown, never redirected."""


@dataclass
class Code:
    code: AuthorizationCode
    user: str
    user_display: str
    policy: str
    permissions: list[str]
    client: OAuthClientInformationFull
    name_verified: bool


@dataclass
class Spent:
    credential: str  # Credential.id the code made
    client_id: str
    at: float


class AgentAuthorizationServer:
    """``OAuthAuthorizationServerProvider`` for agents of this server; ``consent_url`` is the page."""

    def __init__(
        self,
        store: TokenStore,
        consent_url: str,
        *,
        access_lifetime: float = 3600.0,
        refresh_lifetime: float = 30 * 24 * 3600.0,
        documents: str = "https",
    ):
        self.store = store
        self.consent_url = consent_url  # a path, under base_url
        self.access_lifetime = access_lifetime
        self.refresh_lifetime = refresh_lifetime
        self.requests = ConsentRequests(CONSENT_LIFETIME)
        self._codes: dict[str, Code] = {}
        self._loaded: dict[str, Code] = {}  # codes the token endpoint took, for the exchange that follows
        self._spent_codes: dict[str, Spent] = {}  # replayed by its client in time: revokes what it made
        self._registrations = PerSource(REGISTRATIONS_PER_MINUTE)
        self._registered_by: dict[str, str] = {}  # client_id -> source, for this process's registrations
        self.resource_path = store.resource  # <base_url>mcp: what ``resource`` must name
        self.documents = ClientDocuments(documents)

    # -- clients (RFC 7591, and client ID metadata documents) -------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        resolved = _resolved.get()
        if resolved is not None and resolved.client_id == client_id:
            return resolved  # the authorize handler's (resolve_client)
        if is_document_id(client_id):  # never fetched here: the token endpoint needs no document
            for held in (*self._codes.values(), *self._loaded.values()):
                if held.client.client_id == client_id:  # the client the person allowed, for its exchange
                    return held.client.model_copy(update={"token_endpoint_auth_method": "none"})
            known = self.documents.cached(client_id)
            if known is not None:
                return known
            if any(c.client_id == client_id for c in self.store.credentials.values()):
                # Refresh and revoke: the credential is what counts, the document was read at consent.
                return AgentClient(client_id=client_id, redirect_uris=None, token_endpoint_auth_method="none")
            return None
        data = self.store.clients.get(client_id)
        return AgentClient.model_validate(data) if data is not None else None

    async def resolve_client(self, client_id: str, redirect_uri: str | None) -> OAuthClientInformationFull:
        """The client of an authorize request, its redirect URI checked; ClientRefused says why not.

        A client ID URL whose document cannot be fetched (a lab without internet) goes on as an
        unverified client, as a dynamically registered one does, if its answer goes to this computer.
        """
        if not client_id:
            raise ClientRefused("The sign-in request has no client_id; start it again from the agent.")
        wanted = None
        if redirect_uri is not None:
            try:
                wanted = normalise(redirect_uri)
            except ValueError as e:
                raise ClientRefused(str(e)) from None
        client: OAuthClientInformationFull | None
        if is_document_id(client_id):
            try:
                client = await self.documents.get(client_id, source.get())
            except ClientDocumentError as e:
                if not e.unreachable:
                    raise ClientRefused(str(e)) from None
                if wanted is None or not is_loopback(wanted):
                    host = urlsplit(client_id).hostname
                    raise ClientRefused(
                        f"{e} Without its document this server cannot check the client, so it may only "
                        "sign in with a redirect_uri on this computer (http://127.0.0.1:<port>/..., "
                        f"http://localhost:<port>/...). Let this server reach {host}, or set "
                        "c.MCPExtensionApp.oauth_client_documents = 'off' so that agents register."
                    ) from None
                claimed = client_id.split("://", 1)[1][:MAX_NAME_CHARS]
                client = UnverifiedClient(
                    client_id=client_id,
                    client_name=claimed,
                    redirect_uris=[AnyUrl(wanted)],
                    token_endpoint_auth_method="none",
                )
        else:
            client = await self.get_client(client_id)
            if client is None:
                raise ClientRefused(
                    f"No agent client {client_id[:80]!r} is registered here (or it was forgotten); "
                    "start the sign-in again from the agent so that it registers."
                )
        if not isinstance(client, AgentClient):
            raise ClientRefused(f"Client {client_id[:80]!r} cannot be checked here.")
        try:
            client.validate_redirect_uri(AnyUrl(wanted) if wanted is not None else None)
        except InvalidRedirectUriError as e:
            raise ClientRefused(f"{e.message}; start the sign-in again from the agent.") from None
        return client

    @staticmethod
    def resolved(client: OAuthClientInformationFull) -> Any:
        """Hands the resolved client to the SDK's authorize handler in this request (a ContextVar token)."""
        return _resolved.set(client)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        try:
            uris = normalise_all([str(u) for u in client_info.redirect_uris or []])
        except ValueError as e:
            raise RegistrationError("invalid_redirect_uri", str(e)) from None
        if client_info.client_name and len(client_info.client_name) > MAX_NAME_CHARS:
            raise RegistrationError(
                "invalid_client_metadata", f"client_name is longer than {MAX_NAME_CHARS} chars."
            )
        where = source.get()
        if not self._registrations.spend(where):
            raise RegistrationError(
                "invalid_client_metadata", "Too many registrations from your address; try again in a minute."
            )
        client_info.redirect_uris = [AnyUrl(u) for u in uris]
        for name in ("client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri"):
            setattr(client_info, name, None)  # shown nowhere, fetched never: not kept
        self._make_room()
        client_id = client_info.client_id or ""
        self._registered_by[client_id] = where
        self.store.clients[client_id] = client_info.model_dump(mode="json", exclude_none=True)
        self.store.save()

    def _make_room(self) -> None:
        """Past MAX_CLIENTS, forget clients no credential uses: first those of the source that
        registered most of them, oldest first (a flood forgets itself, not the others)."""
        if len(self.store.clients) < MAX_CLIENTS:
            return
        used = {c.client_id for c in self.store.credentials.values()}
        idle = [cid for cid in self.store.clients if cid not in used]
        by_source = Counter(self._registered_by.get(cid, "") for cid in idle)
        idle.sort(
            key=lambda cid: (
                -by_source[self._registered_by.get(cid, "")],
                self.store.clients[cid].get("client_id_issued_at", 0),
            )
        )
        for cid in idle[: len(self.store.clients) - MAX_CLIENTS + 1]:
            del self.store.clients[cid]
            self._registered_by.pop(cid, None)
        if len(self.store.clients) >= MAX_CLIENTS:
            raise RegistrationError(
                "invalid_client_metadata", "This server has too many agent clients registered."
            )

    # -- authorize: hand over to the person -------------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """The consent page's URL, carrying the request signed: nothing is stored until a person answers."""
        if params.resource is not None and urlsplit(params.resource).path.rstrip("/") != self.resource_path:
            raise AuthorizeError(
                "invalid_request", f"resource must be this server's MCP endpoint ({self.resource_path})."
            )
        if len(params.state or "") > MAX_STATE_CHARS:  # it rides in the consent URL
            raise AuthorizeError("invalid_request", f"state is longer than {MAX_STATE_CHARS} characters.")
        if isinstance(client, UnverifiedClient):
            status = "unverified"
        else:
            status = "verified" if is_document_id(client.client_id or "") else ""
        return f"{self.consent_url}?request={self.requests.sign(client, params, status)}"

    def take_consent(self, consent_id: str) -> Consent | None:
        """The waiting consent, once (a second submit of the same page gets nothing)."""
        return self.requests.answer(consent_id)

    def peek_consent(self, consent_id: str) -> Consent | None:
        return self.requests.read(consent_id)

    def grant(
        self, consent: Consent, user: str, user_display: str, policy: str, permissions: list[str]
    ) -> str:
        """The person allowed: where the browser goes, with a fresh single-use code."""
        code = secrets.token_urlsafe(32)
        now = time.time()
        self._codes = {k: c for k, c in self._codes.items() if c.code.expires_at > now}
        self._loaded = {k: c for k, c in self._loaded.items() if c.code.expires_at > now}
        self._codes[code] = Code(
            AuthorizationCode(
                code=code,
                scopes=consent.params.scopes or [],
                expires_at=time.time() + CODE_LIFETIME,
                client_id=consent.client.client_id or "",
                code_challenge=consent.params.code_challenge,
                redirect_uri=consent.params.redirect_uri,
                redirect_uri_provided_explicitly=consent.params.redirect_uri_provided_explicitly,
                resource=consent.params.resource,
                subject=user,
            ),
            user,
            user_display,
            policy,
            permissions,
            consent.client,
            consent.document_status == "verified",
        )
        return construct_redirect_uri(str(consent.params.redirect_uri), code=code, state=consent.params.state)

    @staticmethod
    def deny(consent: Consent) -> str:
        return construct_redirect_uri(
            str(consent.params.redirect_uri),
            error="access_denied",
            error_description="The person did not allow this agent.",
            state=consent.params.state,
        )

    # -- token endpoint ---------------------------------------------------------------------

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, code: str
    ) -> AuthorizationCode | None:
        # Taken out on first sight: a wrong code_verifier or redirect_uri burns the code too.
        found = self._codes.pop(code, None)
        if found is None:
            spent = self._spent_codes.get(code)
            if spent and spent.client_id == client.client_id and time.time() - spent.at < SPENT_CODE_WINDOW:
                # Its own client presents a used code again: someone else holds a copy of it, and of
                # what it made; that is revoked. Another client, or much later, proves nothing.
                self.store.revoke(spent.credential)
            return None
        if found.code.client_id != client.client_id:
            return None
        self._loaded[code] = found
        return found.code

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        found = self._loaded.pop(authorization_code.code, None)
        if found is None:
            raise TokenError("invalid_grant", "authorization code was used already")
        name = (
            found.client.client_name
            or urlsplit(str(authorization_code.redirect_uri)).hostname
            or "OAuth client"
        )
        credential = self.store.create(
            name,
            found.user,
            found.policy,
            user_display=found.user_display,
            client=name,
            client_id=client.client_id,
            permissions=found.permissions,
            name_verified=found.name_verified,
        )
        now = time.time()
        self._spent_codes = {k: s for k, s in self._spent_codes.items() if now - s.at < SPENT_CODE_WINDOW}
        self._spent_codes[authorization_code.code] = Spent(credential.id, client.client_id or "", now)
        if len(self._spent_codes) > MAX_SPENT_CODES:
            self._spent_codes.pop(next(iter(self._spent_codes)))
        return self._tokens(credential, secrets.token_hex(8), authorization_code.scopes)

    def _tokens(self, credential: Any, family: str, scopes: list[str]) -> OAuthToken:
        access = self.store.issue(credential, "access", self.access_lifetime, family)
        refresh = self.store.issue(credential, "refresh", self.refresh_lifetime, family)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=int(self.access_lifetime),
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        credential = self.store.peek_refresh(refresh_token)
        if credential is None or credential.client_id != client.client_id:
            return None
        return RefreshToken(token=refresh_token, client_id=client.client_id or "", scopes=[])

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        spent = self.store.rotate(refresh_token.token)
        if spent is None:
            raise TokenError("invalid_grant", "refresh token is no longer valid")
        credential, family = spent
        return self._tokens(credential, family, scopes)

    async def load_access_token(self, token: str) -> AccessToken | None:
        credential = self.store.lookup(token, ("access",))
        if credential is None:
            return None
        return AccessToken(token=token, client_id=credential.client_id or "", scopes=[])

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.store.revoke_token(token.token)
