"""A notebook as a Jupytext percent script, and a script applied back to the live notebook.

Reading and parsing are jupytext's (``py:percent``: ``# %%`` markers, markdown cells as comments,
magics commented out), so an agent sees the format it knows from Jupytext-paired notebooks. Each
marker carries the cell id and the revision of its text (``# %% id="1a2b3c4d" rev="9f3e0a1b"``),
and writing matches cells by that id: a cell whose text is unchanged keeps its outputs, execution
count and metadata untouched, a changed one is edited with minimal splices of its shared text, and
only cells whose ids vanished are deleted. All of it lands in one transaction of the shared
document, so an open tab sees one change.

A script is written back relative to what the agent read (see ``Reads``): a cell the agent left as
it read it stays as it is now, whatever a person did to it meanwhile; a cell both changed is merged
three-way; a cell a person deleted is not brought back, and one a person added is not deleted.
Anything that cannot be merged fails the whole write before any of it is applied.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import nbformat
from jupyter_ydoc import YNotebook
from pycrdt import Map

from ..errors import ToolError
from . import activity, storable
from . import cells as nb
from .merge import Edit, describe_conflicts, edits, lines_text, merge
from .revisions import revision

FORMATS = ("py:percent",)
_FMT = {
    "extension": ".py",
    "format_name": "percent",
    "notebook_metadata_filter": "-all",
    "cell_metadata_filter": "id,rev",
}
# Layout hints jupytext records while parsing; they describe the text, not the cell.
_LAYOUT_KEYS = frozenset({"id", "rev", "lines_to_next_cell", "lines_to_end_of_cell_marker", "cell_marker"})
_VALID_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # nbformat 4.5's cell id pattern
# Longer scripts are read and written by jupytext in a worker thread: it goes through a script in
# Python, about 0.6 us a character (a 200 KB line held the event loop 100-160 ms), while a person's
# keystrokes wait for the loop. Shorter ones cost less than the hand-off.
OFF_LOOP_CHARS = 8192


def _jupytext() -> Any:
    """jupytext, imported at the first text read or write: importing it with the extension was a tenth
    of every server start's CPU (markdown-it and its plugins), for a tool many sessions never call."""
    import jupytext

    return jupytext


@dataclass
class TextCell:
    id: str | None
    cell_type: str
    source: str
    metadata: dict[str, Any]
    rev: str | None = None  # the revision the marker names: the text this cell was edited from


@dataclass
class Reads:
    """What the writing agent saw: ``base(cell_id, rev)`` gives (revision, text) of a cell as it
    read it (text None when unknown), ``seen`` the cells its last whole read showed (None: unknown)."""

    base: Callable[[str, str | None], tuple[str | None, str | None]]
    seen: set[str] | None = None
    force: bool = False


@dataclass
class Applied:
    """What writing a script changed, for the tool's answer."""

    cell_ids: list[str] = field(default_factory=list)
    inserted: int = 0
    updated: int = 0
    moved: int = 0
    deleted: int = 0
    merged: list[str] = field(default_factory=list)  # "<id>: lines a-b" where a person's edits were kept
    kept: list[str] = field(default_factory=list)  # cells a person added since the read, left in place
    not_restored: list[str] = field(default_factory=list)  # cells a person deleted since the read
    sources: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # id -> (base rev, agent's text)


@dataclass
class Script:
    """A notebook as a percent script, and what it was made from."""

    text: str
    unfaithful: list[str]  # cells the script cannot carry faithfully (see ``to_text``)
    cells: list[tuple[str, str]]  # (id, source) of each cell as copied: what the reader is shown


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ToolError(f"Unknown format '{fmt}'; supported: {', '.join(FORMATS)}.")


async def to_text(doc: YNotebook) -> Script:
    """The notebook as a percent script (each marker with the cell's id and revision), and the ids
    of cells the script cannot carry faithfully (a code line that itself starts with ``# %%`` would
    split its cell when written back). The cells are copied at once: a long script is then written
    in a worker thread, while people may edit the live notebook."""
    cells, copied = [], []
    for ycell in doc.ycells:
        cell_type = str(ycell.get("cell_type", "code"))
        factory = {"markdown": nbformat.v4.new_markdown_cell, "raw": nbformat.v4.new_raw_cell}.get(
            cell_type, nbformat.v4.new_code_cell
        )
        source, cell_id = str(ycell["source"]), str(ycell.get("id", ""))
        cells.append(factory(source=source, metadata={"id": cell_id, "rev": revision(source)}))
        copied.append((cell_id, source))
    text, unfaithful = await _by_size(sum(len(source) for _, source in copied), _written, cells)
    return Script(text, unfaithful, copied)


