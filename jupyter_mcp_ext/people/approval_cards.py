"""What a person is shown before a gated call goes ahead, and the check that it still does that.

A person approves what the card showed, so that is what may happen: the code of an
``execute_code`` or ``insert_and_execute`` comes from the call's own arguments; the cells of an
``execute_cells`` or ``delete_cells`` are held here and the tool compares them with what it reads,
in the same step that it acts (``ToolContext.confirm_shown``); the file a ``write_file``,
``edit_file``, ``rename_path`` or ``delete_path`` acts on is fingerprinted when shown and again
once approved. Anything changed in between refuses the call: the person is asked again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_ydoc import YNotebook, YUnicode
from tornado.web import HTTPError

from ..documents import cells as nb
from ..documents.paths import api_path, canonical
from ..errors import ToolError
from ..services import Services
from ..tools.toolkit import CHANGED

FILE_TARGETS: dict[str, tuple[str, ...]] = {
    "write_file": ("path",),
    "edit_file": ("path",),
    "delete_path": ("path",),
    "rename_path": ("path", "new_path"),
}


@dataclass
class Shown:
    """The code or change a person is shown, and what must still hold when they approve it."""

    code: str | None
    change: str | None
    cells: list[tuple[str, str]] | None = None  # (id, source) the call acts on, as shown
    targets: dict[str, Any] = field(default_factory=dict)  # path -> fingerprint when shown


async def describe(services: Services, spec: Any, args: Any) -> Shown:
    """The code a call would run, or the change it would make, as a person is shown it."""
    name = spec.name
    for what in ("path", "new_path"):  # a path the tool refuses is refused before anyone is asked:
        if isinstance(given := getattr(args, what, None), str):  # a card never holds megabytes of it
            await api_path(given, services.contents, what=what)
    if name == "execute_code":
        return Shown(args.code, None)
    if name == "insert_and_execute":
        return Shown(args.source, None)
    if name in ("execute_cells", "delete_cells"):
        if name == "execute_cells" and not args.cell_ids and not args.all:
            raise ToolError("Say which cells: cell_ids=[...] or all=true.")
        _, doc = await services.documents.open(args.path)
        # An unknown id fails here as it would in the tool: no one is asked about nothing.
        if name == "execute_cells":
            every = range(len(doc.ycells)) if args.all else nb.find_all(doc, args.cell_ids or [])
            cells = nb.sources(doc, every, code_only=True)
        else:
            cells = nb.sources(doc, sorted(set(nb.find_all(doc, args.cell_ids))))
        text = "\n\n".join(f"# cell {cid}\n{src}" for cid, src in cells)
        if name == "execute_cells":
            return Shown(text, None, cells)
        return Shown(None, f"delete {len(cells)} cell(s) of {args.path}:\n{text}", cells)
    change = {
        "write_file": lambda: f"write {args.path}:\n{args.content}",
        "edit_file": lambda: f"in {args.path}, replace:\n{args.old_string}\nwith:\n{args.new_string}",
        "rename_path": lambda: f"rename {args.path} to {args.new_path}",
        "delete_path": lambda: f"delete {args.path}",
        "restart_kernel": lambda: f"restart the kernel of {args.path}: its variables are lost",
    }.get(name, lambda: f"{name} {args.model_dump_json(exclude_none=True)}")()
    paths = [getattr(args, a) for a in FILE_TARGETS.get(name, ())]
    return Shown(None, change, targets={p: await fingerprint(services, p) for p in paths})


async def confirm(services: Services, spec: Any, shown: Shown) -> None:
    """Refuse (a ToolError) when a file the call acts on changed since the person was shown it."""
    for path, before in shown.targets.items():
        if await fingerprint(services, path) != before:
            raise ToolError(CHANGED.format(tool=spec.name, what=f"'{path}'"))


async def fingerprint(services: Services, path: str) -> Any:
    """What a file change acts on, to tell later whether it changed: the text of a notebook's cells
    or of a text file (the live shared document's when a room holds it), else the saved file's type,
    time and size; None when nothing is there."""
    contents = services.contents
    try:
        api = await api_path(path, contents)
    except ToolError:
        return ("unusable", path)  # the tool refuses it with its own message
    text: str | tuple[Any, ...] | None = None
    if api.endswith(".ipynb"):
        api = canonical(api, contents)
        doc = await services.text_documents.live_document(api, "notebook", "json")
        if isinstance(doc, YNotebook):
            text = "\x00".join(src for _, src in nb.sources(doc, range(len(doc.ycells))))
    else:
        doc = await services.text_documents.live_document(api)
        if isinstance(doc, YUnicode):
            text = doc.get()
    if text is None:
        try:
            text = await _saved(services, api)
        except HTTPError as err:
            return None if err.status_code == 404 else ("unreadable", err.status_code)
    if not isinstance(text, str):
        return text
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


async def _saved(services: Services, api: str) -> str | tuple[Any, ...]:
    """The saved file's text (a notebook's cell sources), or for a folder, a binary or a file too
    large to read its type, time and size."""
    contents = services.contents
    model = await ensure_async(contents.get(api, content=False))
    kind, size = model.get("type"), model.get("size")
    if kind == "file" and isinstance(size, int) and size <= services.text_documents.max_file_bytes:
        model = await ensure_async(contents.get(api, content=True, type="file"))
        return str(model.get("content"))
    if kind == "notebook":
        model = await ensure_async(contents.get(api, content=True, type="notebook"))
        return "\x00".join(str(c.get("source", "")) for c in model["content"].get("cells", []))
    return (kind, model.get("last_modified"), size)
