"""Reading and editing the cells of a live shared notebook (a ``jupyter_ydoc.YNotebook``).

Everything here is synchronous on purpose: between reading a cell and writing it there is no
``await``, so no other client's update can land in between. Edits go in as the smallest change
to the shared data (a splice of the text, not a rewrite), so a person typing in the same cell keeps
their cursor and keystrokes. Cells are addressed by their nbformat id; indices are only positions
(finding them is ``cell_ids``'s job; its lookups are re-exported here, the one module tools call).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import Array, Map, Text

from ..errors import ToolError
from . import activity, own_edits, storable
from .cell_ids import cell_at as cell_at
from .cell_ids import find as find
from .cell_ids import find_all as find_all
from .cell_ids import id_of as id_of
from .cell_ids import ids as ids
from .cell_ids import index_of as index_of
from .cell_ids import maps, remember
from .cell_ids import new_id as new_id
from .cell_ids import position as position
from .merge import Edit, edits
from .splices import apply_edits, splice
from .storable import check_source_size

CELL_TYPES = ("code", "markdown", "raw")


def mark_dirty(doc: Any) -> None:
    """Flag unsaved changes, as a tab does. Only when not flagged already: every write of the flag
    is an update that each peer receives and the collaboration store keeps."""
    if doc.dirty is not True:
        doc.dirty = True


def summary(doc: YNotebook, i: int) -> dict[str, Any]:
    """What the outline says about a cell (outputs are summarised by the caller)."""
    return _summary(cell_at(doc, i), i)


def summaries(
    doc: YNotebook, first_outputs: int = 3
) -> list[tuple[dict[str, Any], list[dict[str, Any]], int]]:
    """Every cell's summary, its first outputs and its output count, read in one transaction.

    The outline of a 500-cell notebook reads thousands of shared values; one transaction and item
    access (not ``Map.get``, which lists keys first) halve what that costs.
    """
    with doc.ydoc.transaction():
        return [outline_row(doc, i, first_outputs) for i in range(len(doc.ycells))]


def outline_row(
    doc: YNotebook, i: int, first_outputs: int = 3
) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """One cell's summary, its first outputs and its output count (inside the caller's transaction)."""
    ycell = cell_at(doc, i)
    head = _summary(ycell, i)
    youtputs = item(ycell, "outputs") if head["type"] == "code" else None
    count = len(youtputs) if isinstance(youtputs, Array) else 0
    first = [youtputs[k].to_py() for k in range(min(first_outputs, count))] if count else []
    return head, first, count


FIRST_LINE_CHARS = 80  # of a cell's first line in outlines: enough to recognise it


def _summary(ycell: Map, i: int) -> dict[str, Any]:
    source = str(ycell["source"])
    first = source.partition("\n")[0]
    lines = 0 if not source else source.count("\n") + (not source.endswith("\n"))
    return {
        "id": id_of(ycell),
        "index": i,
        "type": item(ycell, "cell_type"),
        "execution_count": _int_or_none(item(ycell, "execution_count")),
        "first_line": _clip(first.rstrip("\r"), FIRST_LINE_CHARS),
        "lines": lines,
    }


def _clip(line: str, width: int) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"


def item(ycell: Map, key: str) -> Any:
    """The cell's ``key``, or None: by item access, as ``Map.get`` lists every key first."""
    try:
        return ycell[key]
    except KeyError:
        return None


def source(doc: YNotebook, i: int) -> str:
    return str(cell_at(doc, i)["source"])


def sources(doc: YNotebook, indices: Iterable[int], *, code_only: bool = False) -> list[tuple[str, str]]:
    """(id, source) of the cells at ``indices``, in that order; only code cells with ``code_only``.

    What a gated call acts on, as a person approving it is shown it and as the tool then reads it.
    """
    all_ids = ids(doc)
    return [
        (all_ids[i], source(doc, i))
        for i in indices
        if not code_only or doc.ycells[i].get("cell_type") == "code"
    ]


def outputs(doc: YNotebook, i: int) -> list[dict[str, Any]]:
    youtputs = cell_at(doc, i).get("outputs")
    return youtputs.to_py() if isinstance(youtputs, Array) else []