def _written(cells: list[Any]) -> tuple[str, list[str]]:
    text = _jupytext().writes(nbformat.v4.new_notebook(cells=cells), fmt=_FMT)
    parsed = {c.id: c for c in parse(text)}
    unfaithful = [
        str(c.metadata["id"])
        for c in cells
        if (p := parsed.get(str(c.metadata["id"]))) is None or not _same_source(p.source, str(c.source))
    ]
    return text, unfaithful


def parse(text: str) -> list[TextCell]:
    """Cells of a percent script; ids are whatever the markers say (checked by ``apply_text``)."""
    notebook = _jupytext().reads(text, fmt="py:percent")
    cells = []
    for cell in notebook.cells:
        metadata = dict(cell.get("metadata") or {})
        cell_id, rev = metadata.get("id"), metadata.get("rev")
        cells.append(
            TextCell(
                id=str(cell_id) if cell_id is not None else None,
                cell_type=cell.cell_type,
                source=cell.source,
                metadata={k: v for k, v in metadata.items() if k not in _LAYOUT_KEYS},
                rev=str(rev) if rev is not None else None,
            )
        )
    return cells


def check(text: str, *, max_source_chars: int) -> list[TextCell]:
    """The script's cells, or a ToolError (sizes, repeated ids) before anything is touched."""
    wanted = parse(text)
    for cell in wanted:
        storable.check_source_size(cell.source, max_source_chars)
        storable.check_storable(cell.metadata, "cell metadata")
    storable.check_source_size("".join(c.source for c in wanted), max_source_chars)
    seen: set[str] = set()
    for cell in wanted:
        if cell.id is not None and cell.id in seen:
            raise ToolError(
                f"Cell id '{cell.id}' appears twice in the text; each cell marker needs its own id (or none)."
            )
        if cell.id is not None:
            seen.add(cell.id)
    return wanted


async def read(text: str, *, max_source_chars: int) -> list[TextCell]:
    """``check``, in a worker thread for a long script (``OFF_LOOP_CHARS``)."""
    return await _by_size(len(text), check, text, max_source_chars=max_source_chars)


