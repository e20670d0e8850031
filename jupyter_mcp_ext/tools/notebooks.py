"""Tools on whole notebooks: find them, create one, outline one, search one."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import nbformat
from jupyter_core.utils import ensure_async
from pydantic import Field
from tornado.web import HTTPError

from ..documents import cells as nb
from ..documents import percent
from ..documents.paths import api_path, walk
from ..documents.revisions import cell_scope, cells_scope
from ..errors import ToolError
from . import outputs
from .bounds import check_script_size, in_slices
from .matching import search_lines
from .people import with_people, with_undone
from .shapes import NewCell, check_new_cells
from .toolkit import Args, ToolContext, ToolResult, ToolSpec, arr, obj, tool

MAX_LISTED = 500
MAX_MATCHES = 100


class ListNotebooks(Args):
    path: str = ""
    recursive: bool = True


@tool(
    "list_notebooks",
    ListNotebooks,
    obj(notebooks=arr("object"), truncated="boolean"),
)
async def list_notebooks(ctx: ToolContext, args: ListNotebooks) -> ToolResult:
    """Notebooks under a folder (path relative to the server root): size, last modified, whether a
    JupyterLab tab has it open, and its kernel session if any."""
    services = ctx.services
    folder = await api_path(args.path, services.contents)
    kernels = {
        s["path"]: s.get("kernel") or {} for s in await ensure_async(services.sessions.list_sessions())
    }
    found: list[dict[str, Any]] = []
    truncated = False
    try:
        async for entry in walk(services.contents, folder, recursive=args.recursive):
            if entry["type"] != "notebook" or services.documents.denied.matches(entry["path"]):
                continue  # a denied name is not offered: every tool would refuse it
            if len(found) >= MAX_LISTED:
                truncated = True
                break
            kernel = kernels.get(entry["path"])
            found.append(
                {
                    "path": entry["path"],
                    "size": entry.get("size"),
                    "modified": _iso(entry.get("last_modified")),
                    "open": services.documents.is_open_in_tab(entry["path"]),
                    "kernel": {k: kernel.get(k) for k in ("id", "name", "execution_state")}
                    if kernel
                    else None,
                }
            )
    except HTTPError as err:
        raise ToolError(f"No folder at '{args.path}' ({err.log_message or err.reason}).") from err
    found.sort(key=lambda n: n["path"])
    lines = [
        f"{n['path']}  {_size(n['size'])}  {n['modified'][:16].replace('T', ' ')}"
        + ("  [open in a tab]" if n["open"] else "")
        + (f"  kernel {n['kernel']['name']} ({n['kernel']['execution_state']})" if n["kernel"] else "")
        for n in found
    ]
    head = f"{len(found)} notebooks under '{folder or '/'}'" + (
        f" (first {MAX_LISTED} shown)" if truncated else ""
    )
    return ToolResult(
        "\n".join([head + ":", *lines]) if lines else head + ".", {"notebooks": found, "truncated": truncated}
    )


class CreateNotebook(Args):
    path: str
    kernel_name: str | None = None
    cells: list[NewCell] = Field(default_factory=list)


@tool("create_notebook", CreateNotebook, obj(path="string", cell_ids=arr("string")), action="write")
async def create_notebook(ctx: ToolContext, args: CreateNotebook) -> ToolResult:
    """Create a notebook (never overwrites; missing folders are created). kernel_name defaults to the
    server's default kernel. Returns the new cell ids."""
    services = ctx.services
    path = await api_path(args.path, services.contents)
    services.documents.denied.check(path, services.contents, given=args.path)
    if not path.endswith(".ipynb"):
        raise ToolError(f"'{args.path}' must end in .ipynb.")
    if await ensure_async(services.contents.file_exists(path)) or await ensure_async(
        services.contents.dir_exists(path)
    ):
        raise ToolError(
            f"'{path}' already exists; choose another name, or edit it with insert_cells/update_cell."
        )
    check_new_cells(args.cells, services.limits)
    kernelspec = await _kernelspec(ctx, args.kernel_name)
    notebook = nbformat.v4.new_notebook(
        metadata={"kernelspec": kernelspec, "language_info": {"name": kernelspec["language"]}}
    )
    taken: set[str] = set()
    for spec in args.cells:
        cell = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}.get(
            spec.cell_type, nbformat.v4.new_raw_cell
        )(source=spec.source, metadata=spec.metadata or {})
        cell["id"] = nb.new_id(taken)
        taken.add(cell["id"])
        notebook.cells.append(cell)
    await _make_parents(services.contents, path)
    try:
        await ensure_async(
            services.contents.save({"type": "notebook", "format": "json", "content": notebook}, path)
        )
    except HTTPError as err:
        raise ToolError(f"Could not create '{path}': {err.log_message or err.reason}.") from err
    ids = [c["id"] for c in notebook.cells]
    return ToolResult(
        f"Created {path} ({kernelspec['name']}, {len(ids)} cells)" + (f": {', '.join(ids)}" if ids else "."),
        {"path": path, "cell_ids": ids},
    )


