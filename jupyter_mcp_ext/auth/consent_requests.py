"""Consents waiting for the person, kept in their own URL: the authorize step stores nothing.

Anyone can call ``/oauth/authorize`` without logging in, so whatever it stored, strangers could fill.
Instead the request the SDK checked is written into the consent URL, signed with a key that lives
only in this process and dated: the consent page believes what it signed and nothing else. Only an
answer is remembered (each request is answered once), and only a logged-in person can answer.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass

from mcp.server.auth.provider import AuthorizationParams
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from .redirect_uris import AgentClient

MAX_ANSWERED = 10_000  # answers remembered until their request expires; only a person adds one


@dataclass
class Consent:
    """An authorization request the SDK accepted, waiting for the person's Allow or Deny."""

    id: str  # the signed request itself: what the consent page's form sends back
    client: OAuthClientInformationFull
    params: AuthorizationParams
    expires: float  # epoch seconds
    # How the client's name is known: "verified" (its metadata document was fetched), "unverified"
    # (a document that could not be fetched), "" (dynamically registered: the client named itself).
    document_status: str = ""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class ConsentRequests:
    """Signs authorization requests into consent ids and reads them back, each answered once."""

    def __init__(self, lifetime: float):
        self.lifetime = lifetime
        self._key = secrets.token_bytes(32)
        self._answered: dict[str, float] = {}  # nonce -> when its request expires

    def sign(self, client: OAuthClientInformationFull, params: AuthorizationParams, status: str) -> str:
        body = {
            "c": client.client_id,
            "n": client.client_name,
            "r": str(params.redirect_uri),
            "x": params.redirect_uri_provided_explicitly,
            "s": params.state,
            "p": params.code_challenge,
            "o": params.scopes,
            "u": params.resource,
            "d": status,
            "t": time.time() + self.lifetime,
            "i": secrets.token_urlsafe(12),
        }
        payload = _b64(json.dumps(body, separators=(",", ":")).encode())
        return f"{payload}.{self._mac(payload)}"

    def _mac(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode(), hashlib.sha256).digest())

    def read(self, consent_id: str) -> Consent | None:
        """The request this id carries, if this server signed it, it has not expired or been answered."""
        payload, _, mac = consent_id.partition(".")
        if not mac or not hmac.compare_digest(mac.encode(), self._mac(payload).encode()):
            return None
        body = json.loads(_unb64(payload))
        if body["t"] <= time.time() or body["i"] in self._answered:
            return None
        client = AgentClient(client_id=body["c"], client_name=body["n"], redirect_uris=[AnyUrl(body["r"])])
        params = AuthorizationParams(
            state=body["s"],
            scopes=body["o"],
            code_challenge=body["p"],
            redirect_uri=AnyUrl(body["r"]),
            redirect_uri_provided_explicitly=body["x"],
            resource=body["u"],
        )
        return Consent(consent_id, client, params, body["t"], body["d"])

    def answer(self, consent_id: str) -> Consent | None:
        """The request, once: a second submit of the same page gets nothing."""
        found = self.read(consent_id)
        if found is None:
            return None
        now = time.time()
        self._answered = {k: t for k, t in self._answered.items() if t > now}
        if len(self._answered) >= MAX_ANSWERED:  # a person answering ten thousand pages in ten minutes
            return None
        self._answered[json.loads(_unb64(consent_id.partition(".")[0]))["i"]] = found.expires
        return found
