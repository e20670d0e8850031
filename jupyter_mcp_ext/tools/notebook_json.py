"""A notebook's JSON for ``resources/read``: within ``max_result_bytes``, read without stalling the loop.

A notebook that fits is given whole. A larger one (cells with MBs of outputs, huge sources, thousands
of cells) stays valid nbformat with its shape: every cell given keeps its id, type and metadata;
sources and outputs share the bytes, small ones whole and only the largest cut, each cut saying how
much went and how to read the rest (``read_cells`` with the cell's id); cells past what even that
allows are left out. The notebook's metadata then starts with ``jupyter_mcp_ext.cut``, saying what
was cut. Cells are read one slice of a few milliseconds at a time (``bounds.in_slices``), a cell of
thousands of outputs over several, so the person's server keeps answering while a large notebook is
read; a notebook read from disk (plain JSON, nobody else's) is gone through in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from jupyter_ydoc import YNotebook
from jupyter_ydoc.utils import cast_all
from pycrdt import Array, Map, Text

from ..documents import cells as nb
from ..documents import storable
from ..errors import ToolError
from .bounds import Unfinished, cut_text, in_slices, json_bytes, shrink, slice_over
from .outputs import as_text

T = TypeVar("T")

CELL_META_BYTES = 1000  # a cell's metadata past this is cut in a notebook too large to give whole
NOTEBOOK_META_BYTES = 4000
_MARKER = 220  # bytes a cut's marker takes (cell id and sizes included)
SHORT = 1000  # bytes of source, and of outputs, a cell shows at least when it is given
UNREAD = "jupyter_mcp_ext:unread_outputs"  # in a live cell read in part: outputs left unread
HOW = "read_cells with {which} reads this cell"


@dataclass
class _Size:
    """What one cell costs as JSON, measured in the first pass."""

    frame: int  # the cell without its source, outputs and attachments
    source: int
    outputs: int


async def notebook_json(doc: YNotebook | None, stored: dict[str, Any] | None, limit: int) -> str:
    """The notebook (the live ``doc``, else ``stored`` as read from disk) as JSON of at most ``limit``
    bytes; a ToolError if it holds NaN or Infinity (JSON cannot carry them)."""
    meta, each = _reader(doc, stored)
    sizes = await each(lambda cell, i: _size_of(cell, limit), limit)
    whole = sum(s.frame + s.source + s.outputs for s in sizes) + json_bytes(meta, stop_above=limit)
    if whole <= limit:
        notebook = _notebook(meta, await each(lambda cell, i: cell, limit))
        text = json.dumps(notebook, indent=1, ensure_ascii=False)
        if len(text.encode()) <= limit:
            return text
        text = json.dumps(notebook, ensure_ascii=False)
        if len(text.encode()) <= limit:
            return text
    budget = limit - limit // 16
    for _ in range(4):  # the plan is an estimate: a cell added meanwhile, or escapes, may overshoot it
        plan = _Plan(sizes, budget - json_bytes(_small(meta, NOTEBOOK_META_BYTES)) - 2 * _MARKER)
        cells = [c for c in await each(plan.cut, plan.outputs_cap) if c is not None]
        notebook = _notebook(_small(meta, NOTEBOOK_META_BYTES), cells, plan.note(len(cells), len(sizes)))
        text = json.dumps(notebook, ensure_ascii=False)
        if len(text.encode()) <= limit:
            return text
        budget = budget * 3 // 4
    note = "every cell left out: get_notebook gives the outline, read_cells reads cells"
    return json.dumps(_notebook(_small(meta, NOTEBOOK_META_BYTES), [], note))


Read = Callable[[dict[str, Any], int], T]


def _reader(
    doc: YNotebook | None, stored: dict[str, Any] | None
) -> tuple[dict[str, Any], Callable[[Read[T], int], Any]]:
    """The notebook's top-level fields, and a way to map every cell (in slices) as nbformat dicts,
    given how many bytes of a cell's outputs the mapping needs at most."""
    if doc is not None:
        ymeta = _checked(doc.ydoc.get("meta", type=Map).to_py() or {}, "metadata")
        meta = cast_all(ymeta, float, int)

        def each_live(read: Read[T], stop: int) -> Any:
            outputs = _Outputs(doc)
            return in_slices(doc, lambda i: read(_live_cell(doc, i, meta, stop, outputs), i))

        return meta, each_live
    assert stored is not None
    meta = {k: v for k, v in stored.items() if k != "cells"}
    cells = stored.get("cells") or []
    _checked(meta, "metadata")

    async def each_stored(read: Read[T], stop: int) -> list[T]:
        # Plain JSON of this call's own: off the loop, where one cell of thousands of outputs cannot
        # hold it (the thread gives the interpreter lock back every few milliseconds).
        return await asyncio.to_thread(
            lambda: [read(_checked(c, f"cells[{i}]"), i) for i, c in enumerate(cells)]
        )

    return meta, each_stored


