"""Reverting journal entries in the live document: undo exactly what an agent did, keep the rest.

Every change of an entry is checked first; an entry with a conflict is left alone and reported, never
half-undone. The undo itself goes in as one transaction of small edits (a splice of the changed span,
not a rewrite), so people editing the notebook keep their text and their cursors.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_core.utils import ensure_async
from pycrdt import Array, Map
from tornado.web import HTTPError

from ..documents import cells as nb
from ..documents.merge import Edit, apply, undo
from ..documents.paths import without_root
from ..documents.splices import apply_edits
from ..errors import ToolError
from ..services import Services
from .journal import Change, Entry, Journal, iso

log = logging.getLogger(__name__)

KERNEL_NOTE = "kernel state cannot be undone: variables the run set stay until the kernel restarts"

Step = Callable[[], None]


class Conflict(Exception):
    """The change cannot be undone without guessing; the message says why (and which cell)."""


def undo_edits(before: str, after: str, current: str) -> list[Edit]:
    """The smallest splices of ``current`` that take ``before -> after`` back out of it."""
    merged = undo(before, after, current)
    if merged.conflicts:
        raise Conflict("the text the agent wrote has been edited since")
    return merged.edits


@dataclass
class RevertResult:
    reverted: list[int] = field(default_factory=list)
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"reverted": self.reverted, "conflicts": self.conflicts}
        if self.notes:
            data["note"] = "; ".join(dict.fromkeys(self.notes))
        return data


class Reverter:
    def __init__(self, journal: Journal, services: Services):
        self.journal = journal
        self.services = services
        self._one_at_a_time = asyncio.Lock()

    async def revert(
        self,
        entries: list[Entry],
        by: dict[str, str] | None = None,
        *,
        named: bool = False,
        stop_at_conflict: bool = False,
    ) -> RevertResult:
        """Revert entries newest first, each whole or not at all; ``by`` is the person reverting
        (``user`` and display ``name``), recorded on each entry reverted. Reverts run one at a time:
        two people (or two clicks) reverting one entry must not both undo it. ``named``: the person
        picked these entries, so one already undone or kept is a conflict that says by whom, not
        skipped; ``stop_at_conflict``: nothing older is tried after the first conflict."""
        async with self._one_at_a_time:
            return await self._revert(entries, by, named, stop_at_conflict)

    async def _revert(
        self, entries: list[Entry], by: dict[str, str] | None, named: bool, stop_at_conflict: bool
    ) -> RevertResult:
        result = RevertResult()
        for entry in sorted(entries, key=lambda e: e.id, reverse=True):
            settled = _settled(entry)  # undone or kept: skipped, or refused when the person named it
            if settled is None and (entry.reverted or not entry.changes):
                continue
            if settled is not None and not named:
                continue
            try:
                if settled is not None:
                    raise Conflict(settled)
                await self._revert_one(entry)
            except Conflict as err:
                cell_id = err.args[1] if len(err.args) > 1 else None
                reason = without_root(str(err.args[0]), self.services.contents)  # never the server's folder
                result.conflicts.append({"entry": entry.id, "cell_id": cell_id, "reason": reason})
                if stop_at_conflict:
                    break
                continue
            entry.reverted = True
            if by is not None:
                entry.reverted_by = {**by, "at": iso(time.time())}
            result.reverted.append(entry.id)
            if entry.note:
                result.notes.append(entry.note)
            self.journal.changed(entry)
        return result

    async def _revert_one(self, entry: Entry) -> None:
        cell_changes = [c for c in entry.changes if c.kind != "file"]
        file_changes = [c for c in entry.changes if c.kind == "file"]
        if cell_changes:
            if entry.path is None:
                raise Conflict("the entry names no notebook")
            try:
                _, doc = await self.services.documents.open(entry.path)
            except ToolError as err:
                raise Conflict(f"the notebook cannot be opened: {err}") from err
            # Plan every step before changing anything: a conflict leaves the notebook as it is.
            steps = [_plan(doc, change) for change in _undo_order(cell_changes)]
            with doc.ydoc.transaction():
                for step in steps:
                    step()
                nb.mark_dirty(doc)
        for change in reversed(file_changes):
            await self._revert_file(change)

    async def _revert_file(self, change: Change) -> None:
        """Undo a file change; every path goes through the tools' own check (``checked``) first, as the
        file system may have changed since (a link to a secret, or out of the root, in its place)."""
        undo = change.undo
        if not undo.get("revertible", True):
            raise Conflict(undo.get("why", "this change cannot be reverted"))
        try:
            await self._revert_file_checked(change)
        except ToolError as err:
            why = str(err).split("Read it again")[0].strip()  # what follows is advice to an agent
            raise Conflict(f"not reverted: {why}") from err
        except HTTPError as err:  # the contents manager's words may name the server's own folder
            why = err.get_message() or err.reason or f"error {err.status_code}"
            raise Conflict(f"the file could not be put back: {why}") from err

    async def _revert_file_checked(self, change: Change) -> None:
        files, contents = self.services.text_documents, self.services.contents
        undo = change.undo
        if "rename" in undo:
            old = await files.checked(undo["rename"][0])
            new = await files.checked(undo["rename"][1], whole=True, moved_to=old)
            if not old or not new:
                raise Conflict("the server root cannot be renamed")
            if await ensure_async(contents.exists(old)) or not await ensure_async(contents.exists(new)):
                raise Conflict(f"'{new}' is no longer there, or '{old}' exists again")
            await ensure_async(contents.rename(new, old))
            return
        path = await files.checked(undo["path"])
        if not path:
            raise Conflict("the change names no file")
        exists = await ensure_async(contents.file_exists(path))
        if change.after is None:  # deleted: put it back unless something took its place
            if exists:
                raise Conflict(f"'{path}' exists again")
            model = undo["model"]
            await ensure_async(contents.save(model, path))
            return
        if not exists:
            raise Conflict(f"'{path}' has been deleted since")
        current = (await files.read_text(path)).text
        if change.before is None:  # created: delete it only if no one changed it since
            if current != change.after:
                raise Conflict(f"'{path}' has been edited since it was created")
            await ensure_async(contents.delete(path))
            return
        updated = apply(current, undo_edits(change.before, change.after, current))
        # based on the text just read: an edit landing in between is kept, or refused (a conflict)
        await files.write_text(path, updated, base=current)


def _settled(entry: Entry) -> str | None:
    """Why a person's Undo of ``entry`` changes nothing: it was undone, or kept, already."""
    review = entry.review
    if review is None or (review["state"] == "pending" and not review["cells"]):
        return None
    if review["state"] == "pending":  # some of its cells kept: undoing it would undo them too
        cell, by = next(iter(review["cells"].items()))
        return f"entry {entry.id}: its change to cell {cell} was kept{_who(by)}; nothing changed"
    if review["state"] == "undone":
        return f"entry {entry.id} was already undone{_who(review['by'])}; nothing changed"
    return f"entry {entry.id} was kept{_who(review['by'])}; nothing changed (edit it by hand instead)"


