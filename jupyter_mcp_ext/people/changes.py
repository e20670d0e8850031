"""What a call changed in a notebook: a snapshot of its cells before and after, compared by cell id.

Tools stay unaware of the journal: the call pipeline snapshots a notebook when a tool opens it and
again when the call ends. A snapshot reads each cell once, in one transaction, with no ``await``
between the tool's open and the snapshot, so what it sees is what the tool started from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import compress, count
from operator import ne
from typing import Any

from pycrdt import Array, Map

from ..documents import cells as nb
from .journal import Change

# Tools that may delete cells: their snapshots keep whole cells (outputs too), so a revert can put a
# deleted cell back as it was. Other snapshots skip outputs, which can be megabytes.
KEEPS_WHOLE_CELLS = frozenset({"delete_cells", "write_notebook_text"})
MAX_KEPT_OUTPUTS = 1_000_000  # characters of a deleted cell's outputs kept to restore; larger ones go


# Tools that only add cells (and run them): their snapshots need the cell ids alone, before, and the
# new cells after. A tool that names its cells (cell_id, cell_ids) is snapshotted in those cells
# only; any other tool in every cell, which costs about 0.1 ms a cell.
ADDS_ONLY = frozenset({"insert_cells", "insert_and_execute", "execute_code"})
CLEARED = "cleared outputs are not kept, so they cannot be brought back; run the cells again"


@dataclass
class CellState:
    id: str
    type: str
    source: str
    metadata: dict[str, Any]
    execution_count: Any
    outputs: int
    whole: dict[str, Any] | None = None  # the nbformat cell, when the snapshot keeps whole cells


@dataclass
class Snapshot:
    order: list[str]  # every cell id, in order
    cells: dict[str, CellState]  # the cells read in full: only those a call names, unless all


def targets(tool: str, args: Any) -> set[str] | None:
    """The cells a call's snapshot reads: those it names, none for one that only adds, else all (None)."""
    if tool in ADDS_ONLY:
        return set()
    # The arguments' own fields: asking a pydantic model for a field it lacks raises and catches an
    # AttributeError inside pydantic, 5-20 us a name on every edit.
    given = getattr(args, "__dict__", {})
    if given.get("all", False):
        return None
    named = [given.get("cell_id"), *(given.get("cell_ids") or [])]
    named = [n for n in named if isinstance(n, str)]
    return set(named) if named else None


def snapshot(doc: Any, only: set[str] | None = None, *, whole: bool = False, exact: bool = False) -> Snapshot:
    """The cell order of a live notebook, and the cells ``only`` names read in full (all if None).

    A name in ``only`` may be a unique prefix of an id, as tools accept; with ``exact`` (the snapshot
    after a call, given the ids the one before found) only whole ids: a cell the call deleted is not
    looked for as a prefix of every other id, a scan in Python of the whole notebook.
    """
    order = nb.ids(doc)
    indices = range(len(order)) if only is None else _positions(order, only, exact=exact)
    cells = {}
    with doc.ydoc.transaction():
        for i in indices:
            ycell = nb.cell_at(doc, i)
            youtputs = nb.item(ycell, "outputs")
            meta = nb.item(ycell, "metadata")
            full = None
            if whole:
                full = ycell.to_py()
                full.pop("execution_state", None)
            cells[order[i]] = CellState(
                id=order[i],
                type=str(nb.item(ycell, "cell_type") or ""),
                source=str(nb.item(ycell, "source") or ""),
                metadata=meta.to_py() if isinstance(meta, Map) else dict(meta or {}),
                execution_count=nb.item(ycell, "execution_count"),
                outputs=len(youtputs) if isinstance(youtputs, Array) else 0,
                whole=full,
            )
    return Snapshot(order, cells)


def diff(
    before: Snapshot,
    after: Snapshot,
    *,
    run: bool = False,
    ran: bool = False,
    inserted: dict[str, str] | None = None,
    came_went: tuple[set[str], set[str]] | None = None,
) -> list[Change]:
    """The changes that turn ``before`` into ``after``, each a thing a revert can undo on its own.

    ``run``: the call ran code, and may have waited long enough for people to edit meanwhile; only
    the cells it inserted and the outputs it produced are its changes; ``ran``: it succeeded, so every
    code cell it named has run or is running, whether or not its outputs have changed yet;
    ``inserted``: new cells' sources as the call inserted them (a person may have typed in one since);
    ``came_went``: ``came_and_went(before.order, after.order)``, when the caller has it already.
    """
    # List operations (in C) rather than a Python loop over every cell: a call touches a few cells,
    # and its cost should not grow with the notebook.
    added, gone = came_went if came_went is not None else came_and_went(before.order, after.order)
    changes: list[Change] = []
    for j in _indices(after.order, [cid for cid in added if cid in after.cells]):
        cid = after.order[j]
        source = (inserted or {}).get(cid, after.cells[cid].source)
        changes.append(Change("insert", cid, None, source, {"index": j}))
    if not run:
        for i in _indices(before.order, [cid for cid in gone if cid in before.cells]):
            cell = before.cells[before.order[i]]  # an unread cell was not the call's to delete
            undo = {"index": i, "cell": _restorable(cell), "neighbours": _neighbours(before.order, i)}
            changes.append(Change("delete", cell.id, cell.source, None, undo))
        changes += _moves(
            before.order, after.order, _without(before.order, gone), _without(after.order, added)
        )
    for cid, cell in after.cells.items():
        was = before.cells.get(cid)
        if was is None:
            continue
        if not run and (was.source, was.type, was.metadata) != (cell.source, cell.type, cell.metadata):
            undo = {"type": [was.type, cell.type], "metadata": [was.metadata, cell.metadata]}
            changes.append(Change("update", cid, was.source, cell.source, undo))
        outputs_changed = (was.execution_count, was.outputs) != (cell.execution_count, cell.outputs)
        if outputs_changed or (ran and cell.type == "code"):  # a run that outlived its call writes later
            now = _outputs_text(cell) if outputs_changed else "running"
            undo = {"run": True} if run else {"revertible": False, "why": CLEARED}
            changes.append(Change("outputs", cid, _outputs_text(was), now, undo))
    return changes