class _Outputs:
    """A live cell's outputs read a few at a time over slices (one cell may hold thousands, at tens
    of microseconds each): what was read is kept while the document stays as it was, and read again
    if it changed during a pause; after three such changes, in one go."""

    def __init__(self, doc: YNotebook) -> None:
        self.doc = doc
        self.at: tuple[int, bytes] | None = None  # the cell and document state the progress belongs to
        self.read: list[dict[str, Any]] = []
        self.size = 0
        self.changed = 0

    def upto(self, i: int, youtputs: Array, stop: int) -> list[dict[str, Any]]:
        """Cell ``i``'s outputs, one by one until past ``stop`` bytes; ``Unfinished`` if the slice ran out."""
        state = self.doc.ydoc.get_state()
        if self.at is None or self.at != (i, state):
            self.changed += self.at is not None and self.at[0] == i
            self.read, self.size = [], 0
        while len(self.read) < len(youtputs) and self.size <= stop:
            self.read.append(_py(youtputs[len(self.read)]))
            self.size += json_bytes(self.read[-1], stop_above=stop)
            if slice_over() and self.changed < 3 and len(self.read) < len(youtputs):
                self.at = (i, state)
                raise Unfinished
        read, self.at, self.read, self.changed = self.read, None, [], 0
        return read


def _live_cell(doc: YNotebook, i: int, meta: dict[str, Any], stop: int, outputs: _Outputs) -> dict[str, Any]:
    """Cell ``i`` as nbformat, as ``YNotebook.get`` gives it (its per-cell step, ``_cell_to_py``, is
    private), but with its outputs read one by one only until past ``stop`` bytes: a cell may hold
    thousands, and converting them all would hold the loop for seconds. How many were left unread
    goes in ``UNREAD``."""
    ycell = doc.ycells[i]
    youtputs = ycell.get("outputs")
    read = outputs.upto(i, youtputs, stop) if isinstance(youtputs, Array) else None
    cell = {key: _py(value) for key, value in ycell.items() if key not in ("outputs", "execution_state")}
    if read is not None:
        cell["outputs"] = read
        if len(read) < len(youtputs):
            cell[UNREAD] = len(youtputs) - len(read)
    _checked(cell, f"cells[{i}]")
    cast_all(cell, float, int)
    if "id" in cell and int(meta.get("nbformat", 0)) == 4 and int(meta.get("nbformat_minor", 0)) <= 4:
        del cell["id"]
    if cell.get("cell_type") in ("raw", "markdown") and not cell.get("attachments", True):
        del cell["attachments"]
    return cell


def _py(value: Any) -> Any:
    return value.to_py() if isinstance(value, (Map, Array, Text)) else value


def _checked(value: Any, where: str) -> Any:
    if (found := storable.nonfinite_at(value, where)) is not None:
        raise ToolError(nb.not_json(found))
    return value


def _notebook(meta: dict[str, Any], cells: list[dict[str, Any]], note: str | None = None) -> dict[str, Any]:
    metadata = dict(meta.get("metadata") or {})
    if note is not None:  # first, so a reader sees it before any cell
        metadata = {"jupyter_mcp_ext": {"cut": note}, **metadata}
    return {
        "metadata": metadata,
        "nbformat": int(meta.get("nbformat", 4)),
        "nbformat_minor": int(meta.get("nbformat_minor", 5)),
        "cells": cells,
    }


def _frame(cell: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cell.items() if k not in ("source", "outputs", "attachments", UNREAD)}


def _size_of(cell: dict[str, Any], limit: int) -> _Size:
    """Counted only up to ``limit``: past it, a part is cut whatever its size."""
    return _Size(
        json_bytes(_frame(cell), stop_above=limit)
        + json_bytes(cell.get("attachments") or {}, stop_above=limit),
        json_bytes(as_text(cell.get("source")), stop_above=limit),
        json_bytes(cell.get("outputs") or [], stop_above=limit),
    )


def _small(value: dict[str, Any], room: int) -> dict[str, Any]:
    return value if json_bytes(value, stop_above=room) <= room else shrink(value, room)[0]