def kernel_info(doc: YNotebook) -> tuple[str | None, str | None]:
    """(kernelspec name, language) from the notebook metadata: only those two entries are read, since
    every run asks and the rest of the metadata (widget state, say) can be large."""
    meta = doc.ydoc.get("meta", type=Map).get("metadata")
    kernelspec, language_info = _entry(meta, "kernelspec"), _entry(meta, "language_info")
    language = language_info.get("name") or kernelspec.get("language")
    return kernelspec.get("name"), language


def _entry(meta: Any, key: str) -> dict[str, Any]:
    value = meta.get(key) if isinstance(meta, (Map, dict)) else None
    value = value.to_py() if isinstance(value, Map) else value
    return value if isinstance(value, dict) else {}


def check_cell_type(cell_type: str) -> None:
    if cell_type not in CELL_TYPES:
        raise ToolError(f"Unknown cell_type '{cell_type}'. Use one of: code, markdown, raw.")


def as_json(doc: YNotebook) -> dict[str, Any]:
    """The notebook as nbformat JSON, or a ToolError saying where a NaN or Infinity stops it (one
    can come from a file or a person; jupyter_ydoc then fails on it, and so does every save)."""
    try:
        return doc.get()
    except (OverflowError, ValueError):
        meta = doc.ydoc.get("meta", type=Map).to_py()
        where = storable.nonfinite_at({"cells": doc.ycells.to_py(), **(meta or {})})
        if where is None:
            raise
    raise ToolError(not_json(where))


def not_json(where: str) -> str:
    return (
        f"The notebook holds NaN or Infinity at '{where}': JSON cannot carry it and Jupyter cannot save "
        "the notebook while it is there. Remove or replace that value (update_cell with the metadata "
        "key set to null), then read again."
    )


def insert(doc: YNotebook, at: int, cells: list[dict[str, Any]]) -> list[str]:
    """Insert cells at ``at`` in one transaction; returns their new ids."""
    before, handles = ids(doc), maps(doc)
    # A few new ids are looked for in the list (a scan in C); many, in a set of it (0.3 ms on 2,000).
    taken: set[str] | list[str] = set(before) if len(cells) > 8 else before
    new_ids: list[str] = []
    new_cells: list[Map] = []
    with doc.ydoc.transaction():
        for offset, spec in enumerate(cells):
            cell_id = new_id(taken, new_ids)
            cell: dict[str, Any] = {
                "id": cell_id,
                "cell_type": spec["cell_type"],
                "source": spec.get("source", ""),
                "metadata": dict(spec.get("metadata") or {}),
            }
            if cell["cell_type"] == "code":
                cell.update(outputs=[], execution_count=None)
            ycell = doc.create_ycell(cell)
            doc.ycells.insert(at + offset, ycell)  # the map itself becomes the cell's handle
            own_edits.inserted(cell_id, cell["source"])
            new_ids.append(cell_id)
            new_cells.append(ycell)
        mark_dirty(doc)
    kept = handles[:at] + new_cells + handles[at:] if handles is not None else None
    remember(doc, before[:at] + new_ids + before[at:], kept)
    return new_ids


def set_source(doc: YNotebook, i: int, new: str) -> None:
    """Replace a cell's source with the smallest splices that turn it into ``new``."""
    text: Text = doc.ycells[i]["source"]
    with activity.own_write(doc), doc.ydoc.transaction():
        splice(text, str(text), new)
        mark_dirty(doc)


def apply_to_cell(doc: YNotebook, i: int, current: str, changes: list[Edit]) -> None:
    """Splice edits computed against ``current`` (the cell's source now) into the cell."""
    if not changes:
        return
    with activity.own_write(doc), doc.ydoc.transaction():
        apply_edits(doc.ycells[i]["source"], current, changes)
        mark_dirty(doc)


