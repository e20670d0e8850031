"""Tools on cells, addressed by id: read, insert, update, delete, move, clear outputs."""

from __future__ import annotations

import time
from typing import Any

from pydantic import Field

from ..documents import activity, blank, storable
from ..documents import cells as nb
from ..documents.merge import describe_conflicts, edits, lines_text, merge
from ..documents.revisions import cell_scope, revision
from ..errors import ToolError
from . import outputs
from .people import with_people, with_undone
from .shapes import NewCell, check_new_cells
from .toolkit import Args, ToolContext, ToolResult, ToolSpec, arr, obj, tool


class ReadCells(Args):
    path: str
    cell_ids: list[str] | None = None
    start: int | None = Field(None, description="first index (when no cell_ids)")
    end: int | None = Field(None, description="index after the last")
    include_outputs: bool = True


@tool(
    "read_cells",
    ReadCells,
    obj(cells=arr("object"), truncated="object"),
)
async def read_cells(ctx: ToolContext, args: ReadCells) -> ToolResult:
    """Full source and outputs of cells: by cell_ids, or the index range start..end, or all.
    Outputs are bounded; images come back as image content."""
    path, doc = await ctx.open_notebook(args.path)
    if args.cell_ids:
        indices = nb.find_all(doc, args.cell_ids)
    else:
        indices = list(range(len(doc.ycells)))[args.start : args.end]
    budget = outputs.Budget(ctx.services.limits)
    cells, blocks, shown = [], [], []
    for n, i in enumerate(indices):
        if budget.left <= 0:  # full: the rest would cost reading every source for nothing
            budget.cells_unread = len(indices) - n
            break
        head = nb.summary(doc, i)
        whole = nb.source(doc, i)
        source = budget.take_text_whole(whole)
        cell: dict[str, Any] = {
            "id": head["id"],
            "index": i,
            "type": head["type"],
            "execution_count": head["execution_count"],
            "source": source,
            "rev": ctx.services.revisions.served(ctx.client, cell_scope(path, head["id"]), whole),
        }
        count = f" [{head['execution_count']}]" if head["execution_count"] is not None else ""
        block = [f"--- [{i}] {head['id']} {head['type']}{count}", source]
        if args.include_outputs and head["type"] == "code":
            shaped = []
            rendered = []
            for output in nb.outputs(doc, i):
                text, form = outputs.render(output, budget)
                shaped.append(form)
                rendered.append(text)
            cell["outputs"] = shaped
            if rendered:
                block += ["--- outputs", *rendered]
        cells.append(cell)
        blocks.append("\n".join(block))
        if ctx.view:  # the view shows the cell whole; the agent's budget is the agent's
            raw = nb.outputs(doc, i) if head["type"] == "code" else []
            shown.append({**cell, "source": whole, "outputs": raw})
    notes = budget.notes()
    if notes:
        blocks.append("[" + "; ".join(notes) + ": read fewer cells at a time to see more]")
    result = ToolResult(
        "\n".join(blocks) if blocks else "No cells in that range.",
        {"cells": cells, "truncated": budget.truncation()},
        images=budget.images,
        view={"path": path, "cells": shown} if ctx.view else None,
    )
    every = not args.cell_ids and args.start is None and args.end is None
    result = with_undone(ctx, path, None if every else {c["id"] for c in cells}, result)
    return with_people(ctx, path, doc, result)


class InsertCells(Args):
    path: str
    cells: list[NewCell] = Field(min_length=1)
    before: str | None = Field(None, description="cell id")
    after: str | None = Field(None, description="cell id")
    index: int | None = Field(None, description="used when no before/after; default: end")


@tool("insert_cells", InsertCells, obj(cell_ids=arr("string"), index="integer"), action="write")
async def insert_cells(ctx: ToolContext, args: InsertCells) -> ToolResult:
    """Insert one or more cells in one step, before/after a cell id or at an index (default: the end).
    Returns the new cell ids."""
    check_new_cells(args.cells, ctx.services.limits)
    path, doc = await ctx.open_notebook(args.path)
    placeholder = blank.lone_placeholder(doc)  # an empty notebook's blank cell: replaced, not kept
    at = nb.position(doc, before=args.before, after=args.after, index=args.index)
    new_ids = nb.insert(doc, at, [c.model_dump() for c in args.cells])
    for cell_id, cell in zip(new_ids, args.cells, strict=True):  # the agent knows what it wrote
        ctx.services.revisions.served(ctx.client, cell_scope(path, cell_id), cell.source)
    if placeholder is not None and (gone := blank.drop_placeholder(doc, placeholder)) is not None:
        at -= gone < at
    return ToolResult(
        f"Inserted {len(new_ids)} cells at index {at} of {path}: {', '.join(new_ids)}",
        {"cell_ids": new_ids, "index": at},
    )


