"""The journal on disk: a SQLite file that mirrors the in-memory journal, so review and revert
survive a restart.

Writes never wait on the disk in the event loop: ``put`` and ``drop`` note what changed and wake a
writer thread, which writes every change of the last quarter second in one transaction (an entry
changed ten times meanwhile is written once) and deletes what the journal dropped or aged out.
``close`` flushes.
A file that cannot be read (corrupt, from a newer version) or written is left as it is, said once
in the log, and the journal goes on in memory only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .journal import Change, Entry

log = logging.getLogger(__name__)

SCHEMA = 1  # PRAGMA user_version of the files this code writes; a larger one is a newer server's
FIELDS = ("id", "time", "agent", "client", "user", "tool", "path", "outcome", "error", "duration_ms")
FIELDS_MORE = ("reverted", "reverted_by", "note", "kept")
BATCH_SECONDS = 0.25  # how long a change waits for others to share its write (lost if the process dies)
MEMORY_ONLY = "the journal is kept in memory only until the server restarts (journal_file)"


class StoreError(Exception):
    """The file cannot be used; the message says why, for the log."""


@dataclass
class Loaded:
    entries: list[Entry] = field(default_factory=list)
    next_id: int = 1
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    unreadable: int = 0  # rows that could not be read back (skipped)


def record(entry: Entry) -> str:
    """An entry as the file keeps it: whole, with what a revert needs."""
    data = {name: getattr(entry, name) for name in FIELDS + FIELDS_MORE}
    data["changes"] = [[c.kind, c.cell_id, c.before, c.after, c.undo] for c in entry.changes]
    return json.dumps(data, separators=(",", ":"))


def from_record(text: str) -> Entry:
    data = json.loads(text)
    changes = [
        Change(kind, cell_id, before, after, dict(undo))
        for kind, cell_id, before, after, undo in data.pop("changes")
    ]
    entry = Entry(**{name: data[name] for name in FIELDS})
    for name in FIELDS_MORE:
        setattr(entry, name, data.get(name, getattr(entry, name)))
    entry.changes = changes
    return entry


class JournalStore:
    def __init__(self, path: Path, max_age: float | None = None):
        self.path = path
        self.max_age = max_age
        self._db: sqlite3.Connection | None = None
        self._wake = threading.Condition()
        self._entries: dict[int, Entry] = {}  # written next, by id
        self._dropped: set[int] = set()
        self._checkpoints: list[tuple[str, dict[str, Any] | None]] = []  # (name, record or None: delete)
        self._closing = False
        self._thread: threading.Thread | None = None
        self._idle = False  # the writer waits for work (a put must wake it); else it gathers a batch
        self.failed = False

    # -- start -------------------------------------------------------------------------

    def open(self) -> Loaded:
        """Open (or create, owner-only) the file and read what it keeps; ``StoreError`` if unusable."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
            os.chmod(self.path, 0o600)
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=5)
        except (OSError, sqlite3.Error) as err:
            raise StoreError(f"cannot be opened or created ({err})") from err
        try:
            loaded = self._load(db)
        except StoreError:
            db.close()
            raise
        except sqlite3.Error as err:
            db.close()
            raise StoreError(f"cannot be read: {err} (corrupt? it is left as it is)") from err
        self._db = db
        self._thread = threading.Thread(target=self._run, name="mcp-journal-writer", daemon=True)
        self._thread.start()
        return loaded

    def _load(self, db: sqlite3.Connection) -> Loaded:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA:
            raise StoreError(
                f"was written by a newer jupyter_mcp_ext (schema {version}, this one reads {SCHEMA}); it is "
                "left as it is: upgrade, or point journal_file elsewhere"
            )
        if version == 0:  # a new file: space freed by dropped entries goes back to the disk
            db.execute("PRAGMA auto_vacuum = INCREMENTAL")
        db.execute("BEGIN IMMEDIATE")  # a write at start: a read-only file is found now, not later
        db.execute("CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY, time REAL, data TEXT)")
        db.execute("CREATE TABLE IF NOT EXISTS checkpoints (name TEXT PRIMARY KEY, data TEXT)")
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        db.execute(f"PRAGMA user_version = {SCHEMA}")
        if self.max_age is not None:
            db.execute("DELETE FROM entries WHERE time < ?", (time.time() - self.max_age,))
        db.execute("COMMIT")
        loaded = Loaded()
        row = db.execute("SELECT value FROM meta WHERE key = 'next_id'").fetchone()
        loaded.next_id = int(row[0]) if row else 1
        for (text,) in db.execute("SELECT data FROM entries ORDER BY id"):
            try:
                loaded.entries.append(from_record(text))
            except (ValueError, TypeError, KeyError):
                loaded.unreadable += 1
        for (text,) in db.execute("SELECT data FROM checkpoints"):
            try:
                loaded.checkpoints.append(json.loads(text))
            except ValueError:
                loaded.unreadable += 1
        return loaded

    # -- on the event loop: cheap ---------------------------------------------------------

    def put(self, entry: Entry) -> None:
        if self._db is None:
            return
        with self._wake:
            self._entries[entry.id] = entry
            self._notify()

    def drop(self, entry_id: int) -> None:
        if self._db is None:
            return
        with self._wake:
            self._entries.pop(entry_id, None)
            self._dropped.add(entry_id)
            self._notify()

    def put_checkpoint(self, name: str, data: dict[str, Any] | None) -> None:
        """Keep checkpoint ``name`` (None: forget it)."""
        if self._db is None:
            return
        with self._wake:
            self._checkpoints.append((name, data))
            self._notify()

    def _notify(self) -> None:
        """Wake the writer if it waits for work (the lock held). While it gathers a batch it takes
        this change with the rest when the batch is due: waking it for each one (every edit of a
        steady agent) cost the event loop a thread switch per call, for nothing."""
        if self._idle:
            self._idle = False
            self._wake.notify()

    def close(self, timeout: float = 10.0) -> None:
        """Write what is pending, then stop the writer."""
        with self._wake:
            self._closing = True
            self._wake.notify()  # whether idle or gathering: the batch is due now
        if self._thread is not None:
            self._thread.join(timeout)
        if self._db is not None:
            self._db.close()
            self._db = None

    # -- the writer thread -------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._wake:
                while not (self._entries or self._dropped or self._checkpoints or self._closing):
                    self._idle = True
                    self._wake.wait()
                self._idle = False
                # Gather what else comes within BATCH_SECONDS: an agent editing steadily costs one
                # transaction (one sync to the disk) per batch, not one per edit.
                self._wake.wait_for(lambda: self._closing, BATCH_SECONDS)
                entries, self._entries = self._entries, {}
                dropped, self._dropped = self._dropped, set()
                checkpoints, self._checkpoints = self._checkpoints, []
                closing = self._closing
                next_id = max([e.id + 1 for e in entries.values()] or [0])
            if not self.failed:
                self._write(entries, dropped, checkpoints, next_id)
            if closing:
                return

    def _write(
        self,
        entries: dict[int, Entry],
        dropped: set[int],
        checkpoints: list[tuple[str, dict[str, Any] | None]],
        next_id: int,
    ) -> None:
        db = self._db
        assert db is not None
        try:
            rows = [(e.id, e.time, _record_retrying(e)) for e in entries.values()]
            db.execute("BEGIN")
            db.executemany("INSERT OR REPLACE INTO entries (id, time, data) VALUES (?, ?, ?)", rows)
            db.executemany("DELETE FROM entries WHERE id = ?", [(i,) for i in dropped])
            for name, data in checkpoints:
                if data is None:
                    db.execute("DELETE FROM checkpoints WHERE name = ?", (name,))
                else:
                    db.execute("INSERT OR REPLACE INTO checkpoints VALUES (?, ?)", (name, json.dumps(data)))
            if next_id:
                db.execute(
                    "INSERT INTO meta VALUES ('next_id', ?) ON CONFLICT(key) DO UPDATE SET value = "
                    "max(CAST(value AS INTEGER), excluded.value)",
                    (next_id,),
                )
            db.execute("COMMIT")
            if dropped:
                db.execute("PRAGMA incremental_vacuum")
        except (sqlite3.Error, OSError) as err:
            self.failed = True
            log.error("The MCP journal file %s cannot be written (%s): %s", self.path, err, MEMORY_ONLY)
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")


def _record_retrying(entry: Entry) -> str:
    """The record of an entry the event loop may be changing meanwhile (a revert, a Keep): their
    fields are replaced whole, so a second try sees a settled value."""
    for _ in range(3):
        try:
            return record(entry)
        except RuntimeError:  # a dict changed size while it was read
            time.sleep(0.001)
    return record(entry)