def _who(by: dict[str, str] | None) -> str:
    if not by:
        return ""
    return f" by {by.get('name') or by.get('user') or 'someone'} at {by.get('at', '?')}"


def _plan(doc: Any, change: Change) -> Step:
    """Check that ``change`` can be undone in the document as it is now; return the step that does it."""
    planners = {"insert": _plan_insert, "update": _plan_update, "delete": _plan_delete, "move": _plan_move}
    planner = planners.get(change.kind, _plan_outputs)
    try:
        if not change.undo.get("revertible", True):
            raise Conflict(change.undo.get("why", "this change cannot be reverted"))
        return planner(doc, change)
    except Conflict as err:
        raise Conflict(str(err), change.cell_id) from None


def _undo_order(changes: list[Change]) -> list[Change]:
    """Newest first, but deleted cells back in their old order, first to last: each then finds the
    cell that preceded it already back (``_slot``), so cells deleted together come back together
    even when people added cells after them since."""
    order = list(reversed(changes))
    deletes = sorted((c for c in order if c.kind == "delete"), key=lambda c: c.undo.get("index", 0))
    if len(deletes) < 2:
        return order
    slots = iter(deletes)
    return [next(slots) if c.kind == "delete" else c for c in order]


def _index(doc: Any, cell_id: str | None) -> int | None:
    """The cell's index now; scanned, not cached: inside a revert's transaction earlier steps have
    already moved cells, and the id cache only learns of that when the transaction ends."""
    if cell_id is None:
        return None
    for i, ycell in enumerate(doc.ycells):
        if ycell.get("id") == cell_id:
            return i
    return None