class UpdateCell(Args):
    path: str
    cell_id: str
    source: str | None = Field(None, description="new full source")
    rev: str | None = None
    old_string: str | None = Field(None, description="exact unique text to replace")
    new_string: str | None = None
    cell_type: str | None = None
    metadata: dict[str, Any] | None = Field(None, description="keys to set; null removes a key")


@tool(
    "update_cell",
    UpdateCell,
    obj(id="string", index="integer", type="string", source="string", rev="string", merged=arr("object")),
    action="write",
    destructive=True,
)
async def update_cell(ctx: ToolContext, args: UpdateCell) -> ToolResult:
    """Change a cell: its whole source (merged with edits made since your read of it), or one exact
    unique old_string -> new_string, and/or its cell_type and metadata."""
    if args.source is not None and args.old_string is not None:
        raise ToolError("Give either 'source' or 'old_string'/'new_string', not both.")
    if (args.old_string is None) != (args.new_string is None):
        raise ToolError("'old_string' and 'new_string' go together.")
    if args.source is None and args.old_string is None and args.cell_type is None and args.metadata is None:
        raise ToolError("Nothing to change: give source, old_string/new_string, cell_type or metadata.")
    if args.cell_type is not None:
        nb.check_cell_type(args.cell_type)
    if args.metadata is not None:
        storable.check_storable(args.metadata)
    limit = ctx.services.limits.max_source_chars
    for text in (args.source, args.new_string):
        if text is not None:
            storable.check_source_size(text, limit)
    path, doc = await ctx.open_notebook(args.path)
    i = nb.find(doc, args.cell_id)
    scope = cell_scope(path, nb.ids(doc)[i])
    data: dict[str, Any] = {}
    if args.old_string is not None and args.new_string is not None:
        nb.replace_once(doc, i, args.old_string, args.new_string, limit=limit)
    elif args.source is not None:
        base_rev, kept = _write_source(ctx, doc, i, scope, args.source, args.rev)
        data["rev"] = ctx.services.revisions.served(ctx.client, scope, args.source, replacing=base_rev)
        data["merged"] = [lines_text(kept)] if kept else []  # [] : applied as is
    if args.cell_type is not None:
        nb.set_type(doc, i, args.cell_type)
    if args.metadata is not None:
        nb.update_metadata(doc, i, args.metadata)
    head = nb.summary(doc, i)
    merged = (
        f"; merged with edits made since your read (kept at {data['merged'][0]})"
        if data.get("merged")
        else ""
    )
    return ToolResult(
        f"Updated cell {head['id']} ({head['type']}, {head['lines']} lines) in {path}{merged}.",
        {"id": head["id"], "index": i, "type": head["type"], "source": nb.source(doc, i), **data},
    )


def _write_source(
    ctx: ToolContext, doc: Any, i: int, scope: tuple[str, ...], source: str, rev: str | None
) -> tuple[str | None, list[tuple[int, int]]]:
    """Write a whole new source as the change from what the agent read (by ``rev``, else its last
    read of the cell) to ``source``, carried onto the cell as it is now; returns the revision it
    started from and where a person's edits made meanwhile were kept. Conflicts write nothing."""
    cell_id = scope[-1]
    base_rev, base = ctx.services.revisions.base(ctx.client, scope, rev)
    if rev is not None and base is None:
        raise ToolError(
            f"Revision '{rev}' of cell {cell_id} is not one this server knows (forgotten, or of "
            "another cell). Nothing was written: read_cells it again and redo your change."
        )
    now = nb.source(doc, i)
    if rev is not None and revision(source) == rev:
        return None, []  # the very text it read: no change of its own to carry
    if base is None:  # never read: the text replaces what is there, in the fewest splices
        nb.apply_to_cell(doc, i, now, edits(now, source))
        return None, []
    merged = merge(base, source, now)
    if merged.conflicts:
        name = activity.who(doc, activity.last_touch(doc, cell_id))
        raise ToolError(
            f"Nothing was written to cell {cell_id}: "
            + describe_conflicts(merged.conflicts, f" by {name}" if name else "")
            + "Read it again (read_cells) and redo your change on its current source."
        )
    nb.apply_to_cell(doc, i, now, merged.edits)
    return base_rev, merged.kept


