"""Where agent credentials live: one SQLite file in Jupyter's data folder, shared by every server.

Two servers of one person (different root folders, one data folder) both keep their agents here, so
nothing is written as a whole copy: each change is one short transaction on the rows it concerns, and
each row names the server it belongs to. A revoked credential's rows are deleted, and nothing ever
re-inserts a row it did not just create (updates of a deleted row change nothing; a token whose
credential is gone fails its foreign key), so a server holding an older picture cannot bring one back.
WAL mode: readers never wait for a writer, and a commit is an append, not a rewrite.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS credentials (
    id TEXT PRIMARY KEY,
    server TEXT NOT NULL,
    resource TEXT NOT NULL,
    user TEXT NOT NULL,
    client_id TEXT,
    policy TEXT NOT NULL,
    created REAL NOT NULL,
    last_used REAL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS credentials_server ON credentials(server, client_id, user);
CREATE TABLE IF NOT EXISTS tokens (
    hash TEXT PRIMARY KEY,
    credential TEXT NOT NULL REFERENCES credentials(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    expires REAL,
    family TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS tokens_credential ON tokens(credential);
CREATE INDEX IF NOT EXISTS tokens_family ON tokens(family);
CREATE TABLE IF NOT EXISTS used (
    hash TEXT PRIMARY KEY,
    family TEXT NOT NULL,
    expires REAL NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS used_family ON used(family, at);
CREATE TABLE IF NOT EXISTS clients (
    server TEXT NOT NULL,
    client_id TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (server, client_id)
);
"""
BUSY_TIMEOUT_MS = 5000  # another server's transaction is microseconds long; this is a worst case


def connect(path: Path) -> sqlite3.Connection:
    """The database at ``path`` (made, readable by its owner alone), in autocommit mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    db = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")  # WAL: a crash may lose the last commits, never corrupt
    db.execute("PRAGMA foreign_keys=ON")
    db.execute("PRAGMA wal_autocheckpoint=200")  # pages: the log is folded in every ~800 KB of writes
    db.execute("PRAGMA journal_size_limit=1048576")  # and cut back to 1 MB after
    db.executescript(SCHEMA)
    for suffix in ("-wal", "-shm"):  # made by SQLite with the process umask
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.chmod(0o600)
    return db


def open_store(path: Path, legacy: Path | None, server: str, resource_path: str) -> sqlite3.Connection:
    """The shared database, the old file adopted and expired rows gone; one in memory if it cannot
    be opened (the server starts, and says its agents' credentials end with it)."""
    try:
        db = connect(path)
    except (sqlite3.Error, OSError) as err:
        log.error(
            "Cannot open MCP agent credentials %s (%s): agents' credentials will last until this server "
            "stops. Move the file away to start afresh.",
            path,
            err,
        )
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA foreign_keys=ON")
        db.executescript(SCHEMA)
        legacy = None  # left where it is, for a start that can keep what it holds
    if legacy is not None:
        migrate_legacy(db, legacy, server, resource_path, resource_path)
    now = time.time()
    with transaction(db):
        db.execute("DELETE FROM tokens WHERE expires IS NOT NULL AND expires <= ?", (now,))
        db.execute("DELETE FROM used WHERE expires <= ?", (now,))
    return db


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, taking the write lock at once (no upgrade deadlock between servers)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def migrate_legacy(db: sqlite3.Connection, legacy: Path, server: str, resource_path: str, url: str) -> None:
    """Adopt the credentials of the JSON file older versions kept per base_url, then set it aside.

    That file was shared by every server with this base_url; the first such server to start takes
    what was made for its MCP path (the file is renamed, so no second server takes them too), and
    says so: an agent of another server that shared the file signs in again.
    """
    try:
        data = json.loads(legacy.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, ValueError) as err:
        log.warning(
            "Ignoring unreadable MCP agent credentials %s (%s): agents must sign in again", legacy, err
        )
        return
    now = time.time()
    taken = 0
    try:
        with transaction(db):
            mine: set[str] = set()
            for c in data.get("credentials", []):
                if c.get("resource", resource_path) != resource_path:
                    continue
                row = dict(c, server=server, resource=url)
                db.execute(
                    "INSERT OR IGNORE INTO credentials VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    credential_row(row),
                )
                mine.add(c["id"])
            for digest, t in data.get("tokens", {}).items():
                if t.get("credential") in mine and (t.get("expires") is None or t["expires"] > now):
                    db.execute(
                        "INSERT OR IGNORE INTO tokens VALUES (?, ?, ?, ?, ?)",
                        (digest, t["credential"], t["kind"], t.get("expires"), t.get("family", "")),
                    )
            for client_id, client in data.get("clients", {}).items():
                db.execute(
                    "INSERT OR IGNORE INTO clients VALUES (?, ?, ?)", (server, client_id, json.dumps(client))
                )
            taken = len(mine)
        legacy.rename(legacy.with_name(legacy.name + ".migrated"))
    except (sqlite3.Error, OSError, KeyError, TypeError, AttributeError) as err:
        log.warning(
            "Could not adopt MCP agent credentials from %s (%s): agents must sign in again", legacy, err
        )
        return
    left = len(data.get("credentials", [])) - taken
    log.info(
        "Adopted %d MCP agent credential(s) from %s for this server; %d made elsewhere were dropped "
        "(those agents must sign in again). The old file is kept as %s.migrated.",
        taken,
        legacy,
        left,
        legacy.name,
    )


DATA_FIELDS = ("name", "user_display", "client", "permissions", "name_verified")


def credential_row(c: dict[str, Any]) -> tuple[Any, ...]:
    data = json.dumps({k: c.get(k) for k in DATA_FIELDS})
    return (
        c["id"],
        c["server"],
        c.get("resource", ""),
        c["user"],
        c.get("client_id"),
        c["policy"],
        c.get("created", time.time()),
        c.get("last_used"),
        data,
    )


def credential_fields(row: sqlite3.Row | tuple[Any, ...]) -> dict[str, Any]:
    """The keyword arguments of ``Credential`` from a ``SELECT * FROM credentials`` row."""
    cid, server, resource, user, client_id, policy, created, last_used, data = row
    return {
        "id": cid,
        "server": server,
        "resource": resource,
        "user": user,
        "client_id": client_id,
        "policy": policy,
        "created": created,
        "last_used": last_used,
        **{k: v for k, v in json.loads(data).items() if k in DATA_FIELDS},
    }
