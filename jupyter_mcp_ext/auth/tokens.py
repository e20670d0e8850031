"""Agent credentials: named, per-person, each with the policy the person chose, stored hashed.

An agent credential is what an agent host holds instead of the person's Jupyter token: it works at
``<base_url>/mcp`` and nowhere else (Jupyter's identity provider has never heard of it). A credential
has tokens: one fixed token minted by hand (``jupyter mcp token create``), or an access token (short)
and a refresh token (long) issued by the OAuth flow. Only SHA-256 hashes of tokens are kept, in memory
(one dict lookup per request: the hot path never touches the disk) and in a JSON file in Jupyter's
data folder, written atomically and readable by its owner alone, so credentials survive a restart.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger(__name__)

PREFIX = "jmcp_"
"""Every agent token starts so: told apart from a Jupyter token without a lookup."""
POLICIES = ("full", "ask", "read-only")
MAX_NAME = 100
LAST_USED_GRAIN = 60.0  # seconds: a credential's last use is written at most this often

Kind = Literal["token", "access", "refresh"]


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Credential:
    """One agent the person let in: who it acts for, and what it may do."""

    id: str
    name: str
    user: str  # the Jupyter user it acts for
    user_display: str
    policy: str
    client: str  # how it came: "token" (minted by hand) or the OAuth client's registered name
    client_id: str | None = None  # the OAuth client, if any
    resource: str = ""  # the /mcp path it is valid for (this server's base_url)
    # "<resource>:<action>" pairs Jupyter's authorizer allowed the person when they made it: the agent
    # never gets more than its person (a Hub share's scopes, a read-only token's).
    permissions: list[str] | None = None
    # Whether ``name`` was checked: True where a client ID metadata document was fetched, False where
    # the client named itself (dynamic registration, an unfetchable document), None where the person
    # gave it (``jupyter mcp token create``, the panel).
    name_verified: bool | None = None
    created: float = field(default_factory=time.time)
    last_used: float | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["created"] = _iso(self.created)
        data["last_used"] = _iso(self.last_used) if self.last_used else None
        return data


@dataclass
class _Token:
    credential: str  # Credential.id
    kind: Kind
    expires: float | None  # epoch seconds; None: until revoked
    family: str = ""  # refresh tokens of one grant share it: reuse after rotation revokes them all


class TokenStore:
    """Credentials and the hashes of their tokens, kept in ``path``."""

    def __init__(self, path: Path, resource: str):
        self.path = path
        self.resource = resource
        self.credentials: dict[str, Credential] = {}
        self._tokens: dict[str, _Token] = {}  # sha256 hex of a token -> what it is
        self._used: dict[str, str] = {}  # rotated refresh token hash -> its family (reuse detection)
        self.clients: dict[str, dict[str, Any]] = {}
        self.checked: frozenset[tuple[str, str]] = (
            frozenset()
        )  # (resource, action) pairs tools ask for  # OAuth clients registered (RFC 7591), by client_id
        self._saved_at = 0.0
        self._load()

    # -- issuing -------------------------------------------------------------------------

    def create(
        self,
        name: str,
        user: str,
        policy: str,
        *,
        user_display: str = "",
        client: str = "token",
        client_id: str | None = None,
        permissions: list[str] | None = None,
        name_verified: bool | None = None,
    ) -> Credential:
        name = " ".join(str(name).split())[:MAX_NAME]
        if not name:
            raise ValueError("An agent needs a name (what people will see it as), e.g. --name 'My script'.")
        if policy not in POLICIES:
            raise ValueError(f"Unknown policy '{policy}'; use one of {', '.join(POLICIES)}.")
        if client_id is not None:  # the same OAuth client asked again for the same person: one agent
            for known in self.credentials.values():
                if known.client_id == client_id and known.user == user:
                    known.name, known.client, known.policy = name, client, policy
                    known.user_display, known.permissions = user_display or user, permissions
                    known.name_verified = name_verified
                    return known
        credential = Credential(
            id=secrets.token_hex(6),
            name=name,
            user=user,
            user_display=user_display or user,
            policy=policy,
            client=client,
            client_id=client_id,
            resource=self.resource,
            permissions=permissions,
            name_verified=name_verified,
        )
        self.credentials[credential.id] = credential
        return credential

    def issue(self, credential: Credential, kind: Kind, lifetime: float | None, family: str = "") -> str:
        """A new token of ``credential``; the caller shows it once, only its hash is kept."""
        token = PREFIX + secrets.token_urlsafe(32)
        expires = time.time() + lifetime if lifetime is not None else None
        self._tokens[digest(token)] = _Token(credential.id, kind, expires, family)
        self.save()
        return token

    def mint(
        self, name: str, user: str, policy: str, user_display: str = "", permissions: list[str] | None = None
    ) -> tuple[Credential, str]:
        """A credential with one fixed token (no expiry), for hosts that can only send a header."""
        credential = self.create(name, user, policy, user_display=user_display, permissions=permissions)
        return credential, self.issue(credential, "token", None)

    # -- checking ------------------------------------------------------------------------

    def lookup(self, token: str, kind: tuple[Kind, ...] = ("token", "access")) -> Credential | None:
        """The credential of a live token of one of ``kind``; None if unknown, expired or revoked."""
        # Found by its SHA-256: what a lookup's timing could reveal is the hash, which is useless.
        hashed = digest(token)
        record = self._tokens.get(hashed)
        if record is None or record.kind not in kind:
            return None
        now = time.time()
        if record.expires is not None and now >= record.expires:
            self._tokens.pop(hashed, None)
            return None
        credential = self.credentials.get(record.credential)
        if credential is None or credential.resource != self.resource:
            return None
        if credential.last_used is None or now - credential.last_used > LAST_USED_GRAIN:
            credential.last_used = now
            self._save_soon()
        return credential

    def peek_refresh(self, refresh_token: str) -> Credential | None:
        """The credential of a live refresh token, not spending it; one reused after rotation ends its grant."""
        hashed = digest(refresh_token)
        family = self._used.get(hashed)
        if family and hashed not in self._tokens:  # someone else holds a copy: end the whole grant
            log.warning("An MCP refresh token was reused after rotation; revoking its grant")
            self._revoke_family(family)
            return None
        return self.lookup(refresh_token, ("refresh",))

    def family_of(self, token: str) -> str:
        record = self._tokens.get(digest(token))
        return record.family if record is not None else ""

    def rotate(self, refresh_token: str) -> tuple[Credential, str] | None:
        """Spend a refresh token: its credential and family, or None (a reused one revokes the family)."""
        hashed = digest(refresh_token)
        record = self._tokens.get(hashed)
        if record is None or record.kind != "refresh":
            family = self._used.get(hashed)
            if family:  # a refresh token used twice: someone else has a copy; end the whole grant
                log.warning("An MCP refresh token was reused after rotation; revoking its grant")
                self._revoke_family(family)
            return None
        credential = self.lookup(refresh_token, ("refresh",))
        del self._tokens[hashed]
        if credential is None:
            self.save()
            return None
        self._used[hashed] = record.family
        return credential, record.family

    # -- managing ------------------------------------------------------------------------

    def revoke(self, credential_id: str) -> bool:
        """Forget a credential and all its tokens at once."""
        credential = self.credentials.pop(credential_id, None)
        self._tokens = {h: t for h, t in self._tokens.items() if t.credential != credential_id}
        self.save()
        return credential is not None

    def revoke_token(self, token: str) -> None:
        """RFC 7009: the token (and, for a refresh token, its grant's other tokens) stops working."""
        record = self._tokens.pop(digest(token), None)
        if record is not None and record.kind == "refresh" and record.family:
            self._revoke_family(record.family)
        self.save()

    def _revoke_family(self, family: str) -> None:
        self._tokens = {h: t for h, t in self._tokens.items() if t.family != family}
        self.save()

    def set_policy(self, credential_id: str, policy: str) -> Credential | None:
        if policy not in POLICIES:
            raise ValueError(f"Unknown policy '{policy}'; use one of {', '.join(POLICIES)}.")
        credential = self.credentials.get(credential_id)
        if credential is not None:
            credential.policy = policy
            self.save()
        return credential

    def held_by(self, client_id: str, user: str) -> Credential | None:
        """The credential this OAuth client already holds for this person, if any."""
        for known in self.credentials.values():
            if known.client_id == client_id and known.user == user and known.resource == self.resource:
                return known
        return None

    def mine(self) -> list[Credential]:
        """This server's credentials, oldest first."""
        return sorted(
            (c for c in self.credentials.values() if c.resource == self.resource), key=lambda c: c.created
        )

    # -- keeping ------------------------------------------------------------------------

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self.credentials = {c["id"]: Credential(**c) for c in data.get("credentials", [])}
            now = time.time()
            self._tokens = {
                h: _Token(**t)
                for h, t in data.get("tokens", {}).items()
                if t.get("expires") is None or t["expires"] > now
            }
            self._used = dict(data.get("used", {}))
            self.clients = dict(data.get("clients", {}))
        except FileNotFoundError:
            return
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as err:
            log.error(
                "Ignoring unreadable MCP agent credentials %s (%s): agents must connect again", self.path, err
            )

    def save(self) -> None:
        """Write everything, atomically (a crash leaves the old file), readable by the owner alone."""
        self._saved_at = time.time()
        live = {c for c in self.credentials}
        data = {
            "credentials": [asdict(c) for c in self.credentials.values()],
            "tokens": {h: asdict(t) for h, t in self._tokens.items() if t.credential in live},
            "used": dict(list(self._used.items())[-1000:]),
            "clients": self.clients,
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, self.path)
        except OSError as err:  # they still work until the server stops
            log.error("Could not keep MCP agent credentials in %s (%s)", self.path, err)

    def _save_soon(self) -> None:
        """A last-use time is worth a write, but not one per request."""
        if time.time() - self._saved_at > LAST_USED_GRAIN:
            with contextlib.suppress(Exception):
                self.save()


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
