"""Agent credentials: named, per-person, each with the policy the person chose, stored hashed.

An agent credential is what an agent host holds instead of the person's Jupyter token: it works at
``<base_url>/mcp`` and nowhere else (Jupyter's identity provider has never heard of it). A credential
has tokens: one fixed token minted by hand (``jupyter mcp token create``), or an access token (short)
and a refresh token (long) issued by the OAuth flow. Only SHA-256 hashes of tokens are kept, in a
SQLite file in Jupyter's data folder (``credential_store``) that every server of the person shares:
each credential belongs to the one server that issued it, and is accepted nowhere else.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from . import credential_store as store
from .resource import mcp_url

log = logging.getLogger(__name__)

PREFIX = "jmcp_"
"""Every agent token starts so: told apart from a Jupyter token without a lookup."""
POLICIES = ("full", "ask", "read-only")
MAX_NAME = 100
LAST_USED_GRAIN = 60.0  # seconds: a credential's last use is written at most this often
MAX_GRANTS = 10  # live grants (OAuth sign-ins) of one credential; a new one past it ends the oldest
MAX_USED_PER_GRANT = 50  # spent refresh tokens of a grant remembered, to notice a stolen copy

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
    resource: str = ""  # the MCP URL it was issued for (the path alone for one minted without a request)
    server: str = ""  # the server it belongs to (root folder and base_url): accepted there alone
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


class Revoked(LookupError):
    """The credential was revoked (here or by another process) while a token was being made for it."""


class TokenStore:
    """This server's credentials and the hashes of their tokens, kept in the shared database ``path``.

    ``server`` says which server a credential belongs to: one server never accepts, lists or changes
    another's. ``resource`` is this server's MCP path (``<base_url>mcp``).
    """

    def __init__(
        self,
        path: Path,
        resource: str,
        *,
        server: str | None = None,
        legacy: Path | None = None,
        checked: frozenset[tuple[str, str]] = frozenset(),
    ):
        self.path = path
        self.resource = resource
        self.server = server or resource
        self.credentials: dict[str, Credential] = {}  # this server's, as last read (one object per id)
        self.clients: dict[str, dict[str, Any]] = {}  # OAuth clients registered here (RFC 7591)
        self.checked = checked  # the (resource, action) pairs tools ask for
        self._db = store.open_store(path, legacy, self.server, resource)
        self.mine()
        query = "SELECT client_id, data FROM clients WHERE server = ?"
        self._clients_saved: dict[str, str] = dict(self._db.execute(query, (self.server,)).fetchall())
        self.clients = {cid: json.loads(data) for cid, data in self._clients_saved.items()}

    def close(self) -> None:
        self._db.close()

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
            known = self.held_by(client_id, user)
            if known is not None:
                known.name, known.client, known.policy = name, client, policy
                known.user_display, known.permissions = user_display or user, permissions
                known.name_verified = name_verified
                with store.transaction(self._db):
                    row = store.credential_row(asdict(known))
                    self._db.execute(
                        "UPDATE credentials SET policy = ?, data = ? WHERE id = ?", (row[5], row[8], known.id)
                    )
                return known
        credential = Credential(
            id=secrets.token_hex(6),
            name=name,
            user=user,
            user_display=user_display or user,
            policy=policy,
            client=client,
            client_id=client_id,
            resource=mcp_url() or self.resource,
            server=self.server,
            permissions=permissions,
            name_verified=name_verified,
        )
        with store.transaction(self._db):
            self._db.execute(
                "INSERT INTO credentials VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                store.credential_row(asdict(credential)),
            )
        self.credentials[credential.id] = credential
        return credential

    def issue(self, credential: Credential, kind: Kind, lifetime: float | None, family: str = "") -> str:
        """A new token of ``credential``; the caller shows it once, only its hash is kept."""
        token = PREFIX + secrets.token_urlsafe(32)
        expires = time.time() + lifetime if lifetime is not None else None
        try:
            with store.transaction(self._db):
                self._db.execute(
                    "INSERT INTO tokens VALUES (?, ?, ?, ?, ?)",
                    (digest(token), credential.id, kind, expires, family),
                )
        except sqlite3.IntegrityError:  # its row is gone: revoked meanwhile
            self.credentials.pop(credential.id, None)
            raise Revoked(f"Agent '{credential.name}' was revoked.") from None
        return token

    def mint(
        self, name: str, user: str, policy: str, user_display: str = "", permissions: list[str] | None = None
    ) -> tuple[Credential, str]:
        """A credential with one fixed token (no expiry), for hosts that can only send a header."""
        credential = self.create(name, user, policy, user_display=user_display, permissions=permissions)
        return credential, self.issue(credential, "token", None)

    def begin_grant(self, credential: Credential) -> str:
        """A family for a new grant of ``credential``; past MAX_GRANTS the oldest grant's tokens end."""
        with store.transaction(self._db):
            families = [
                f
                for (f,) in self._db.execute(
                    "SELECT family FROM tokens WHERE credential = ? AND family != '' "
                    "GROUP BY family ORDER BY MAX(COALESCE(expires, 0))",
                    (credential.id,),
                )
            ]
            for family in families[: max(0, len(families) - MAX_GRANTS + 1)]:
                self._db.execute("DELETE FROM tokens WHERE family = ?", (family,))
        return secrets.token_hex(8)

    # -- checking ------------------------------------------------------------------------

    def lookup(self, token: str, kind: tuple[Kind, ...] = ("token", "access")) -> Credential | None:
        """This server's credential of a live token of one of ``kind``; None if unknown, expired or revoked.

        Read from the database each time (a primary-key read; WAL readers never wait): a revocation
        by any process holding this server's records counts at once.
        """
        # Found by its SHA-256: what a lookup's timing could reveal is the hash, which is useless.
        try:
            row = self._db.execute(
                "SELECT t.credential, t.kind, t.expires, c.policy FROM tokens t "
                "JOIN credentials c ON c.id = t.credential WHERE t.hash = ? AND c.server = ?",
                (digest(token), self.server),
            ).fetchone()
        except sqlite3.Error as err:
            log.error("Could not read MCP agent credentials in %s (%s)", self.path, err)
            return None
        if row is None or row[1] not in kind:
            return None
        credential_id, _, expires, policy = row
        now = time.time()
        if expires is not None and now >= expires:
            self._write("DELETE FROM tokens WHERE hash = ?", (digest(token),))
            return None
        credential = self.credentials.get(credential_id) or self._read(credential_id)
        if credential is None:
            return None
        credential.policy = policy  # set here or by another process of this server
        if credential.last_used is None or now - credential.last_used > LAST_USED_GRAIN:
            credential.last_used = now
            self._write("UPDATE credentials SET last_used = ? WHERE id = ?", (now, credential_id))
        return credential

    def peek_refresh(self, refresh_token: str) -> Credential | None:
        """The credential of a live refresh token, not spending it; one reused after rotation ends its grant."""
        if self._reused(digest(refresh_token)):
            return None
        return self.lookup(refresh_token, ("refresh",))

    def family_of(self, token: str) -> str:
        row = self._db.execute("SELECT family FROM tokens WHERE hash = ?", (digest(token),)).fetchone()
        return row[0] if row is not None else ""

    def rotate(self, refresh_token: str) -> tuple[Credential, str] | None:
        """Spend a refresh token: its credential and family, or None (a reused one revokes the family).

        Its grant's other tokens (the access token it came with) end with it: a grant holds one
        access and one refresh token at a time, however often it refreshes.
        """
        hashed = digest(refresh_token)
        credential = self.lookup(refresh_token, ("refresh",))
        if credential is None:
            self._reused(hashed)
            return None
        now = time.time()
        with store.transaction(self._db):
            row = self._db.execute("SELECT expires, family FROM tokens WHERE hash = ?", (hashed,)).fetchone()
            if row is None:  # spent by another request meanwhile
                return None
            expires, family = row
            if family:
                self._db.execute(
                    "DELETE FROM tokens WHERE family = ? AND credential = ?", (family, credential.id)
                )
                self._db.execute(
                    "INSERT OR REPLACE INTO used VALUES (?, ?, ?, ?)",
                    (hashed, family, expires or now + 1, now),
                )
                self._db.execute(
                    "DELETE FROM used WHERE family = ? AND hash NOT IN "
                    "(SELECT hash FROM used WHERE family = ? ORDER BY at DESC LIMIT ?)",
                    (family, family, MAX_USED_PER_GRANT),
                )
            else:
                self._db.execute("DELETE FROM tokens WHERE hash = ?", (hashed,))
        return credential, family

    def _reused(self, hashed: str) -> bool:
        """A refresh token used again after rotation: someone else holds a copy; end its whole grant."""
        row = self._db.execute("SELECT family FROM used WHERE hash = ?", (hashed,)).fetchone()
        if row is None:
            return False
        log.warning("An MCP refresh token was reused after rotation; revoking its grant")
        self._revoke_family(row[0])
        return True

    # -- managing ------------------------------------------------------------------------

    def revoke(self, credential_id: str) -> bool:
        """Forget a credential of this server and all its tokens at once, for every process."""
        self.credentials.pop(credential_id, None)
        return (
            self._write("DELETE FROM credentials WHERE id = ? AND server = ?", (credential_id, self.server))
            > 0
        )

    def revoke_token(self, token: str) -> None:
        """RFC 7009: the token (and, for a refresh token, its grant's other tokens) stops working."""
        hashed = digest(token)
        row = self._db.execute(
            "SELECT t.kind, t.family FROM tokens t JOIN credentials c ON c.id = t.credential "
            "WHERE t.hash = ? AND c.server = ?",
            (hashed, self.server),
        ).fetchone()
        if row is None:
            return
        self._write("DELETE FROM tokens WHERE hash = ?", (hashed,))
        if row[0] == "refresh" and row[1]:
            self._revoke_family(row[1])

    def _revoke_family(self, family: str) -> None:
        self._write(
            "DELETE FROM tokens WHERE family = ? AND credential IN (SELECT id FROM credentials WHERE server = ?)",
            (family, self.server),
        )

    def set_policy(self, credential_id: str, policy: str) -> Credential | None:
        if policy not in POLICIES:
            raise ValueError(f"Unknown policy '{policy}'; use one of {', '.join(POLICIES)}.")
        changed = self._write(
            "UPDATE credentials SET policy = ? WHERE id = ? AND server = ?",
            (policy, credential_id, self.server),
        )
        if not changed:
            self.credentials.pop(credential_id, None)
            return None
        credential = self.credentials.get(credential_id) or self._read(credential_id)
        if credential is not None:
            credential.policy = policy
        return credential

    def held_by(self, client_id: str, user: str) -> Credential | None:
        """The credential this OAuth client already holds for this person here, if any."""
        row = self._db.execute(
            "SELECT * FROM credentials WHERE server = ? AND client_id = ? AND user = ? ORDER BY created LIMIT 1",
            (self.server, client_id, user),
        ).fetchone()
        return self._adopt(row) if row is not None else None

    def mine(self) -> list[Credential]:
        """This server's credentials, oldest first, as the database has them now."""
        rows = self._db.execute("SELECT * FROM credentials WHERE server = ? ORDER BY created", (self.server,))
        found = [self._adopt(row) for row in rows]
        ids = {c.id for c in found}
        for gone in [cid for cid in self.credentials if cid not in ids]:
            del self.credentials[gone]
        return found

    def live_tokens(self, credential_id: str) -> int:
        """How many tokens of a credential work now (a grant holds two, however often it refreshes)."""
        row = self._db.execute(
            "SELECT COUNT(*) FROM tokens WHERE credential = ? AND (expires IS NULL OR expires > ?)",
            (credential_id, time.time()),
        ).fetchone()
        return int(row[0])

    # -- keeping ------------------------------------------------------------------------

    def save(self) -> None:
        """Keep ``clients`` (credentials and tokens are written as they change, row by row): the ones
        added or changed here, and the removal of ones this process knew (not another's new ones)."""
        saved = {cid: json.dumps(data) for cid, data in self.clients.items()}
        try:
            with store.transaction(self._db):
                for cid in self._clients_saved.keys() - saved.keys():
                    self._db.execute(
                        "DELETE FROM clients WHERE server = ? AND client_id = ?", (self.server, cid)
                    )
                self._db.executemany(
                    "INSERT OR REPLACE INTO clients VALUES (?, ?, ?)",
                    [
                        (self.server, cid, data)
                        for cid, data in saved.items()
                        if self._clients_saved.get(cid) != data
                    ],
                )
            self._clients_saved = saved
        except sqlite3.Error as err:  # they still work until the server stops
            log.error("Could not keep MCP agent clients in %s (%s)", self.path, err)

    def _write(self, sql: str, args: tuple[Any, ...]) -> int:
        """One statement in a transaction of its own; the number of rows it changed."""
        try:
            with store.transaction(self._db):
                return self._db.execute(sql, args).rowcount
        except sqlite3.Error as err:
            log.error("Could not write MCP agent credentials in %s (%s)", self.path, err)
            return 0

    def _read(self, credential_id: str) -> Credential | None:
        row = self._db.execute(
            "SELECT * FROM credentials WHERE id = ? AND server = ?", (credential_id, self.server)
        ).fetchone()
        return self._adopt(row) if row is not None else None

    def _adopt(self, row: tuple[Any, ...]) -> Credential:
        """The one object of this credential, its fields as ``row`` has them."""
        fields = store.credential_fields(row)
        known = self.credentials.get(fields["id"])
        if known is None:
            known = self.credentials[fields["id"]] = Credential(**fields)
        else:
            for key, value in fields.items():
                if key != "last_used" or value is not None:
                    setattr(known, key, value)
        return known


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