class DeleteCells(Args):
    path: str
    cell_ids: list[str] = Field(min_length=1)
    force: bool = False


@tool(
    "delete_cells",
    DeleteCells,
    obj(deleted=arr("string"), cells_left="integer"),
    action="write",
    destructive=True,
)
async def delete_cells(ctx: ToolContext, args: DeleteCells) -> ToolResult:
    """Delete cells by id. Every id is checked first: if one is unknown, or a person typed in it
    seconds ago (unless force), nothing is deleted."""
    path, doc = await ctx.open_notebook(args.path)
    indices = nb.find_all(doc, args.cell_ids)
    deleted = [nb.ids(doc)[i] for i in sorted(set(indices))]
    if ctx.shown_cells is not None:  # a person approved deleting these cells as they were
        ctx.confirm_shown("delete_cells", nb.sources(doc, sorted(set(indices))))
    busy = [(cid, t) for cid in deleted if (t := activity.recently_typed(doc, cid)) is not None]
    if busy and not args.force:
        named = "; ".join(
            f"cell {cid}: {activity.who(doc, t) or 'someone'} typed in it {time.monotonic() - t.at:.0f} s ago"
            for cid, t in busy
        )
        raise ToolError(
            f"Nothing was deleted: {named}. Leave it to them, or pass force=true to delete anyway."
        )
    nb.delete(doc, indices)
    left = len(doc.ycells)
    return ToolResult(
        f"Deleted {len(deleted)} cells from {path}; {left} left.", {"deleted": deleted, "cells_left": left}
    )


class MoveCell(Args):
    path: str
    cell_id: str
    before: str | None = Field(None, description="cell id")
    after: str | None = Field(None, description="cell id")
    index: int | None = Field(None, description="used when no before/after")


@tool("move_cell", MoveCell, obj(id="string", index="integer"), action="write")
async def move_cell(ctx: ToolContext, args: MoveCell) -> ToolResult:
    """Move a cell before/after another cell id, or to an index. Keeps its id, source, outputs and metadata."""
    if args.before is None and args.after is None and args.index is None:
        raise ToolError("Say where to: 'before' or 'after' a cell id, or an 'index'.")
    path, doc = await ctx.open_notebook(args.path)
    src = nb.find(doc, args.cell_id)
    if src in {nb.find(doc, ref) for ref in (args.before, args.after) if ref is not None}:
        raise ToolError("A cell cannot be moved relative to itself; name another cell.")
    dest = nb.position(doc, before=args.before, after=args.after, index=args.index)
    if args.before is None and args.after is None and dest > src:
        dest += 1  # an index names the final position, counted after the move
    new_index = nb.move(doc, src, dest)
    cell_id = nb.ids(doc)[new_index]
    return ToolResult(
        f"Moved cell {cell_id} to index {new_index} in {path}.", {"id": cell_id, "index": new_index}
    )


class ClearOutputs(Args):
    path: str
    cell_ids: list[str] | None = Field(None, description="default: all cells")


@tool("clear_outputs", ClearOutputs, obj(cleared="integer"), action="write", destructive=True)
async def clear_outputs(ctx: ToolContext, args: ClearOutputs) -> ToolResult:
    """Clear outputs and execution counts of some cells, or of all cells."""
    path, doc = await ctx.open_notebook(args.path)
    indices = nb.find_all(doc, args.cell_ids) if args.cell_ids else list(range(len(doc.ycells)))
    cleared = nb.clear_outputs(doc, indices)
    return ToolResult(f"Cleared outputs of {cleared} cells in {path}.", {"cleared": cleared})


TOOLS: list[ToolSpec[Any]] = [read_cells, insert_cells, update_cell, delete_cells, move_cell, clear_outputs]
