"""A notebook as a Jupytext percent script, and a script applied back to the live notebook.

Reading and parsing are jupytext's (``py:percent``: ``# %%`` markers, markdown cells as comments,
magics commented out), so an agent sees the format it knows from Jupytext-paired notebooks. Each
marker carries the cell id (``# %% id="1a2b3c4d"``), and writing matches cells by that id: a cell
whose text is unchanged keeps its outputs, execution count and metadata untouched, a changed one is
edited with a minimal splice of its shared text, and only cells whose ids vanished are deleted. All
of it lands in one transaction of the shared document, so an open tab sees one change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import jupytext
import nbformat
from jupyter_ydoc import YNotebook
from pycrdt import Map

from ..errors import ToolError
from . import cells as nb

FORMATS = ("py:percent",)
_FMT = {
    "extension": ".py",
    "format_name": "percent",
    "notebook_metadata_filter": "-all",
    "cell_metadata_filter": "id",
}
# Layout hints jupytext records while parsing; they describe the text, not the cell.
_LAYOUT_KEYS = frozenset({"id", "lines_to_next_cell", "lines_to_end_of_cell_marker", "cell_marker"})
_VALID_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # nbformat 4.5's cell id pattern


@dataclass
class TextCell:
    id: str | None
    cell_type: str
    source: str
    metadata: dict[str, Any]


@dataclass
class Applied:
    """What writing a script changed, for the tool's answer."""

    cell_ids: list[str] = field(default_factory=list)
    inserted: int = 0
    updated: int = 0
    moved: int = 0
    deleted: int = 0


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ToolError(f"Unknown format '{fmt}'; supported: {', '.join(FORMATS)}.")


def to_text(doc: YNotebook) -> tuple[str, list[str]]:
    """The notebook as a percent script, and the ids of cells the script cannot carry faithfully
    (a code line that itself starts with ``# %%`` would split its cell when written back)."""
    cells = []
    for ycell in doc.ycells:
        cell_type = str(ycell.get("cell_type", "code"))
        factory = {"markdown": nbformat.v4.new_markdown_cell, "raw": nbformat.v4.new_raw_cell}.get(
            cell_type, nbformat.v4.new_code_cell
        )
        cells.append(factory(source=str(ycell["source"]), metadata={"id": str(ycell.get("id", ""))}))
    text = jupytext.writes(nbformat.v4.new_notebook(cells=cells), fmt=_FMT)
    parsed = {c.id: c for c in parse(text)}
    unfaithful = [
        str(c.metadata["id"])
        for c in cells
        if (p := parsed.get(str(c.metadata["id"]))) is None or not _same_source(p.source, str(c.source))
    ]
    return text, unfaithful


def parse(text: str) -> list[TextCell]:
    """Cells of a percent script; ids are whatever the markers say (checked by ``apply_text``)."""
    notebook = jupytext.reads(text, fmt="py:percent")
    cells = []
    for cell in notebook.cells:
        metadata = dict(cell.get("metadata") or {})
        cell_id = metadata.get("id")
        cells.append(
            TextCell(
                id=str(cell_id) if cell_id is not None else None,
                cell_type=cell.cell_type,
                source=cell.source,
                metadata={k: v for k, v in metadata.items() if k not in _LAYOUT_KEYS},
            )
        )
    return cells


def check(text: str, *, max_source_chars: int) -> list[TextCell]:
    """The script's cells, or a ToolError (sizes, repeated ids) before anything is touched."""
    wanted = parse(text)
    for cell in wanted:
        nb.check_source_size(cell.source, max_source_chars)
        nb.check_storable(cell.metadata, "cell metadata")
    nb.check_source_size("".join(c.source for c in wanted), max_source_chars)
    seen: set[str] = set()
    for cell in wanted:
        if cell.id is not None and cell.id in seen:
            raise ToolError(
                f"Cell id '{cell.id}' appears twice in the text; each cell marker needs its own id (or none)."
            )
        if cell.id is not None:
            seen.add(cell.id)
    return wanted