def _fill(sizes: list[int], budget: int) -> int:
    """The largest cap with ``sum(min(size, cap))`` and a marker for each item cut within ``budget``:
    small items whole, the largest cut to the same length."""
    cap = 1 << 62
    for _ in range(3):  # the markers of the items cut take room too
        room, rest = budget - _MARKER * sum(size > cap for size in sizes), len(sizes)
        for size in sorted(sizes):
            if size * rest > room:
                cap = max(0, room // rest)
                break
            room -= size
            rest -= 1
    return cap


class _Plan:
    """How many bytes each cell's source and outputs may take, from the sizes the first pass measured."""

    def __init__(self, sizes: list[_Size], budget: int):
        # Cells are given in order while each fits with a short source and outputs (cut where longer).
        floors = [
            min(s.frame, CELL_META_BYTES + 100)
            + sum(min(size, SHORT) + _MARKER * (size > SHORT) for size in (s.source, s.outputs))
            for s in sizes
        ]
        self.kept, used = 0, 0
        while self.kept < len(sizes) and used + floors[self.kept] <= budget:
            used += floors[self.kept]
            self.kept += 1
        kept = sizes[: self.kept]
        rest = budget - sum(min(s.frame, CELL_META_BYTES + 100) for s in kept)
        share = rest * 2 // 3 if any(s.outputs > 2 for s in kept) else rest
        self.source_cap = _fill([s.source for s in kept], share)
        sources = sum(min(s.source, self.source_cap) + _MARKER * (s.source > self.source_cap) for s in kept)
        self.outputs_cap = _fill([s.outputs for s in kept], rest - sources)
        self.sources_cut = self.outputs_cut = 0

    def cut(self, cell: dict[str, Any], i: int) -> dict[str, Any] | None:
        """Cell ``i`` within its share; None past the cells kept."""
        if i >= self.kept:
            return None
        which = f"cell_ids=['{cell['id']}']" if cell.get("id") else f"start={i}, end={i + 1}"
        how = HOW.format(which=which)
        out = _frame(cell)
        if json_bytes(cell.get("metadata") or {}, stop_above=CELL_META_BYTES) > CELL_META_BYTES:
            out["metadata"] = shrink(cell["metadata"], CELL_META_BYTES)[0]
        source = as_text(cell.get("source"))
        if len(source.encode()) > self.source_cap:
            self.sources_cut += 1
            kept = cut_text(source, self.source_cap)
            source = f"{kept}\n[… {len(source) - len(kept):,} characters of source cut: {how}]"
        out["source"] = source
        if "outputs" in cell:
            out["outputs"] = self._outputs(cell["outputs"] or [], cell.get(UNREAD, 0), how)
        attachments = cell.get("attachments")
        if attachments and json_bytes(attachments, stop_above=CELL_META_BYTES) <= CELL_META_BYTES:
            out["attachments"] = attachments  # larger ones (pasted images) are left out
        return out

    def _outputs(self, outputs: list[dict[str, Any]], unread: int, how: str) -> list[dict[str, Any]]:
        kept, room = [], self.outputs_cap
        for n, output in enumerate(outputs):
            size = json_bytes(output, stop_above=room)
            if size > room:
                self.outputs_cut += 1
                kept.append(_cut_output(output, room, how))
                unread += len(outputs) - n - 1
                break
            kept.append(output)
            room -= size
        if unread:
            if len(kept) == len(outputs):  # every output read fitted: those left unread are the cut
                self.outputs_cut += 1
            kept.append(_stream(f"[… {unread:,} more outputs cut: {how}]"))
        return kept

    def note(self, given: int, total: int) -> str:
        parts = []
        if self.sources_cut:
            parts.append(f"{self.sources_cut} cell sources")
        if self.outputs_cut:
            parts.append(f"the outputs of {self.outputs_cut} cells")
        if given < total:
            parts.append(f"cells {given}-{total - 1} of {total} (read_cells with start={given})")
        what = ", ".join(parts) or "cell metadata or attachments"
        return (
            f"This notebook is larger than the bytes one read may carry (max_result_bytes): {what} cut, "
            "each cut marked where it is. get_notebook gives the outline; read_cells reads cells in full."
        )


def _stream(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text}


def _cut_output(output: dict[str, Any], room: int, how: str) -> dict[str, Any]:
    """``output`` as a valid output of its kind, its text cut to about ``room`` bytes and marked."""
    kind = output.get("output_type")
    size = json_bytes(output, stop_above=1 << 40)
    marker = f"\n[… output of {size:,} bytes cut: {how}]"
    room = max(0, room - _MARKER)
    if kind == "stream":
        text = cut_text(as_text(output.get("text")), room) + marker
        return {**_stream(text), "name": output.get("name") or "stdout"}
    if kind == "error":
        evalue = cut_text(as_text(output.get("evalue")), min(room, 200))
        return {
            "output_type": "error",
            "ename": output.get("ename", ""),
            "evalue": evalue,
            "traceback": [marker],
        }
    if kind in ("execute_result", "display_data"):
        data = output.get("data") or {}
        shown = cut_text(as_text(data.get("text/plain")), room)
        dropped = [m for m in data if m != "text/plain"]
        if dropped:
            marker = f"\n[… {', '.join(dropped)} of this output cut ({size:,} bytes): {how}]"
        cut = {"output_type": kind, "data": {"text/plain": shown + marker}, "metadata": {}}
        if kind == "execute_result":
            cut["execution_count"] = output.get("execution_count")
        return cut
    return _stream(marker.lstrip("\n"))
