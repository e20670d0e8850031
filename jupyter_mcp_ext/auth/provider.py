"""The OAuth 2.1 authorization server's state, behind the MCP SDK's own OAuth handlers.

The SDK (``mcp.server.auth.handlers``) parses and checks every request: client authentication,
registered redirect URIs, PKCE S256 (a missing challenge, ``plain`` or a wrong verifier is refused),
code expiry, redirect_uri unchanged between authorize and token, refresh scopes. This provider
(its ``OAuthAuthorizationServerProvider`` protocol) only keeps things: clients (persisted with the
credentials), consents waiting for the person, codes (in memory, single use, 60 s), and tokens
(``TokenStore``: hashed). What a person consents to becomes an agent ``Credential``.
"""

from __future__ import annotations

import secrets
import time
from collections import deque
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
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from .client_documents import ClientDocumentError, ClientDocuments, is_document_id
from .tokens import TokenStore

CODE_LIFETIME = 60.0  # seconds an authorization code may wait for its exchange
CONSENT_LIFETIME = 600.0  # seconds a consent page may wait for the person (a login in between)
MAX_PENDING = 100  # consents waiting at once
MAX_CLIENTS = 200  # registered clients kept; past it the oldest never used are dropped
REGISTRATIONS_PER_MINUTE = 20
MAX_REDIRECT_URIS = 10
MAX_URI_CHARS = 2000
MAX_NAME_CHARS = 100
UNSAFE_SCHEMES = frozenset({"javascript", "data", "file", "vbscript", "blob", "about"})
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def is_loopback(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme == "http" and (parts.hostname or "") in LOOPBACK


def check_redirect_uris(uris: list[str]) -> None:
    """Raises ValueError naming the first redirect URI a client may not have (registered or documented)."""
    if not uris or len(uris) > MAX_REDIRECT_URIS or any(len(u) > MAX_URI_CHARS for u in uris):
        raise ValueError(f"Give 1 to {MAX_REDIRECT_URIS} redirect_uris of at most {MAX_URI_CHARS} chars.")
    for uri in uris:
        scheme = urlsplit(uri).scheme.lower()
        if scheme in UNSAFE_SCHEMES or (scheme == "http" and not is_loopback(uri)):
            raise ValueError(f"Redirect URI {uri!r}: use https, a loopback http URI, or an app's scheme.")


@dataclass
class Consent:
    """An authorization request the SDK accepted, waiting for the person's Allow or Deny."""

    id: str
    client: OAuthClientInformationFull
    params: AuthorizationParams
    expires: float
    # How the client's name is known: "verified" (its metadata document was fetched), "unverified"
    # (a document that could not be fetched), "" (dynamically registered: the client named itself).
    document_status: str = ""


@dataclass
class Code:
    code: AuthorizationCode
    user: str
    user_display: str
    policy: str
    permissions: list[str]


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
        self.consents: dict[str, Consent] = {}
        self._codes: dict[str, Code] = {}
        self._loaded: dict[str, Code] = {}  # codes the token endpoint took, for the exchange that follows
        self._spent_codes: dict[str, str] = {}  # code -> the credential it made (replay revokes it)
        self._registrations: deque[float] = deque()
        self.resource_path = store.resource  # <base_url>mcp: what ``resource`` must name
        self.documents = ClientDocuments(documents, check_redirect_uris)

    # -- clients (RFC 7591) ----------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if is_document_id(client_id):  # SEP-991: the client describes itself at its URL
            try:
                return await self.documents.get(client_id)
            except ClientDocumentError:
                return None  # the authorize endpoint said why (handlers.Authorize)
        data = self.store.clients.get(client_id)
        return OAuthClientInformationFull.model_validate(data) if data is not None else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        now = time.monotonic()
        while self._registrations and now - self._registrations[0] > 60:
            self._registrations.popleft()
        if len(self._registrations) >= REGISTRATIONS_PER_MINUTE:
            raise RegistrationError(
                "invalid_client_metadata", "Too many registrations; try again in a minute."
            )
        try:
            check_redirect_uris([str(u) for u in client_info.redirect_uris or []])
        except ValueError as e:
            raise RegistrationError("invalid_redirect_uri", str(e)) from None
        if client_info.client_name and len(client_info.client_name) > MAX_NAME_CHARS:
            raise RegistrationError(
                "invalid_client_metadata", f"client_name is longer than {MAX_NAME_CHARS} chars."
            )
        for name in ("client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri"):
            setattr(client_info, name, None)  # shown nowhere, fetched never: not kept
        self._registrations.append(now)
        self._make_room()
        self.store.clients[client_info.client_id or ""] = client_info.model_dump(
            mode="json", exclude_none=True
        )
        self.store.save()

    def _make_room(self) -> None:
        """Past MAX_CLIENTS, forget the oldest clients no credential uses (a flood forgets itself)."""
        if len(self.store.clients) < MAX_CLIENTS:
            return
        used = {c.client_id for c in self.store.credentials.values()}
        idle = sorted(
            (cid for cid in self.store.clients if cid not in used),
            key=lambda cid: self.store.clients[cid].get("client_id_issued_at", 0),
        )
        for cid in idle[: len(self.store.clients) - MAX_CLIENTS + 1]:
            del self.store.clients[cid]
        if len(self.store.clients) >= MAX_CLIENTS:
            raise RegistrationError(
                "invalid_client_metadata", "This server has too many agent clients registered."
            )

    # -- authorize: hand over to the person -------------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if params.resource is not None and urlsplit(params.resource).path.rstrip("/") != self.resource_path:
            raise AuthorizeError(
                "invalid_request", f"resource must be this server's MCP endpoint ({self.resource_path})."
            )
        now = time.monotonic()
        self.consents = {k: c for k, c in self.consents.items() if c.expires > now}
        if len(self.consents) >= MAX_PENDING:
            raise AuthorizeError("temporarily_unavailable", "Too many consents are waiting; try again later.")
        consent = Consent(secrets.token_urlsafe(24), client, params, now + CONSENT_LIFETIME)
        if is_document_id(client.client_id or ""):  # get_client found it: its document was fetched
            consent.document_status = "verified"
        self.consents[consent.id] = consent
        return f"{self.consent_url}?request={consent.id}"

    def take_consent(self, consent_id: str) -> Consent | None:
        """The waiting consent, once (a second submit of the same page gets nothing)."""
        consent = self.consents.pop(consent_id, None)
        return consent if consent is not None and consent.expires > time.monotonic() else None

    def peek_consent(self, consent_id: str) -> Consent | None:
        consent = self.consents.get(consent_id)
        return consent if consent is not None and consent.expires > time.monotonic() else None

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
            made = self._spent_codes.get(code)
            if made:  # a replayed code: whoever holds it is not alone; what it made is revoked
                self.store.revoke(made)
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
        name = client.client_name or urlsplit(str(authorization_code.redirect_uri)).hostname or "OAuth client"
        credential = self.store.create(
            name,
            found.user,
            found.policy,
            user_display=found.user_display,
            client=name,
            client_id=client.client_id,
            permissions=found.permissions,
        )
        self._spent_codes[authorization_code.code] = credential.id
        if len(self._spent_codes) > 1000:
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