class GetNotebook(Args):
    path: str
    format: Literal["outline", "py:percent"] = "outline"


@tool(
    "get_notebook",
    GetNotebook,
    obj(
        path="string",
        kernel=["string", "null"],
        language=["string", "null"],
        cells=arr("object"),
        text="string",
    ),
)
async def get_notebook(ctx: ToolContext, args: GetNotebook) -> ToolResult:
    """Outline of a notebook: kernel, language, and per cell its id, index, type, execution count,
    first line, line count and outputs summary. Start here; use ids from it in other tools.
    format=py:percent: the notebook as a percent script instead."""
    path, doc = await ctx.open_notebook(args.path)
    kernel, language = nb.kernel_info(doc)
    if args.format == "py:percent":
        check_script_size(doc, ctx.services.limits.max_result_bytes)
        script = await percent.to_text(doc)
        _served_cells(ctx, path, script.cells)  # as copied: people may have typed since
        text, unfaithful = script.text, script.unfaithful
        note = (
            f"\n# [cells {', '.join(unfaithful)} contain '# %%' lines: edit them with update_cell, not as text]"
            if unfaithful
            else ""
        )
        return ToolResult(text + note, {"path": path, "kernel": kernel, "language": language, "text": text})
    cells = []
    for cell, first, count in await in_slices(doc, lambda i: nb.outline_row(doc, i)):
        cell["outputs"] = outputs.outline(first, count)
        cells.append(cell)
    # The cells the agent now knows of: one a person adds later is not deleted by a script it writes.
    ctx.services.revisions.served(ctx.client, cells_scope(path), "\n".join(c["id"] for c in cells))
    lines = [f"{path} · kernel {kernel or '?'} ({language or '?'}) · {len(cells)} cells"]
    lines += [_outline_line(c) for c in cells]
    result = ToolResult(
        "\n".join(lines), {"path": path, "kernel": kernel, "language": language, "cells": cells}
    )
    return with_people(ctx, path, doc, with_undone(ctx, path, None, result))


def _outline_line(c: dict[str, Any]) -> str:
    count = f" [{c['execution_count']}]" if c["execution_count"] is not None else ""
    more = f" (+{c['lines'] - 1} lines)" if c["lines"] > 1 else ""
    first = c["first_line"] if len(c["first_line"]) <= 80 else c["first_line"][:79] + "…"
    out = f" → {c['outputs']}" if c["outputs"] else ""
    return f"[{c['index']}] {c['id']} {c['type']}{count}: {first}{more}{out}"


class SearchNotebook(Args):
    path: str
    pattern: str
    regex: bool = False


@tool(
    "search_notebook",
    SearchNotebook,
    obj(matches=arr("object"), truncated="boolean"),
)
async def search_notebook(ctx: ToolContext, args: SearchNotebook) -> ToolResult:
    """Find cells whose source matches a pattern (plain text, or a Python regex with regex=true;
    case-insensitive unless the pattern has capitals). Returns cell ids with matching lines."""
    if not args.pattern:
        raise ToolError("pattern is empty; give the text to look for.")
    path, doc = await ctx.open_notebook(args.path)
    texts = await in_slices(doc, lambda i: nb.source(doc, i))
    cell_ids = nb.ids(doc)  # as they were for the last slice: no await since
    found, truncated = await search_lines(args.pattern, texts, is_regex=args.regex, limit=MAX_MATCHES)
    matches = [{"id": cell_ids[i], "index": i, "line": n, "text": line[:200]} for i, n, line in found]
    lines = [f"[{m['index']}] {m['id']}:{m['line']}: {m['text']}" for m in matches]
    head = f"{len(matches)} matching lines in {path}" + (f" (first {MAX_MATCHES})" if truncated else "")
    return ToolResult("\n".join([head, *lines]), {"matches": matches, "truncated": truncated})


