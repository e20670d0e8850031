"""What a call changed in a notebook: a snapshot of its cells before and after, compared by cell id.

Tools stay unaware of the journal: the call pipeline snapshots a notebook when a tool opens it and
again when the call ends. A snapshot reads each cell once, in one transaction, with no ``await``
between the tool's open and the snapshot, so what it sees is what the tool started from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from difflib import SequenceMatcher
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
    if getattr(args, "all", False):
        return None
    named = [getattr(args, "cell_id", None), *(getattr(args, "cell_ids", None) or [])]
    named = [n for n in named if isinstance(n, str)]
    return set(named) if named else None


def snapshot(doc: Any, only: set[str] | None = None, *, whole: bool = False) -> Snapshot:
    """The cell order of a live notebook, and the cells ``only`` names read in full (all if None).

    A name in ``only`` may be a unique prefix of an id, as tools accept.
    """
    order = nb.ids(doc)
    if only is None:
        indices = range(len(order))
    else:
        at = {cid: i for i, cid in enumerate(order)}
        indices = sorted(
            {at[n] for n in only if n in at}
            | {
                i
                for n in only
                if n not in at and len(n) >= 4
                for i, cid in enumerate(order)
                if cid.startswith(n)
            }
        )
    cells = {}
    with doc.ydoc.transaction():
        for i in indices:
            ycell = doc.ycells[i]
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


def diff(before: Snapshot, after: Snapshot, *, run: bool = False, ran: bool = False) -> list[Change]:
    """The changes that turn ``before`` into ``after``, each a thing a revert can undo on its own.

    ``run``: the call ran code, and may have waited long enough for people to edit meanwhile; only
    the cells it inserted and the outputs it produced are its changes; ``ran``: it succeeded, so every
    code cell it named has run or is running, whether or not its outputs have changed yet.
    """
    old = {cid: i for i, cid in enumerate(before.order)}
    new = {cid: i for i, cid in enumerate(after.order)}
    changes: list[Change] = []
    for j, cid in enumerate(after.order):
        if cid not in old and cid in after.cells:
            changes.append(Change("insert", cid, None, after.cells[cid].source, {"index": j}))
    if not run:
        for i, cid in enumerate(before.order):
            cell = before.cells.get(cid)
            if cid not in new and cell is not None:  # an unread cell was not the call's to delete
                undo = {"index": i, "cell": _restorable(cell), "neighbours": _neighbours(before.order, i)}
                changes.append(Change("delete", cid, cell.source, None, undo))
        changes += _moves(before.order, after.order, old, new)
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


def _moves(before: list[str], after: list[str], old: dict[str, int], new: dict[str, int]) -> list[Change]:
    """Cells whose order among the cells both snapshots hold changed: those outside the longest
    runs kept in order."""
    kept_before = [cid for cid in before if cid in new]
    kept_after = [cid for cid in after if cid in old]
    if kept_before == kept_after:
        return []
    matcher = SequenceMatcher(None, kept_before, kept_after, autojunk=False)
    in_place = {
        cid for block in matcher.get_matching_blocks() for cid in kept_before[block.a : block.a + block.size]
    }
    moves = []
    for cid in kept_after:
        if cid not in in_place:
            i, j = old[cid], new[cid]
            undo = {"index": i, "neighbours": _neighbours(before, i)}
            moves.append(Change("move", cid, f"at index {i}", f"at index {j}", undo))
    return moves


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