def _plan_insert(doc: Any, change: Change) -> Step:
    i = _index(doc, change.cell_id)
    if i is None:
        return lambda: None  # deleted since: nothing left to undo
    if nb.source(doc, i) != (change.after or ""):
        raise Conflict("the inserted cell has been edited since; delete it by hand if it should go")
    cell_id = change.cell_id

    def step() -> None:
        k = _index(doc, cell_id)
        if k is not None:
            del doc.ycells[k]

    return step


def _plan_delete(doc: Any, change: Change) -> Step:
    if _index(doc, change.cell_id) is not None:
        raise Conflict("a cell with this id is in the notebook again")
    cell = dict(change.undo["cell"])
    where = change.undo

    def step() -> None:
        doc.ycells.insert(_slot(doc, where), doc.create_ycell(cell))

    return step


def _plan_move(doc: Any, change: Change) -> Step:
    if _index(doc, change.cell_id) is None:
        raise Conflict("the moved cell has been deleted since")
    cell_id = change.cell_id
    where = change.undo

    def step() -> None:
        src = _index(doc, cell_id)
        assert src is not None
        cell = doc.ycells[src].to_py()
        cell.pop("execution_state", None)
        del doc.ycells[src]
        doc.ycells.insert(_slot(doc, where), doc.create_ycell(cell))

    return step


def _slot(doc: Any, where: dict[str, Any]) -> int:
    """Where a cell goes back to: after the cell that preceded it, else before the one that followed
    it, else its old index."""
    prev, nxt = where["neighbours"]
    i = _index(doc, prev)
    if i is not None:
        return i + 1
    i = _index(doc, nxt)
    if i is not None:
        return i
    return min(where["index"], len(doc.ycells))


def _plan_update(doc: Any, change: Change) -> Step:
    i = _index(doc, change.cell_id)
    if i is None:
        raise Conflict("the cell has been deleted since")
    ycell = doc.ycells[i]
    current = str(ycell["source"])
    changes = undo_edits(change.before or "", change.after or "", current)
    was_type, new_type = change.undo.get("type", [None, None])
    was_meta, new_meta = change.undo.get("metadata", [None, None])
    retype = was_type != new_type and ycell.get("cell_type") == new_type
    meta = ycell.get("metadata")
    current_meta = meta.to_py() if isinstance(meta, Map) else {}
    restore_meta = was_meta != new_meta and current_meta == new_meta
    if was_meta != new_meta and not restore_meta:
        raise Conflict("the cell's metadata has been changed since")
    cell_id = change.cell_id

    def step() -> None:
        k = _index(doc, cell_id)
        assert k is not None
        if retype:
            nb.set_type(doc, k, was_type)
        target = doc.ycells[k]
        apply_edits(target["source"], current, changes)  # the splices update_cell uses
        if restore_meta:
            target["metadata"] = Map(was_meta)

    return step


def _plan_outputs(doc: Any, change: Change) -> Step:
    i = _index(doc, change.cell_id)
    if i is None:
        return lambda: None  # the cell is gone, and its outputs with it
    cell_id = change.cell_id

    def step() -> None:
        k = _index(doc, cell_id)
        if k is None:
            return
        ycell = doc.ycells[k]
        youtputs = ycell.get("outputs")
        if isinstance(youtputs, Array):
            youtputs.clear()
        ycell["execution_count"] = None

    return step
