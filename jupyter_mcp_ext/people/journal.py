"""The journal of agent turns: every call that changes a notebook or a file, with enough to undo it.

It lives in server memory, mirrored to a file by ``journal_store.py`` when one is set, and is bounded
in entries, bytes and age (oldest entries dropped first; an entry too large on its own for the bytes
is kept for review without what a revert needs). Each entry
holds the changes a call made, cell by cell, as the before and after of that cell (see
``changes.py``), which is what a revert needs and what a person reviewing the agent's work reads.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..agents.directory import iso

SHOWN_CHARS = 4000  # of a change's before/after text in the API; the journal keeps it whole
FIELD_CHARS = {"path": 1000, "error": 2000, "note": 2000}  # kept of an entry's texts (an agent's input)
NAME_CHARS = 200  # kept of a tool, agent, client or user name
ENTRY_BYTES = 400  # what an entry costs beyond its texts and changes
MAX_SUMMARY_CHANGES = 500  # changes an entry's event names; a mark fetches the entry for more
MAX_AGENTS_DROPPED = 10_000  # agents whose newest dropped entry is remembered, to say so on a revert


@dataclass
class Change:
    """One change a call made: to a cell (by id) or to a file.

    ``kind`` is insert, update, delete, move, outputs or file; ``before`` and ``after`` are the
    text shown to a person (a source, an output summary, a file's text); ``undo`` is what a revert
    needs beyond that (the whole deleted cell, the neighbours a moved cell had, a cell's type).
    """

    kind: str
    cell_id: str | None
    before: str | None
    after: str | None
    undo: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "cell_id": self.cell_id,
            "kind": self.kind,
            "before": shown(self.before),
            "after": shown(self.after),
        }
        if not self.undo.get("revertible", True):
            data["why"] = shown(str(self.undo.get("why", "")), FIELD_CHARS["error"])  # why no revert
        where = self.where
        if where is not None:
            data["where"] = where
        return data

    @property
    def where(self) -> dict[str, Any] | None:
        """Where a deleted cell was: the ids of the cells just before and after it then, and its
        index; a restore puts it back there (``revert._slot``), a placeholder shows it there."""
        if self.kind != "delete" or "neighbours" not in self.undo:
            return None
        after, before = self.undo["neighbours"]
        cell = self.undo.get("cell") or {}
        return {
            "after": after,
            "before": before,
            "index": self.undo.get("index"),
            "type": cell.get("cell_type"),
        }

    def summary(self) -> dict[str, Any]:
        """What a review mark needs of it (no text): the cell, the kind, and a deleted cell's place."""
        data: dict[str, Any] = {"cell_id": self.cell_id, "kind": self.kind}
        where = self.where
        if where is not None:
            data["where"] = where
        return data


@dataclass
class Entry:
    id: int
    time: float
    agent: str
    client: str
    user: str
    tool: str
    path: str | None
    outcome: str = "ok"  # ok, error, denied
    error: str | None = None
    duration_ms: float = 0.0
    changes: list[Change] = field(default_factory=list)
    reverted: bool = False
    reverted_by: dict[str, str] | None = None  # the person: user, name (display name), at (ISO time)
    note: str | None = None
    size: int = 0  # bytes it holds, as the journal counts them once it is added
    # A person's Keep: cell id (or "*", the whole entry) -> who kept it (user, name, at). Replaced, never
    # changed in place: the journal's writer thread may be reading the old one.
    kept: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def review(self) -> dict[str, Any] | None:
        """Where a person's review of it stands: undone, kept (every cell kept), or pending; None
        for an entry that changed nothing."""
        if not self.changes:
            return None
        if self.reverted:
            return {"state": "undone", "by": self.reverted_by, "cells": self.kept}
        whole = self.kept.get("*")
        cells = self.cell_ids
        if whole is None and cells and all(c in self.kept for c in cells):
            whole = max((self.kept[c] for c in cells), key=lambda by: by.get("at", ""))
        return {"state": "kept" if whole else "pending", "by": whole, "cells": self.kept}

    @property
    def cell_ids(self) -> list[str]:
        return list(dict.fromkeys(c.cell_id for c in self.changes if c.cell_id))

    @property
    def revertible(self) -> bool:
        """Whether a revert may work: an entry is reverted whole, so every change must allow it."""
        return (
            not self.reverted
            and bool(self.changes)
            and all(c.undo.get("revertible", True) for c in self.changes)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "time": iso(self.time),
            "agent": self.agent,
            "client": self.client,
            "user": self.user,
            "tool": self.tool,
            "path": self.path,
            "cell_ids": self.cell_ids,
            "outcome": self.outcome,
            "error": self.error,
            "duration_ms": round(self.duration_ms, 1),
            "revertible": self.revertible,
            "reverted": self.reverted,
            "reverted_by": self.reverted_by,
            "review": self.review,
            "changes": [c.to_json() for c in self.changes],
            "note": self.note,
        }

    def summary(self) -> dict[str, Any]:
        """The entry as a review mark needs it, sent in the journal's event so that marks follow
        without a fetch: who, where, which cells and how, and its review state; no texts and no
        person's name (the journal route has those)."""
        review = self.review
        return {
            "id": self.id,
            "time": iso(self.time),
            "agent": self.agent,
            "client": self.client,
            "tool": self.tool,
            "path": self.path,
            "revertible": self.revertible,
            "review": None if review is None else {"state": review["state"], "cells": sorted(self.kept)},
            "changes": [c.summary() for c in self.changes[:MAX_SUMMARY_CHANGES]],
            "more_changes": max(0, len(self.changes) - MAX_SUMMARY_CHANGES),
        }


class Journal:
    """The last ``limit`` entries within ``max_bytes``, newest last; listeners hear of each new or
    changed entry."""

    def __init__(
        self,
        limit: int,
        max_bytes: int = 64_000_000,
        clean: Callable[[str], str] | None = None,
        max_age: float | None = None,
    ):
        self.limit = max(1, limit)
        self.max_age = max_age  # seconds an entry is kept; None: no limit
        self._clean = clean or (lambda text: text)  # takes the server's own folder out of an error
        self.max_bytes = max(1, max_bytes)
        self.bytes = 0
        self._entries: OrderedDict[int, Entry] = OrderedDict()
        self._next = 1
        self._listeners: list[Callable[[Entry], None]] = []
        self._drop_listeners: list[Callable[[int], None]] = []
        self._newest_dropped = 0
        self._dropped_of: OrderedDict[str, int] = OrderedDict()  # agent -> its newest entry dropped
        # Entries a person undid, by id: every agent's read looks for its own among them, and the
        # journal holds up to ``limit`` entries (a scan of all of them on each read).
        self._undone: dict[int, Entry] = {}

    def on_change(self, listener: Callable[[Entry], None]) -> None:
        self._listeners.append(listener)

    def on_drop(self, listener: Callable[[int], None]) -> None:
        """``listener(entry_id)`` for each entry the bounds drop (the file mirror deletes it too)."""
        self._drop_listeners.append(listener)

    @property
    def next_id(self) -> int:
        return self._next

    def restore(self, entries: list[Entry], next_id: int) -> None:
        """Entries kept from an earlier run, oldest first: added within today's bounds, unannounced."""
        for entry in entries:
            self._keep(entry)
        if entries:  # what an earlier run dropped is too old to revert, and says so
            self._newest_dropped = max(self._newest_dropped, entries[0].id - 1)
        self._next = max(self._next, next_id, *(e.id + 1 for e in entries))

    def new(self, *, agent: str, client: str, user: str, tool: str, path: str | None) -> Entry:
        """An entry for a call starting now; it is added by ``add`` once the call is over."""
        entry = Entry(self._next, time.time(), agent, client, user, tool, path)
        self._next += 1
        return entry

    def add(self, entry: Entry) -> None:
        """Keep ``entry``, every text in it cut to a sane size and counted toward ``max_bytes``: an
        agent chooses its paths and arguments, and a refused call must cost no more than a line."""
        self._cut(entry)
        self._keep(entry)
        self.changed(entry)

    def _keep(self, entry: Entry) -> None:
        fields = [entry.path, entry.error, entry.note, entry.tool, entry.agent, entry.client, entry.user]
        entry.size = ENTRY_BYTES + _bytes(fields) + _bytes(entry.changes)
        if entry.size > self.max_bytes:
            _keep_for_review_only(entry, self.max_bytes)
            entry.size = ENTRY_BYTES + _bytes(fields) + _bytes(entry.changes)
        self._entries[entry.id] = entry
        self.bytes += entry.size
        self._note_undone(entry)
        oldest = time.time() - self.max_age if self.max_age is not None else None
        while len(self._entries) > 1 and (
            len(self._entries) > self.limit
            or self.bytes > self.max_bytes
            or (oldest is not None and next(iter(self._entries.values())).time < oldest)
        ):
            self._drop()

    def _drop(self) -> None:
        _, old = self._entries.popitem(last=False)
        self.bytes -= old.size
        self._undone.pop(old.id, None)
        self._newest_dropped = max(self._newest_dropped, old.id)
        self._dropped_of[old.agent] = old.id
        self._dropped_of.move_to_end(old.agent)
        if len(self._dropped_of) > MAX_AGENTS_DROPPED:
            self._dropped_of.popitem(last=False)
        for listener in list(self._drop_listeners):
            listener(old.id)

    def _cut(self, entry: Entry) -> None:
        if entry.error is not None:
            entry.error = self._clean(entry.error)
        for name, limit in FIELD_CHARS.items():
            text = getattr(entry, name)
            if text is not None:
                setattr(entry, name, shown(str(text), limit))
        for name in ("tool", "agent", "client", "user"):
            setattr(entry, name, shown(str(getattr(entry, name)), NAME_CHARS))

    def too_old(self, entry_id: int) -> str | None:
        """Why entry ``entry_id`` cannot be reverted if the journal dropped it, else None."""
        if entry_id in self._entries or not 0 < entry_id <= self._newest_dropped:
            return None
        return f"Journal entry {entry_id} is too old to revert: {self._bounds()}"

    def dropped_since(self, agent: str, since: int) -> str | None:
        """A note when entries of ``agent`` from ``since`` on were dropped, so a revert missed them."""
        newest = self._dropped_of.get(agent, 0)
        if newest < max(since, 1):
            return None
        return f"entries of this agent up to {newest} are too old to revert: {self._bounds()}"

    def _bounds(self) -> str:
        return (
            f"the journal keeps the last {self.limit:,} agent calls within {self.max_bytes:,} bytes "
            f"{self._age()}(journal_size, journal_bytes, journal_max_age) and has dropped it; revert by "
            "hand what is still wanted"
        )

    def _age(self) -> str:
        return f"and {self.max_age / 86400:g} days " if self.max_age is not None else ""

    def changed(self, entry: Entry) -> None:
        """Announce a change of ``entry`` (every change of one kept goes through here)."""
        if entry.id in self._entries:
            self._note_undone(entry)
        for listener in list(self._listeners):
            listener(entry)

    def _note_undone(self, entry: Entry) -> None:
        if entry.reverted:
            self._undone[entry.id] = entry
        else:
            self._undone.pop(entry.id, None)

    def undone(self) -> list[Entry]:
        """The entries a person undid, oldest first."""
        return [self._undone[i] for i in sorted(self._undone)]

    def get(self, entry_id: int) -> Entry | None:
        return self._entries.get(entry_id)

    def entries(self, *, agent: str | None = None, since: int | None = None) -> list[Entry]:
        """Oldest first, of one agent or all, from entry ``since`` on."""
        return [
            e
            for e in self._entries.values()
            if (agent is None or e.agent == agent) and (since is None or e.id >= since)
        ]

    def later_than(self, entry: Entry) -> list[Entry]:
        return [e for e in self._entries.values() if e.id > entry.id]


def _bytes(value: Any) -> int:
    """About how many bytes ``value`` holds in memory: its text, and a little for each container
    (walked without recursion: a cell's metadata may nest deeply)."""
    pending, size = [value], 0
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            size += len(item) if item.isascii() else len(item.encode(errors="replace"))
        elif isinstance(item, Change):
            size += 100
            pending += [item.before, item.after, item.undo]
        elif isinstance(item, dict):
            size += 64
            pending += [*item.keys(), *item.values()]
        elif isinstance(item, (list, tuple)):
            size += 56
            pending += item
        else:
            size += 32
    return size


def _keep_for_review_only(entry: Entry, max_bytes: int) -> None:
    """An entry larger than the whole journal may hold: its changes are kept as a person reviews
    them (each text cut as the API shows it), without what a revert would need."""
    why = f"too large to keep for a revert: over the {max_bytes:,} bytes the journal holds (journal_bytes)"
    entry.changes = [
        Change(c.kind, c.cell_id, shown(c.before), shown(c.after), {"revertible": False, "why": why})
        for c in entry.changes
    ]


def shown(text: str | None, limit: int = SHOWN_CHARS) -> str | None:
    """``text`` as the API shows it: at most ``limit`` characters, then how many more there are."""
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit:,} more characters]"