def _moves(
    before: list[str], after: list[str], kept_before: list[str], kept_after: list[str]
) -> list[Change]:
    """Cells whose order among the cells both snapshots hold changed: those outside the longest
    runs kept in order. The common start and end are in place; only the rest is matched."""
    if kept_before == kept_after:
        return []
    start, tail = _common_ends(kept_before, kept_after)
    middle_before = kept_before[start : len(kept_before) - tail]
    middle_after = kept_after[start : len(kept_after) - tail]
    matcher = SequenceMatcher(None, middle_before, middle_after, autojunk=False)
    in_place = {
        cid
        for block in matcher.get_matching_blocks()
        for cid in middle_before[block.a : block.a + block.size]
    }
    moved = [cid for cid in middle_after if cid not in in_place]
    olds, news = _indices(before, moved, keep_order=True), _indices(after, moved, keep_order=True)
    return [
        Change(
            "move", cid, f"at index {i}", f"at index {j}", {"index": i, "neighbours": _neighbours(before, i)}
        )
        for cid, i, j in zip(moved, olds, news, strict=True)
    ]


def came_and_went(before: list[str], after: list[str]) -> tuple[set[str], set[str]]:
    """The ids in ``after`` and not in ``before``, and the other way round. Only the part between
    the common start and end can differ, and a call changes a few cells: sets of the whole notebook
    (four of 2,000 ids per insert, 0.3 ms) only when that part is large."""
    if before == after:  # the usual case: no cell came, went or moved
        return set(), set()
    start, tail = _common_ends(before, after)
    middle_before, middle_after = before[start : len(before) - tail], after[start : len(after) - tail]
    if len(middle_before) + len(middle_after) > 64:
        had, has = set(before), set(after)
        return has - had, had - has
    had, has = set(middle_before), set(middle_after)
    # An id outside the middle may still repeat one inside it (ids are unique only by convention).
    added = {cid for cid in has - had if cid not in before}
    gone = {cid for cid in had - has if cid not in after}
    return added, gone


def _common_ends(a: list[str], b: list[str]) -> tuple[int, int]:
    """The lengths of the common start and end of ``a`` and ``b`` (not overlapping), found by C
    iterators up to the first difference from each end (the ids are mostly the same objects in both
    lists, so each one compares by identity) rather than by a loop in Python."""
    shorter = min(len(a), len(b))
    start = next(compress(count(), map(ne, a, b)), shorter)
    tail = next(compress(count(), map(ne, reversed(a), reversed(b))), shorter)
    return start, min(tail, shorter - start)


def _indices(order: list[str], ids: list[str], *, keep_order: bool = False) -> list[int]:
    """The positions of ``ids`` in ``order``, sorted (or in the order of ``ids``): by ``index`` (in C)
    for a few, through a map for many, so that neither a big notebook nor a big change is quadratic."""
    if len(ids) > 64:
        at = {cid: i for i, cid in enumerate(order)}
        found = [at[cid] for cid in ids]
    else:
        found = [order.index(cid) for cid in ids]
    return found if keep_order else sorted(found)


def _without(order: list[str], drop: set[str]) -> list[str]:
    """``order`` less the ids in ``drop`` (a few, usually): removed by position, not by a scan in Python."""
    if not drop:
        return order
    if len(drop) > 64:
        return [cid for cid in order if cid not in drop]
    kept = list(order)
    for i in sorted((order.index(cid) for cid in drop), reverse=True):
        del kept[i]
    return kept


def _positions(order: list[str], only: set[str], *, exact: bool = False) -> list[int]:
    """The positions of the cells ``only`` names (an id, or a unique-enough prefix of one unless
    ``exact``)."""
    found: set[int] = set()
    present = set(order) if len(only) > 8 else None
    for name in only:
        if present is None or name in present:
            try:  # one scan in C (``in`` then ``index`` took two)
                found.add(order.index(name))
                continue
            except ValueError:
                pass
        if not exact and len(name) >= 4:
            found.update(i for i, cid in enumerate(order) if cid.startswith(name))
    return sorted(found)


def _neighbours(order: list[str], i: int) -> list[str | None]:
    """The ids just before and after position ``i``: where a cell goes back to."""
    return [order[i - 1] if i > 0 else None, order[i + 1] if i + 1 < len(order) else None]


def _restorable(cell: CellState) -> dict[str, Any]:
    if cell.whole is not None:
        if len(json.dumps(cell.whole.get("outputs") or [])) <= MAX_KEPT_OUTPUTS:
            return cell.whole
        return {**cell.whole, "outputs": [], "execution_count": None}  # too large to keep in memory
    restored: dict[str, Any] = {
        "id": cell.id,
        "cell_type": cell.type,
        "source": cell.source,
        "metadata": cell.metadata,
    }
    if cell.type == "code":
        restored.update(outputs=[], execution_count=None)
    return restored


def _outputs_text(cell: CellState) -> str | None:
    if cell.outputs == 0 and cell.execution_count is None:
        return None
    count = f"[{cell.execution_count}] " if cell.execution_count is not None else ""
    return f"{count}{cell.outputs} output{'s' if cell.outputs != 1 else ''}"
