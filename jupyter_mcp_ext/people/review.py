"""A person's review of agent changes, shared by everyone on the server: Keep (per entry, per cell,
per notebook), named checkpoints, and "undo all since a checkpoint".

Undo is the journal's three-way revert (``revert.py``). Review state lives on the journal entries
(``Entry.kept``, ``Entry.reverted_by``), so it is written to the journal file with them and every
person's panel reads the same. A Keep or Undo that finds the change already kept or undone by
someone else is refused with who and when (``ReviewConflict``), and changes nothing.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .journal import NAME_CHARS, Entry, Journal, iso
from .journal_store import JournalStore
from .revert import Reverter

MAX_CHECKPOINTS = 200  # oldest forgotten first


class ReviewConflict(Exception):
    """The review already went another way (kept, undone): the message says by whom and when."""


class NotFound(Exception):
    pass


class Review:
    def __init__(
        self,
        journal: Journal,
        reverter: Reverter,
        store: JournalStore | None = None,
        on_checkpoint: Callable[[str], None] | None = None,
    ):
        self.journal = journal
        self.reverter = reverter
        self.store = store
        self.on_checkpoint = on_checkpoint or (lambda name: None)
        self.checkpoints: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def restore(self, checkpoints: list[dict[str, Any]]) -> None:
        for c in sorted(checkpoints, key=lambda c: c.get("entry", 0)):
            if isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("entry"), int):
                self.checkpoints[c["name"]] = c

    # -- keep -------------------------------------------------------------------------

    def keep_entries(self, ids: list[int], by: dict[str, str]) -> list[int]:
        """Keep these entries whole, all of them or (on a conflict) none."""
        entries = []
        for entry_id in ids:
            entry = self.journal.get(entry_id)
            if entry is None:
                raise NotFound(self.journal.too_old(entry_id) or f"No journal entry {entry_id}.")
            review = entry.review
            if review is None:
                raise ReviewConflict(f"Entry {entry_id} changed nothing, so there is nothing to keep.")
            if review["state"] != "pending":
                raise ReviewConflict(f"Entry {entry_id} was already {review['state']}{_who(review['by'])}.")
            entries.append(entry)
        return self._mark(entries, "*", by)

    def keep_cell(self, path: str, cell_id: str, by: dict[str, str]) -> list[int]:
        """Keep what agents changed in one cell: every pending entry that touched it."""
        touched = [e for e in self.journal.entries() if e.path == path and cell_id in e.cell_ids]
        pending = [e for e in touched if _pending(e, cell_id)]
        if not pending:
            last = touched[-1].review if touched else None
            how = f": already {_last_word(last, cell_id)}" if last else ""
            raise ReviewConflict(f"No agent change waits for review in cell {cell_id} of {path}{how}.")
        return self._mark(pending, cell_id, by)

    def undo_cell_entries(self, path: str, cell_id: str) -> list[Entry]:
        """What a per-cell Undo reverts: the pending entries that changed this cell and no other (an
        entry is reverted whole; one that spans other cells too is named, to undo as an entry)."""
        pending = [
            e
            for e in self.journal.entries()
            if e.path == path and cell_id in e.cell_ids and _pending(e, cell_id)
        ]
        if not pending:
            raise ReviewConflict(f"No agent change waits for review in cell {cell_id} of {path}.")
        wider = [e.id for e in pending if set(e.cell_ids) != {cell_id}]
        if wider:
            raise ReviewConflict(
                f"Entries {', '.join(map(str, wider))} changed other cells too; undo them as entries "
                '({"entry": <id>}) to undo all they did.'
            )
        return pending

    def keep_notebook(self, path: str, agent: str | None, by: dict[str, str]) -> list[int]:
        """Keep all: every pending entry on ``path`` (of one agent, if given)."""
        pending = [
            e
            for e in self.journal.entries(agent=agent)
            if e.path == path and e.review is not None and e.review["state"] == "pending"
        ]
        if not pending:
            raise ReviewConflict(f"No agent change waits for review in {path}.")
        return self._mark(pending, "*", by)

    def _mark(self, entries: list[Entry], cell: str, by: dict[str, str]) -> list[int]:
        stamp = {**by, "at": iso(time.time())}
        for entry in entries:
            entry.kept = {**entry.kept, cell: stamp}  # replaced whole: the writer thread may read it
            self.journal.changed(entry)
        return [e.id for e in entries]

    # -- checkpoints ----------------------------------------------------------------------

    def add_checkpoint(self, name: str, by: dict[str, str]) -> dict[str, Any]:
        name = name.strip()
        if not name or len(name) > NAME_CHARS:
            raise ValueError(f"A checkpoint needs a name of 1 to {NAME_CHARS} characters.")
        if name in self.checkpoints:
            was = self.checkpoints[name]
            raise ReviewConflict(
                f"A checkpoint named '{name}' exists (after entry {was['entry']}, made{_who(was['by'])})."
            )
        checkpoint = {"name": name, "entry": self.journal.next_id - 1, "at": iso(time.time()), "by": by}
        self.checkpoints[name] = checkpoint
        self._save(name, checkpoint)
        while len(self.checkpoints) > MAX_CHECKPOINTS:
            self._save(self.checkpoints.popitem(last=False)[0], None)
        self.on_checkpoint(name)
        return checkpoint

    def _save(self, name: str, data: dict[str, Any] | None) -> None:
        if self.store is not None:
            self.store.put_checkpoint(name, data)

    async def undo_since(
        self, name: str, by: dict[str, str], *, agent: str | None = None, path: str | None = None
    ) -> dict[str, Any]:
        """Revert the agent entries after checkpoint ``name``, newest first, stopping at the first
        conflict; kept and undone entries are left as they are."""
        checkpoint = self.checkpoints.get(name)
        if checkpoint is None:
            raise NotFound(f"No checkpoint named '{name}'.")
        since = [
            e
            for e in self.journal.entries(agent=agent, since=checkpoint["entry"] + 1)
            if (path is None or e.path == path) and e.changes
        ]
        kept = [e.id for e in since if e.review is not None and e.review["state"] == "kept"]
        todo = [e for e in since if e.review is not None and e.review["state"] == "pending"]
        result = await self.reverter.revert(todo, by, named=True, stop_at_conflict=True)
        data = result.to_json()
        conflict = result.conflicts[0] if result.conflicts else None
        data["left"] = sorted(
            (
                e.id
                for e in todo
                if e.id not in result.reverted and (not conflict or e.id < conflict["entry"])
            ),
            reverse=True,
        )
        data["kept"] = kept
        data["checkpoint"] = checkpoint
        return data


def _pending(entry: Entry, cell_id: str) -> bool:
    review = entry.review
    return review is not None and review["state"] == "pending" and cell_id not in entry.kept


def _last_word(review: dict[str, Any], cell_id: str) -> str:
    if review["state"] == "pending" and cell_id in review["cells"]:
        return "kept" + _who(review["cells"][cell_id])
    return review["state"] + _who(review["by"])


def _who(by: dict[str, str] | None) -> str:
    if not by:
        return ""
    return f" by {by.get('name') or by.get('user') or 'someone'} at {by.get('at', '?')}"
