"""What a call changed in a notebook: a snapshot of its cells before and after, compared by cell id.

Tools stay unaware of the journal: the call pipeline snapshots a notebook when a tool opens it and
again when the call ends. A snapshot reads each cell once, in one transaction, with no ``await``
between the tool's open and the snapshot, so what it sees is what the tool started from.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from pycrdt import Array, Map

from .journal import Change

# Tools that may delete cells: their snapshots keep whole cells (outputs too), so a revert can put a
# deleted cell back as it was. Other snapshots skip outputs, which can be megabytes.
KEEPS_WHOLE_CELLS = frozenset({"delete_cells", "write_notebook_text"})


@dataclass
class CellState:
    id: str
    type: str
    source: str
    metadata: dict[str, Any]
    execution_count: Any
    outputs: int
    whole: dict[str, Any] | None = None  # the nbformat cell, when the snapshot keeps whole cells


def snapshot(doc: Any, *, whole: bool = False) -> list[CellState]:
    """Every cell of a live notebook, in order."""
    cells = []
    with doc.ydoc.transaction():
        for ycell in doc.ycells:
            youtputs = _item(ycell, "outputs")
            meta = _item(ycell, "metadata")
            full = None
            if whole:
                full = ycell.to_py()
                full.pop("execution_state", None)
            cells.append(
                CellState(
                    id=str(_item(ycell, "id") or ""),
                    type=str(_item(ycell, "cell_type") or ""),
                    source=str(_item(ycell, "source") or ""),
                    metadata=meta.to_py() if isinstance(meta, Map) else dict(meta or {}),
                    execution_count=_item(ycell, "execution_count"),
                    outputs=len(youtputs) if isinstance(youtputs, Array) else 0,
                    whole=full,
                )
            )
    return cells


def diff(before: list[CellState], after: list[CellState], *, run: bool = False) -> list[Change]:
    """The changes that turn ``before`` into ``after``, each a thing a revert can undo on its own.

    ``run``: the call ran code, and may have waited long enough for people to edit meanwhile; only
    the cells it inserted and the outputs it produced are its changes.
    """
    old = {c.id: (i, c) for i, c in enumerate(before)}
    new = {c.id: (i, c) for i, c in enumerate(after)}
    order_before = [c.id for c in before]
    changes: list[Change] = []
    for i, cell in enumerate(after):
        if cell.id not in old:
            changes.append(Change("insert", cell.id, None, cell.source, {"index": i}))
    if not run:
        for i, cell in enumerate(before):
            if cell.id not in new:
                changes.append(
                    Change(
                        "delete",
                        cell.id,
                        cell.source,
                        None,
                        {"index": i, "cell": _restorable(cell), "neighbours": _neighbours(order_before, i)},
                    )
                )
        changes += _moves(before, after, old, new)
    for cell in after:
        if cell.id not in old:
            continue
        was = old[cell.id][1]
        if not run and (was.source, was.type, was.metadata) != (cell.source, cell.type, cell.metadata):
            undo = {"type": [was.type, cell.type], "metadata": [was.metadata, cell.metadata]}
            changes.append(Change("update", cell.id, was.source, cell.source, undo))
        if (was.execution_count, was.outputs) != (cell.execution_count, cell.outputs):
            changes.append(Change("outputs", cell.id, _outputs_text(was), _outputs_text(cell), {"run": run}))
    return changes


def _moves(
    before: list[CellState], after: list[CellState], old: dict[str, Any], new: dict[str, Any]
) -> list[Change]:
    """Cells whose order among the cells both snapshots hold changed: those outside the longest
    runs kept in order."""
    kept_before = [c.id for c in before if c.id in new]
    kept_after = [c.id for c in after if c.id in old]
    if kept_before == kept_after:
        return []
    matcher = SequenceMatcher(None, kept_before, kept_after, autojunk=False)
    in_place = {
        cid for block in matcher.get_matching_blocks() for cid in kept_before[block.a : block.a + block.size]
    }
    order_before = [c.id for c in before]
    moves = []
    for cid in kept_after:
        if cid not in in_place:
            i, j = old[cid][0], new[cid][0]
            undo = {"index": i, "neighbours": _neighbours(order_before, i)}
            moves.append(Change("move", cid, f"at index {i}", f"at index {j}", undo))
    return moves


def _neighbours(order: list[str], i: int) -> list[str | None]:
    """The ids just before and after position ``i``: where a cell goes back to."""
    return [order[i - 1] if i > 0 else None, order[i + 1] if i + 1 < len(order) else None]


def _restorable(cell: CellState) -> dict[str, Any]:
    if cell.whole is not None:
        return cell.whole
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


def _item(ycell: Map, key: str) -> Any:
    try:  # item access: Map.get lists the keys first
        return ycell[key]
    except KeyError:
        return None
