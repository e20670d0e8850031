"""Recording one call for the journal: the notebooks it opened and the file it names, before and after.

Notebooks are snapshotted when the tool opens them (``ToolContext.on_open``) and when the call ends.
A file named by the call's ``path`` is read before and after it when it is a text file, and a
notebook about to be deleted is kept whole, so that a revert can write either back. Where the call's
own edit was noted as it was applied (``documents.applied``: a live text's before and after, a new
cell's source), that is the entry: a person's typing that lands while the call awaits is not the
agent's to undo.
"""

from __future__ import annotations

import contextlib
from typing import Any

from jupyter_core.utils import ensure_async

from ..documents import cells as nb
from ..documents import own_edits
from ..documents.paths import api_path
from ..errors import ToolError
from ..services import Services
from . import changes
from .journal import Change

MAX_KEPT_FILE = 2_000_000  # bytes of a file kept to undo a write or a delete
NOT_KEPT = (
    f"the file was too large (over {MAX_KEPT_FILE:,} bytes) or binary, so it was not kept and this "
    "write cannot be undone; put it back by hand (from a backup or the trash)"
)


# Tools whose ``path`` is a notebook they open before they change anything, and that never create,
# delete or rename a file: the notebook's snapshots say all they did, so the file is not read before
# them (a path check, a database lookup and a stat, on every call).
CELLS_ONLY = frozenset(
    {
        "insert_cells",
        "update_cell",
        "delete_cells",
        "move_cell",
        "clear_outputs",
        "execute_cells",
        "insert_and_execute",
        "execute_code",
    }
)


def _bytes(size: Any) -> str:
    return f"{size:,} bytes" if isinstance(size, int) else "size unknown"


