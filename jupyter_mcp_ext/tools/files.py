"""Tools on the files around the notebooks: list, read, write, edit, download, rename, delete.

Everything goes through the server's ContentsManager (root, hidden files, custom backends) and,
for a file a JupyterLab editor tab has open, through its shared document (see documents/text_files.py).
Notebooks are refused by the text tools: their JSON belongs to the notebook tools.
"""

from __future__ import annotations

import fnmatch
import posixpath
from typing import Any

from jupyter_core.utils import ensure_async
from pydantic import Field
from tornado.web import HTTPError

from ..documents.merge import lines_text
from ..documents.paths import api_path, walk
from ..documents.revisions import file_scope
from ..errors import ToolError
from .notebooks import _iso, _make_parents, _size
from .toolkit import Args, ToolContext, ToolResult, ToolSpec, arr, obj, tool

PAGE = 200
MAX_LINE_CHARS = 2000
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


class ListFiles(Args):
    path: str = ""
    pattern: str | None = Field(None, description="glob")
    recursive: bool = False
    offset: int = 0


@tool("list_files", ListFiles, obj(entries=arr("object"), next_offset=["integer", "null"]))
async def list_files(ctx: ToolContext, args: ListFiles) -> ToolResult:
    """Files and folders under a folder: type, size, last modified; 200 per page (then pass next_offset)."""
    if args.offset < 0:
        raise ToolError("offset must be 0 or more (next_offset of the previous page).")
    contents = ctx.services.contents
    folder = await api_path(args.path, contents)
    if not await ensure_async(contents.dir_exists(folder)):
        raise ToolError(f"No folder at '{args.path}'. list_files with no path lists the server root.")
    seen = 0
    page: list[dict[str, Any]] = []
    next_offset: int | None = None
    async for entry in walk(contents, folder, recursive=args.recursive):
        relative = posixpath.relpath(entry["path"], folder or ".")
        if args.pattern and not fnmatch.fnmatch(
            relative if "/" in args.pattern else entry["name"], args.pattern
        ):
            continue
        seen += 1
        if seen <= args.offset:
            continue
        if len(page) == PAGE:
            next_offset = args.offset + PAGE
            break
        page.append(
            {
                "path": entry["path"],
                "type": entry["type"],
                "size": entry.get("size"),
                "modified": _iso(entry.get("last_modified")),
            }
        )
    lines = [
        f"{e['path']}{'/' if e['type'] == 'directory' else ''}  "
        + (f"{_size(e['size'])}  " if e["type"] != "directory" else "")
        + e["modified"][:16].replace("T", " ")
        for e in page
    ]
    head = f"{len(page)} entries under '{folder or '/'}'" + (
        f" (more: offset={next_offset})" if next_offset else ""
    )
    return ToolResult("\n".join([head + ":", *lines]), {"entries": page, "next_offset": next_offset})


class ReadFile(Args):
    path: str
    offset: int = 1
    limit: int = 200


@tool("read_file", ReadFile, obj(path="string", total_lines="integer", more="boolean", rev="string"))
async def read_file(ctx: ToolContext, args: ReadFile) -> ToolResult:
    """A text file's lines, numbered from 1 (offset), as an open editor tab shows it."""
    if args.offset < 1 or args.limit < 1:
        raise ToolError("offset (the first line, counted from 1) and limit must be at least 1.")
    files = ctx.services.text_documents
    api = await files.resolve(args.path)
    text = (await files.read_text(api)).text
    rev = ctx.services.revisions.served(ctx.client, file_scope(api), text)
    lines = text.splitlines()
    budget = ctx.services.limits.max_result_bytes // 2  # the text is sent once more as structuredContent
    shown: list[str] = []
    end = min(len(lines), args.offset - 1 + args.limit)
    for n in range(args.offset, end + 1):
        line = lines[n - 1]
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + f"…[+{len(line) - MAX_LINE_CHARS} chars]"
        budget -= len(line.encode()) + 8
        if budget < 0 and shown:
            end = n - 1
            break
        shown.append(f"{n:>6}\t{line}")
    more = end < len(lines)
    tail = f"[lines {args.offset}-{end} of {len(lines)}; more from offset={end + 1}]" if more else ""
    body = "\n".join([*shown, tail] if tail else shown)
    if not lines:
        body = f"{api} is empty."
    elif args.offset > len(lines):
        body = f"{api} has {len(lines)} lines; offset {args.offset} is past the end."
    return ToolResult(
        body, {"path": api, "content": body, "total_lines": len(lines), "more": more, "rev": rev}
    )


class WriteFile(Args):
    path: str
    content: str
    overwrite: bool = True
    rev: str | None = None


@tool(
    "write_file",
    WriteFile,
    obj(path="string", created="boolean", rev="string", merged=arr("object")),
    action="write",
    destructive=True,
)
async def write_file(ctx: ToolContext, args: WriteFile) -> ToolResult:
    """Write a text file, creating folders as needed; an open editor tab shows the change live;
    edits made since your read are kept."""
    files = ctx.services.text_documents
    revisions = ctx.services.revisions
    api = await files.resolve(args.path, must_exist=False)
    exists = await ensure_async(ctx.services.contents.file_exists(api))
    if exists and not args.overwrite:
        raise ToolError(f"'{api}' exists and overwrite is false; pick another path or pass overwrite=true.")
    scope = file_scope(api)
    base_rev, base = revisions.base(ctx.client, scope, args.rev) if exists else (None, None)
    if exists and args.rev is not None and base is None:
        raise ToolError(
            f"Revision '{args.rev}' of {api} is not one this server knows (forgotten, or of another "
            "file). Nothing was written: read_file it again and redo your change."
        )
    await _make_parents(ctx.services.contents, api)
    written = await files.write_text(api, args.content, base=base)
    rev = revisions.served(ctx.client, scope, args.content, replacing=base_rev if base is not None else None)
    verb = "Overwrote" if exists else "Created"
    where = " (live in the open editor tab; Jupyter saves it)" if written.live else ""
    merged = [lines_text(written.kept)] if written.kept else []
    note = f"; merged with edits made since your read (kept at {merged[0]})" if merged else ""
    return ToolResult(
        f"{verb} {api}: {len(args.content.encode()):,} bytes{where}{note}.",
        {"path": api, "created": not exists, "rev": rev, "merged": merged},
    )


