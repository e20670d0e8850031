"""The journal of agent turns: every call that changes a notebook or a file, with enough to undo it.

It lives in server memory and is bounded (oldest entries dropped first). Each entry holds the
changes a call made, cell by cell, as the before and after of that cell (see ``changes.py``), which
is what a revert needs and what a person reviewing the agent's work reads.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

SHOWN_CHARS = 4000  # of a change's before/after text in the API; the journal keeps it whole


def iso(at: float) -> str:
    """Wall-clock seconds as ISO 8601 UTC with milliseconds, as the API shows every time."""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
        return {
            "cell_id": self.cell_id,
            "kind": self.kind,
            "before": shown(self.before),
            "after": shown(self.after),
        }


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
    note: str | None = None

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
            "changes": [c.to_json() for c in self.changes],
            "note": self.note,
        }


class Journal:
    """The last ``limit`` entries, newest last; listeners hear of each new or changed entry."""

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self._entries: OrderedDict[int, Entry] = OrderedDict()
        self._next = 1
        self._listeners: list[Callable[[Entry], None]] = []

    def on_change(self, listener: Callable[[Entry], None]) -> None:
        self._listeners.append(listener)

    def new(self, *, agent: str, client: str, user: str, tool: str, path: str | None) -> Entry:
        """An entry for a call starting now; it is added by ``add`` once the call is over."""
        entry = Entry(self._next, time.time(), agent, client, user, tool, path)
        self._next += 1
        return entry

    def add(self, entry: Entry) -> None:
        self._entries[entry.id] = entry
        while len(self._entries) > self.limit:
            self._entries.popitem(last=False)
        self.changed(entry)

    def changed(self, entry: Entry) -> None:
        for listener in list(self._listeners):
            listener(entry)

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


def shown(text: str | None, limit: int = SHOWN_CHARS) -> str | None:
    """``text`` as the API shows it: at most ``limit`` characters, then how many more there are."""
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit:,} more characters]"