class Recorder:
    def __init__(self, services: Services, tool: str, kind: str, args: Any):
        self.services = services
        self.tool = tool
        self.run = kind == "run"
        self._whole = tool in changes.KEEPS_WHOLE_CELLS
        self._only = changes.targets(tool, args)
        self._notebooks: dict[str, tuple[Any, changes.Snapshot]] = {}
        self._file: dict[str, Any] | None = None
        self._notebook_changes: list[Change] | None = None
        self._named: str | None = None  # the path of a CELLS_ONLY call that opened nothing, normalised
        self._raw: str | None = None
        self.applied = own_edits.Applied()  # what the call's edits applied, noted as they did

    def recording(self) -> contextlib.AbstractContextManager[own_edits.Applied]:
        """Around the tool's run: its edits note what they applied here."""
        return own_edits.recording(self.applied)

    def opened(self, path: str, doc: Any) -> None:
        """The tool opened a notebook: keep how it is before the tool changes it (the first open)."""
        if path not in self._notebooks:
            self._notebooks[path] = (doc, changes.snapshot(doc, self._only, whole=self._whole))

    @property
    def path(self) -> str | None:
        if self._notebooks:
            return next(iter(self._notebooks))
        return self._file["path"] if self._file else self._named

    async def before(self, args: Any) -> None:
        """Note the file the call names (its text, or the whole notebook if it may be deleted)."""
        raw = getattr(args, "path", None)
        if not isinstance(raw, str):
            return
        if self.tool in CELLS_ONLY:
            self._raw = raw
            return
        with contextlib.suppress(ToolError):
            path = await api_path(raw, self.services.contents)
            if not path:
                return
            new_path = getattr(args, "new_path", None)
            if isinstance(new_path, str):
                self._file = {"path": path, "rename": await api_path(new_path, self.services.contents)}
                return
            self._file = {
                "path": path,
                "text": await self._text(path),
                "deleting": self.tool == "delete_path",
            }
            if self._file["text"] is None:  # absent, or there but not kept: which one matters
                self._file["stamp"] = await self._stamp(path)
            if self._file["deleting"]:
                self._file["model"] = await self._model(path)

    def notebooks_after(self, ok: bool) -> None:
        """Snapshot the notebooks now, synchronously, as the tool returns: a person's keystrokes
        queued behind the call land at the next await, and would otherwise count as the agent's
        change (and a revert would take them out)."""
        self._notebook_changes = self._diff_notebooks(ok)

    def after_now(self, ok: bool) -> list[Change] | None:
        """What ``after`` finds, when that needs no await (a call on notebooks only, the usual
        case); None when it does. The entry then goes out in the same loop iteration as the
        call's edit, and a person's review mark does not wait behind whatever else the loop runs."""
        if not self._notebooks and self._raw is not None:
            return None
        if self._file and (not self._notebooks or self._file["path"] not in self._notebooks):
            return None
        return self._notebook_changes if self._notebook_changes is not None else self._diff_notebooks(ok)

    async def after(self, ok: bool) -> list[Change]:
        found = self._notebook_changes if self._notebook_changes is not None else self._diff_notebooks(ok)
        if not self._notebooks and self._raw is not None:  # failed before it opened it
            with contextlib.suppress(ToolError):
                self._named = await api_path(self._raw, self.services.contents) or None
        if self._file and (not self._notebooks or self._file["path"] not in self._notebooks):
            found += await self._file_changes()
        return found

    def _diff_notebooks(self, ok: bool) -> list[Change]:
        found: list[Change] = []
        for doc, before in self._notebooks.values():
            now = nb.ids(doc)
            came_went = changes.came_and_went(before.order, now)
            # The cells read before (names resolved), and any the call added.
            only = None if self._only is None else set(before.cells) | came_went[0]
            after = changes.snapshot(doc, only, exact=True)
            found += changes.diff(
                before,
                after,
                run=self.run,
                ran=self.run and ok,
                inserted=self.applied.inserted,
                came_went=came_went if after.order == now else None,
            )
        return found

    async def _file_changes(self) -> list[Change]:
        contents = self.services.contents
        f = self._file
        assert f is not None
        path = f["path"]
        if "rename" in f:
            new = f["rename"]
            if await ensure_async(contents.exists(new)) and not await ensure_async(contents.exists(path)):
                return [Change("file", None, path, new, {"rename": [path, new]})]
            return []
        exists = await ensure_async(contents.exists(path))
        if f["deleting"]:
            if exists:
                return []
            model = f.get("model")
            undo = (
                {"path": path, "model": model}
                if model
                else {"path": path, "revertible": False, "why": "a folder or a large file cannot be restored"}
            )
            return [Change("file", None, f["text"] or path, None, undo)]
        if path.endswith(".ipynb"):
            if f["text"] is None and exists:  # a notebook this call created
                return [
                    Change(
                        "file",
                        None,
                        None,
                        "(new notebook)",
                        {"path": path, "revertible": False, "why": "delete a new notebook by hand"},
                    )
                ]
            return []
        if path in self.applied.texts:  # a live text: its splices' own before and after
            was, now = self.applied.texts[path]
            return [Change("file", None, was, now, {"path": path})] if was != now else []
        after = await self._text(path)
        stamp = f.get("stamp")
        if stamp is not None:  # a file too large (or binary) to keep was there: never a creation
            stamped = await self._stamp(path)
            if stamped == stamp:
                return []
            undo = {"path": path, "revertible": False, "why": NOT_KEPT}
            was = f"({_bytes(stamp[0])}, not kept)"
            return [
                Change(
                    "file",
                    None,
                    was,
                    after if after is not None else f"({_bytes(stamped and stamped[0])})",
                    undo,
                )
            ]
        if after is None or after == f["text"]:
            return []
        return [Change("file", None, f["text"], after, {"path": path})]

    async def _text(self, path: str) -> str | None:
        """A text file's text (live if open in a tab); None if absent, binary, large or a notebook."""
        if path.endswith(".ipynb"):
            exists = await ensure_async(self.services.contents.file_exists(path))
            return "" if exists else None
        files = self.services.text_documents
        with contextlib.suppress(ToolError, OSError):
            if await ensure_async(self.services.contents.file_exists(path)):
                size = await files.size(path)
                if size is None or size <= MAX_KEPT_FILE:
                    return (await files.read_text(path)).text
        return None

    async def _stamp(self, path: str) -> tuple[Any, Any] | None:
        """A file's size and last change, to tell whether a file not kept was changed; None if absent."""
        contents = self.services.contents
        with contextlib.suppress(Exception):
            if not await ensure_async(contents.file_exists(path)):
                return None
        try:
            model = await ensure_async(contents.get(path, content=False))
        except Exception:
            return (None, None)  # there, but unreadable: still never a creation
        return (model.get("size"), str(model.get("last_modified")))

    async def _model(self, path: str) -> dict[str, Any] | None:
        """The saved model of a file about to be deleted, to save back on a revert."""
        contents = self.services.contents
        with contextlib.suppress(Exception):
            if await ensure_async(contents.file_exists(path)):
                model = await ensure_async(contents.get(path, content=False))
                if (model.get("size") or 0) <= MAX_KEPT_FILE:
                    model = await ensure_async(contents.get(path, content=True))
                    return {k: model[k] for k in ("type", "format", "content")}
        return None