def apply_text(doc: YNotebook, text: str, *, max_source_chars: int) -> Applied:
    """Make the live notebook's cells those of the script, keeping everything of matched cells."""
    wanted = check(text, max_source_chars=max_source_chars)
    seen = {cell.id for cell in wanted if cell.id is not None}
    current = nb.ids(doc)
    index_of = {cid: i for i, cid in enumerate(current)}
    matched = [cell.id for cell in wanted if cell.id in index_of]
    stable = set(_longest_increasing([index_of[cid] for cid in matched]))
    stable_ids = {cid for cid in matched if index_of[cid] in stable}
    result = Applied()
    with doc.ydoc.transaction():
        # Cells that moved leave and come back whole (shared arrays have no move JupyterLab decodes).
        kept: dict[str, dict[str, Any]] = {}
        for i in sorted(range(len(current)), reverse=True):
            cid = current[i]
            if cid in stable_ids:
                continue
            if cid in seen:
                kept[cid] = doc.ycells[i].to_py()
                kept[cid].pop("execution_state", None)
                result.moved += 1
            else:
                result.deleted += 1
            del doc.ycells[i]
        taken = set(current) | seen
        for i, cell in enumerate(wanted):
            if cell.id in stable_ids:
                pass
            elif cell.id in kept:
                doc.ycells.insert(i, doc.create_ycell(kept[cell.id]))
            else:
                new_id = cell.id if cell.id and _VALID_ID.match(cell.id) and cell.id not in current else None
                if new_id is None:
                    new_id = nb.new_id(taken)
                    taken.add(new_id)
                fresh: dict[str, Any] = {
                    "id": new_id,
                    "cell_type": cell.cell_type,
                    "source": cell.source,
                    "metadata": cell.metadata,
                }
                if cell.cell_type == "code":
                    fresh.update(outputs=[], execution_count=None)
                doc.ycells.insert(i, doc.create_ycell(fresh))
                result.inserted += 1
                result.cell_ids.append(new_id)
                continue
            result.cell_ids.append(str(cell.id))
            if _update(doc, i, cell):
                result.updated += 1
        nb.mark_dirty(doc)
    return result


def _update(doc: YNotebook, i: int, cell: TextCell) -> bool:
    """Bring a matched cell in line with its text; True if anything changed."""
    ycell = doc.ycells[i]
    changed = False
    if ycell.get("cell_type") != cell.cell_type:
        nb.check_cell_type(cell.cell_type)
        nb.set_type(doc, i, cell.cell_type)
        ycell = doc.ycells[i]
        changed = True
    source = str(ycell["source"])
    if not _same_source(cell.source, source):
        nb.set_source(doc, i, cell.source)
        changed = True
    meta = ycell.get("metadata")
    have = meta.to_py() if isinstance(meta, Map) else {}
    patch = {k: v for k, v in cell.metadata.items() if have.get(k) != v}
    if patch:
        nb.update_metadata(doc, i, patch)
        changed = True
    return changed


def _same_source(parsed: str, source: str) -> bool:
    """The script form drops a cell's trailing blank lines; that alone is no change."""
    return parsed == source or parsed == source.rstrip("\n")


def _longest_increasing(values: list[int]) -> list[int]:
    """A longest strictly increasing subsequence: the matched cells that can stay where they are."""
    if not values:
        return []
    tails: list[int] = []  # index into values of the smallest tail of each length
    parent: list[int] = [-1] * len(values)
    for i, value in enumerate(values):
        lo, hi = 0, len(tails)
        while lo < hi:
            mid = (lo + hi) // 2
            if values[tails[mid]] < value:
                lo = mid + 1
            else:
                hi = mid
        parent[i] = tails[lo - 1] if lo else -1
        if lo == len(tails):
            tails.append(i)
        else:
            tails[lo] = i
    out, at = [], tails[-1]
    while at != -1:
        out.append(values[at])
        at = parent[at]
    return out[::-1]