async def _by_size(chars: int, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``func(*args)`` on a script of ``chars`` characters: in a worker thread past ``OFF_LOOP_CHARS``
    (pure work on strings and new objects: nothing the loop's thread touches meanwhile)."""
    if chars <= OFF_LOOP_CHARS:
        return func(*args, **kwargs)
    return await asyncio.to_thread(func, *args, **kwargs)


def apply_text(doc: YNotebook, wanted: list[TextCell], *, reads: Reads | None = None) -> Applied:
    """Make the live notebook's cells those of the script (its cells, from ``read``), keeping
    everything of matched cells.

    With ``reads``, the script is taken as an edit of what the agent read (see the module doc).
    """
    current = nb.ids(doc)
    result = Applied()
    plan = _plan(doc, wanted, current, reads, result)
    wanted = plan.cells
    seen = {cell.id for cell in wanted if cell.id is not None}
    index_of = {cid: i for i, cid in enumerate(current)}
    matched = [cell.id for cell in wanted if cell.id in index_of]
    stable = set(_longest_increasing([index_of[cid] for cid in matched]))
    stable_ids = {cid for cid in matched if index_of[cid] in stable}
    with activity.own_write(doc), doc.ydoc.transaction():
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
                result.sources[new_id] = (None, cell.source)
                continue
            result.cell_ids.append(str(cell.id))
            if _update(doc, i, cell, plan.edits.get(str(cell.id))):
                result.updated += 1
        nb.mark_dirty(doc)
    return result


@dataclass
class _Plan:
    cells: list[TextCell]  # what the notebook becomes, cells a person added included
    edits: dict[str, tuple[str, list[Edit]] | None]  # cell id -> (its source now, edits); None: leave


def _plan(
    doc: YNotebook, wanted: list[TextCell], current: list[str], reads: Reads | None, result: Applied
) -> _Plan:
    """Decide every cell's fate against what the agent read, before anything is written; raise a
    ToolError naming every cell that cannot be merged. Without ``reads`` the script is the truth."""
    strict = reads is not None
    reads = reads or Reads(lambda _id, _rev: (None, None), force=True)
    index_of = {cid: i for i, cid in enumerate(current)}
    problems: list[str] = []
    plan = _Plan([], {})
    for cell in wanted:
        base_rev, base = reads.base(cell.id, cell.rev) if cell.id is not None else (None, None)
        if strict and cell.id is not None and cell.rev is not None and base is None:
            problems.append(
                f"cell {cell.id}: revision {cell.rev} is not one this server knows (forgotten, or not "
                "from this notebook)."
            )
            continue
        if cell.id not in index_of:
            if base is not None:  # it existed when the agent read it: a person deleted it since
                if _with_tail(cell.source, base) == base or _as_read(cell, cell.source):
                    result.not_restored.append(str(cell.id))
                    continue
                problems.append(
                    f"cell {cell.id} was deleted{_by(doc, activity.last_any(doc))} since you read it, "
                    "and you changed it; nothing of it is in the notebook now."
                )
                continue
            plan.cells.append(cell)
            continue
        now = nb.source(doc, index_of[cell.id])
        mine = _with_tail(cell.source, base if base is not None else now)
        result.sources[str(cell.id)] = (base_rev if base is not None else None, mine)
        plan.cells.append(cell)
        if base is None:
            plan.edits[cell.id] = (now, edits(now, mine)) if mine != now else None
        elif mine == base or _as_read(cell, mine):
            plan.edits[cell.id] = None  # unchanged by the agent: whatever is there now stays
        else:
            merged = merge(base, mine, now)
            if merged.conflicts:
                who = _by(doc, activity.last_touch(doc, cell.id))
                problems.append(f"cell {cell.id}: {describe_conflicts(merged.conflicts, who)}")
                continue
            plan.edits[cell.id] = (now, merged.edits)
            if merged.kept:
                result.merged.append(f"{cell.id}: " + lines_text(merged.kept))
    named = {cell.id for cell in wanted if cell.id is not None}
    for i, cid in enumerate(current):
        if cid in named:
            continue
        if reads.seen is not None and cid not in reads.seen:
            result.kept.append(cid)  # a person added it since the read: keep it after its neighbour
            plan.cells.insert(_after(plan.cells, current[:i]), _as_is(doc, i))
            plan.edits[cid] = None
            continue
        _, base = reads.base(cid, None)
        now = nb.source(doc, i)
        typing = activity.recently_typed(doc, cid)
        if base is not None and now != base:
            problems.append(
                f"cell {cid} was changed{_by(doc, activity.last_touch(doc, cid))} since you read it, and "
                "your text leaves it out: keep it in the text (read the notebook again to see it)."
            )
        elif typing is not None and not reads.force:
            problems.append(
                f"cell {cid} is being edited{_by(doc, typing)} (typed in seconds ago), and your text "
                "leaves it out: keep it, or pass force=true to delete it anyway."
            )
    if problems:
        raise ToolError(
            "Nothing was written: "
            + " ".join(problems)
            + " Read the notebook again (get_notebook format=py:percent) and redo your change on it."
        )
    return plan


def _as_read(cell: TextCell, mine: str) -> bool:
    """Whether the cell's text is the very one its marker's revision names (what the agent read)."""
    return cell.rev is not None and cell.rev in (revision(mine), revision(cell.source))


def _with_tail(parsed: str, base: str) -> str:
    """The script form drops a cell's trailing blank lines; put back those of the text it came from."""
    tail = base[len(base.rstrip("\n")) :]
    mine = parsed[len(parsed.rstrip("\n")) :]
    return parsed + tail[len(mine) :] if len(mine) < len(tail) else parsed


def _after(cells: list[TextCell], before: list[str]) -> int:
    """Where a kept cell goes: after the nearest cell before it (now) that the script keeps."""
    positions = {cell.id: k for k, cell in enumerate(cells)}
    for cid in reversed(before):
        if cid in positions:
            return positions[cid] + 1
    return 0


def _as_is(doc: YNotebook, i: int) -> TextCell:
    ycell = doc.ycells[i]
    return TextCell(str(ycell["id"]), str(ycell.get("cell_type", "code")), nb.source(doc, i), {})


def _by(doc: YNotebook, touch: activity.Touch | None) -> str:
    name = activity.who(doc, touch) if touch is not None else None
    return f" by {name}" if name else ""


def _update(doc: YNotebook, i: int, cell: TextCell, source: tuple[str, list[Edit]] | None) -> bool:
    """Bring a matched cell in line with its text; True if anything changed."""
    ycell = doc.ycells[i]
    changed = False
    if ycell.get("cell_type") != cell.cell_type:
        nb.check_cell_type(cell.cell_type)
        nb.set_type(doc, i, cell.cell_type)
        ycell = doc.ycells[i]
        changed = True
    if source is not None and source[1]:
        nb.apply_to_cell(doc, i, *source)
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