async def _kernelspec(ctx: ToolContext, name: str | None) -> dict[str, str]:
    manager = ctx.services.kernelspecs
    specs = await ensure_async(manager.get_all_specs())
    chosen = name or ctx.services.default_kernel
    if chosen not in specs:
        raise ToolError(
            f"No kernel named '{chosen}' on this server. Installed: {', '.join(sorted(specs)) or 'none'}."
        )
    spec = specs[chosen]["spec"]
    return {
        "name": chosen,
        "display_name": spec.get("display_name", chosen),
        "language": spec.get("language", ""),
    }


async def _make_parents(contents: Any, path: str) -> None:
    parts = path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        folder = "/".join(parts[:depth])
        if not await ensure_async(contents.dir_exists(folder)):
            try:
                await ensure_async(contents.save({"type": "directory"}, folder))
            except HTTPError as err:
                raise ToolError(
                    f"Could not create folder '{folder}': {err.log_message or err.reason}."
                ) from err


def _iso(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value or "")


def _size(size: Any) -> str:
    if not isinstance(size, int):
        return "?"
    return (
        f"{size} B"
        if size < 1024
        else f"{size / 1024:.1f} KB"
        if size < 1024**2
        else f"{size / 1024**2:.1f} MB"
    )


class WriteNotebookText(Args):
    path: str
    text: str
    format: str = "py:percent"
    force: bool = False


@tool(
    "write_notebook_text",
    WriteNotebookText,
    obj(path="string", cell_ids=arr("string"), merged=arr("object")),
    action="write",
)
async def write_notebook_text(ctx: ToolContext, args: WriteNotebookText) -> ToolResult:
    """Create or rewrite a notebook from a percent script; cells keep outputs while their id and text do,
    edits made since your read are kept."""
    percent.check_format(args.format)
    contents = ctx.services.contents
    path = await api_path(args.path, contents)
    wanted = await percent.read(args.text, max_source_chars=ctx.services.limits.max_source_chars)
    if path.endswith(".ipynb") and not await ensure_async(contents.file_exists(path)):
        await create_notebook.run(ctx, CreateNotebook(path=path))
    path, doc = await ctx.open_notebook(path)
    revisions, client = ctx.services.revisions, ctx.client
    _, seen = revisions.base(client, cells_scope(path))
    reads = percent.Reads(
        base=lambda cell_id, rev: revisions.base(client, cell_scope(path, cell_id), rev),
        seen=set(seen.split("\n")) if seen is not None else None,
        force=args.force,
    )
    done = percent.apply_text(doc, wanted, reads=reads)
    for cell_id, (base_rev, source) in done.sources.items():  # the agent's own view: its next base
        revisions.served(client, cell_scope(path, cell_id), source, replacing=base_rev)
    revisions.served(client, cells_scope(path), "\n".join(c for c in done.cell_ids if c not in done.kept))
    summary = f"{done.inserted} inserted, {done.updated} updated, {done.moved} moved, {done.deleted} deleted"
    notes = (
        [f"merged with edits made since your read (kept: {'; '.join(done.merged)})"] if done.merged else []
    )
    if done.kept:
        notes.append(f"kept cells added since your read: {', '.join(done.kept)}")
    if done.not_restored:
        notes.append(f"not restored, deleted since your read: {', '.join(done.not_restored)}")
    return ToolResult(
        f"Wrote {path} ({len(done.cell_ids)} cells: {summary}): {', '.join(done.cell_ids)}"
        + "".join(f"\n{note}" for note in notes),
        {"path": path, "cell_ids": done.cell_ids, "merged": done.merged},
    )


def _served_cells(ctx: ToolContext, path: str, cells: list[tuple[str, str]]) -> None:
    """Remember each cell's source as this client saw it in a whole read, and which cells there were."""
    revisions, client = ctx.services.revisions, ctx.client
    for cell_id, source in cells:
        revisions.served(client, cell_scope(path, cell_id), source)
    revisions.served(client, cells_scope(path), "\n".join(cell_id for cell_id, _ in cells))


TOOLS: list[ToolSpec[Any]] = [
    list_notebooks,
    create_notebook,
    get_notebook,
    search_notebook,
    write_notebook_text,
]