def replace_once(doc: YNotebook, i: int, old: str, new: str, *, limit: int | None = None) -> str:
    """Replace the one occurrence of ``old`` in the cell's source (that stays within ``limit``
    characters); returns the new source."""
    text: Text = doc.ycells[i]["source"]
    current = str(text)
    if not old:
        raise ToolError(
            "old_string is empty; give the exact text to replace, or pass 'source' to replace it all."
        )
    count = current.count(old)
    if count == 0:
        raise ToolError(
            "old_string was not found in the cell (it may have changed). "
            "read_cells shows its current source; copy the text exactly, including whitespace."
        )
    if count > 1:
        raise ToolError(
            f"old_string occurs {count} times in the cell; include more surrounding text so it is unique."
        )
    start = current.index(old)
    updated = current[:start] + new + current[start + len(old) :]
    if limit is not None:
        check_source_size(updated, limit)
    with activity.own_write(doc), doc.ydoc.transaction():
        # Splice only what differs in the replaced span, so the rest (and any cursor in it) stays.
        apply_edits(text, current, [Edit(start + e.start, start + e.end, e.text) for e in edits(old, new)])
        mark_dirty(doc)
    return updated


def set_type(doc: YNotebook, i: int, cell_type: str) -> None:
    """Change a cell's type, keeping id, source and metadata (outputs only survive as code)."""
    ycell = doc.ycells[i]
    if ycell.get("cell_type") == cell_type:
        return
    cell = {
        "id": ycell.get("id"),
        "cell_type": cell_type,
        "source": str(ycell["source"]),
        "metadata": ycell["metadata"].to_py() if isinstance(ycell.get("metadata"), Map) else {},
    }
    if cell_type == "code":
        cell.update(outputs=[], execution_count=None)
    order, handles = ids(doc), maps(doc)
    with doc.ydoc.transaction():
        doc.set_cell(i, cell)
        mark_dirty(doc)
    if handles is not None:
        handles[i] = doc.ycells[i]  # set_cell put a new map there
    remember(doc, order, handles)


def update_metadata(doc: YNotebook, i: int, patch: dict[str, Any]) -> None:
    """Set the given metadata keys; a key set to null is removed."""
    ycell = doc.ycells[i]
    with doc.ydoc.transaction():
        meta = ycell.get("metadata")
        if not isinstance(meta, Map):
            ycell["metadata"] = meta = Map()
        for key, value in patch.items():
            if value is None:
                if key in meta:
                    del meta[key]
            else:
                meta[key] = value
        mark_dirty(doc)


def delete(doc: YNotebook, indices: list[int]) -> None:
    before, handles, gone = ids(doc), maps(doc), set(indices)
    with doc.ydoc.transaction():
        for i in sorted(gone, reverse=True):
            del doc.ycells[i]
        mark_dirty(doc)
    if len(gone) > 64:
        left = [i for i in range(len(before)) if i not in gone]
        remember(doc, [before[i] for i in left], [handles[i] for i in left] if handles is not None else None)
    else:  # a few: taken out by position (in C), not by a Python loop over every cell
        for i in sorted(gone, reverse=True):
            del before[i]
            if handles is not None:
                del handles[i]
        remember(doc, before, handles)


def move(doc: YNotebook, src: int, dest: int) -> int:
    """Move a cell to position ``dest`` (counted before the move); returns its new index.

    Shared arrays have no move that JupyterLab can decode, so the cell is deleted and re-created
    with the same id, source, outputs and metadata, in one transaction.
    """
    last = len(doc.ycells) - 1
    target = min(dest - 1 if dest > src else dest, last)  # checked before anything is deleted
    if target == src:
        return src
    cell = cell_at(doc, src).to_py()
    cell.pop("execution_state", None)
    order, handles = ids(doc), maps(doc)
    ycell = doc.create_ycell(cell)
    with doc.ydoc.transaction():
        del doc.ycells[src]
        doc.ycells.insert(target, ycell)
        mark_dirty(doc)
    order.insert(target, order.pop(src))
    if handles is not None:
        handles.pop(src)
        handles.insert(target, ycell)
    remember(doc, order, handles)
    return target


def clear_outputs(doc: YNotebook, indices: list[int]) -> int:
    """Clear outputs and execution counts; returns how many cells had something to clear."""
    cleared = 0
    with doc.ydoc.transaction():
        for i in indices:
            ycell = doc.ycells[i]
            if ycell.get("cell_type") != "code":
                continue
            youtputs = ycell.get("outputs")
            if (isinstance(youtputs, Array) and len(youtputs)) or ycell.get("execution_count") is not None:
                cleared += 1
            if isinstance(youtputs, Array):
                youtputs.clear()
            else:
                ycell["outputs"] = Array()
            ycell["execution_count"] = None
        if cleared:
            mark_dirty(doc)
    return cleared


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) else None