class EditFile(Args):
    path: str
    old_string: str
    new_string: str
    replace_all: bool = False


@tool("edit_file", EditFile, obj(path="string", replacements="integer"), action="write")
async def edit_file(ctx: ToolContext, args: EditFile) -> ToolResult:
    """Replace exact text in a text file (old_string must be unique unless replace_all)."""
    files = ctx.services.text_documents
    api = await files.resolve(args.path)
    if not args.old_string:
        raise ToolError("old_string is empty; give the exact text to replace (read_file shows it).")
    if args.old_string == args.new_string:
        raise ToolError("old_string and new_string are the same; nothing to change.")
    current = await files.read_text(api)
    count = current.text.count(args.old_string)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {api}. read_file shows its current text; copy it exactly, including whitespace."
        )
    if count > 1 and not args.replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {api}; add surrounding text to make it unique, or pass replace_all=true."
        )
    live = await files.replace(current, args.old_string, args.new_string)
    where = " (live in the open editor tab)" if live else ""
    return ToolResult(
        f"Replaced {count} occurrence{'s' if count > 1 else ''} in {api}{where}.",
        {"path": api, "replacements": count},
    )


class DownloadFile(Args):
    path: str


@tool("download_file", DownloadFile, obj(path="string", mime="string", base64="boolean"))
async def download_file(ctx: ToolContext, args: DownloadFile) -> ToolResult:
    """Any file's content: text as is, binary as base64, images as image content."""
    files = ctx.services.text_documents
    api = await files.resolve(args.path, text_only=False)
    mime, content, is_base64 = await files.read_bytes(api)
    data: dict[str, Any] = {"path": api, "mime": mime, "base64": is_base64}
    if is_base64 and mime in IMAGE_TYPES:
        return ToolResult(f"{api} ({mime}), as an image.", data, images=[(mime, content)])
    return ToolResult(content, {**data, "content": content})


class RenamePath(Args):
    path: str
    new_path: str


@tool("rename_path", RenamePath, obj(path="string", sessions_moved="integer"), action="write")
async def rename_path(ctx: ToolContext, args: RenamePath) -> ToolResult:
    """Rename or move a file or folder; a notebook's kernel session follows it."""
    contents, files = ctx.services.contents, ctx.services.text_documents
    new = await files.checked(args.new_path, what="new_path")
    old = await files.checked(args.path, whole=True, moved_to=new)
    if not old or not new:
        raise ToolError("The server root cannot be renamed, nor anything renamed to it.")
    if not await ensure_async(contents.exists(old)):
        raise ToolError(f"Nothing at '{args.path}'. list_files shows what is there.")
    if await ensure_async(contents.exists(new)):
        raise ToolError(f"'{new}' already exists; choose another new_path, or delete_path it first.")
    if (new + "/").startswith(old + "/"):
        raise ToolError(f"'{old}' cannot be moved into itself.")
    await _make_parents(contents, new)
    try:
        await ensure_async(contents.rename(old, new))
    except HTTPError as err:
        raise ToolError(
            f"Could not rename '{old}': {err.log_message or err.reason}. Nothing was changed."
        ) from err
    moved = await _move_sessions(ctx, old, new)
    note = f"; {moved} kernel session{'s' if moved != 1 else ''} moved with it" if moved else ""
    return ToolResult(f"Renamed {old} to {new}{note}.", {"path": new, "sessions_moved": moved})


async def _move_sessions(ctx: ToolContext, old: str, new: str) -> int:
    """Point sessions at the new path, as JupyterLab does on a rename, so tabs and kernels stay paired."""
    sessions = ctx.services.sessions
    moved = 0
    for session in await ensure_async(sessions.list_sessions()):
        path = session.get("path") or ""
        if path == old or path.startswith(old + "/"):
            updated = new + path[len(old) :]
            changes = {"path": updated}
            if session.get("name") == posixpath.basename(path):
                changes["name"] = posixpath.basename(updated)
            await sessions.update_session(session["id"], **changes)
            moved += 1
    return moved


class DeletePath(Args):
    path: str


@tool("delete_path", DeletePath, obj(path="string"), action="write", destructive=True)
async def delete_path(ctx: ToolContext, args: DeletePath) -> ToolResult:
    """Delete a file or folder (to the trash where the server keeps one)."""
    contents = ctx.services.contents
    api = await ctx.services.text_documents.checked(args.path, whole=True)
    if not api:
        raise ToolError("The server root cannot be deleted; give a path inside it.")
    if not await ensure_async(contents.exists(api)):
        raise ToolError(f"Nothing at '{args.path}'. list_files shows what is there.")
    try:
        await ensure_async(contents.delete(api))
    except HTTPError as err:
        raise ToolError(
            f"Could not delete '{api}': {err.log_message or err.reason}. Nothing was changed."
        ) from err
    return ToolResult(f"Deleted {api}.", {"path": api})


TOOLS: list[ToolSpec[Any]] = [
    list_files,
    read_file,
    write_file,
    edit_file,
    download_file,
    rename_path,
    delete_path,
]
