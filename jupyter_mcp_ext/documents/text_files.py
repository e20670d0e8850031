"""Text files, read and written so that a JupyterLab editor tab showing one stays in step.

A file open in a text editor tab lives in a collaboration room (``text:file:<file_id>``) whose shared
text (a ``jupyter_ydoc.YUnicode``) is what the tab shows and what the collaboration layer saves. A
write to such a file goes into that shared text as a minimal splice; writing the file on disk would
make the room reload and drop whatever the person typed since the last save. Files no room holds are
read and written through the server's ContentsManager, so its root, hidden-file rules and custom
backends apply.
"""

from __future__ import annotations

import base64
import mimetypes
from dataclasses import dataclass
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_ydoc import YUnicode
from pycrdt import Text
from tornado.web import HTTPError

from ..errors import ToolError
from . import activity, collaboration, own_edits
from .cells import mark_dirty
from .merge import Edit, apply, describe_conflicts, edits, merge
from .saving import SaveDeadline
from .secrets import DEFAULT_DENIED, DeniedFiles
from .splices import apply_edits

NOTEBOOK_POINTER = (
    "'{path}' is a notebook; text tools would edit its JSON behind the shared document. "
    "Use get_notebook / read_cells / update_cell, or get_notebook(format='py:percent') and write_notebook_text."
)


@dataclass
class Written:
    """How a write landed: live in a shared document or on disk, and where others' edits were kept."""

    live: bool
    kept: list[tuple[int, int]]  # line ranges of edits made since the agent's read, kept around its change


@dataclass
class TextFile:
    """A text file's content, and whether it came from (and goes back to) a live shared document."""

    path: str
    text: str
    live: YUnicode | None


class TextDocumentService:
    def __init__(
        self,
        settings: dict[str, Any],
        contents: Any,
        *,
        max_file_bytes: int,
        max_download_bytes: int,
        denied: DeniedFiles | None = None,
        saves: SaveDeadline | None = None,
    ):
        self._settings = settings
        self.saves = saves  # the notebooks' save deadline: a tab's text is saved meanwhile too
        self.contents = contents
        self.denied = denied or DeniedFiles(DEFAULT_DENIED)
        self.max_file_bytes = max_file_bytes
        self.max_download_bytes = max_download_bytes

    @property
    def collaboration_on(self) -> bool:
        return collaboration.enabled(self._settings)

    async def checked(
        self, path: str, *, what: str = "path", whole: bool = False, moved_to: str | None = None
    ) -> str:
        """``DeniedFiles.allowed`` on this server: the check of every file operation, a revert's too."""
        return await self.denied.allowed(path, self.contents, what=what, whole=whole, moved_to=moved_to)

    async def resolve(self, path: str, *, must_exist: bool = True, text_only: bool = True) -> str:
        """The API path of a file (not a folder); notebooks refused when ``text_only``."""
        api = await self.checked(path)
        if not api:
            raise ToolError("A file path is needed; list_files shows what is there.")
        if text_only and api.endswith(".ipynb"):
            raise ToolError(NOTEBOOK_POINTER.format(path=path))
        if await ensure_async(self.contents.dir_exists(api)):
            raise ToolError(f"'{path}' is a folder; list_files shows what is in it.")
        if must_exist and not await ensure_async(self.contents.file_exists(api)):
            raise ToolError(f"No file at '{path}'. Call list_files to see the files on this server.")
        return api

    async def live_document(self, api: str, content_type: str = "file", file_format: str = "text") -> Any:
        """The live shared document of a file if a room holds it now (a tab, or one recently closed)."""
        ids = self._settings.get("file_id_manager")
        if not collaboration.enabled(self._settings) or ids is None:
            return None
        file_id = ids.get_id(api)
        room_id = collaboration.room_id_of(file_format, content_type, file_id)
        if not file_id or collaboration.room(self._settings, room_id) is None:
            return None
        try:
            doc = await collaboration.file_document(
                self._settings, api, content_type, file_format, create=False
            )
        except (HTTPError, ValueError, KeyError):
            return None
        if doc is not None and self.saves is not None:
            self.saves.arm(room_id)
        return doc

    def is_open_in_tab(self, api: str) -> bool:
        ids = self._settings.get("file_id_manager")
        file_id = ids.get_id(api) if ids is not None and collaboration.enabled(self._settings) else None
        room_id = collaboration.room_id_of("text", "file", file_id) if file_id else None
        return room_id is not None and collaboration.anyone_in(collaboration.room(self._settings, room_id))

    async def size(self, api: str) -> int | None:
        model = await self._get(api, content=False)
        return model.get("size") if isinstance(model.get("size"), int) else None

    async def read_text(self, api: str) -> TextFile:
        """The file's text: the shared document's if a room holds it, else the saved file's."""
        doc = await self.live_document(api)
        if isinstance(doc, YUnicode):
            activity.watch(doc)  # from the agent's read on, a person's typing is noted
            return TextFile(api, doc.get(), doc)
        await self._check_size(api, self.max_file_bytes, "read_file and edit_file")
        model = await self._get(api, content=True, type="file")
        if model.get("format") != "text":
            raise ToolError(
                f"'{api}' is a binary file ({model.get('mimetype') or 'unknown type'}); "
                "download_file returns it as base64 (images as images)."
            )
        return TextFile(api, model["content"], None)

    async def write_text(self, api: str, text: str, *, base: str | None = None) -> Written:
        """Write ``text``; through the shared document if a room holds the file.

        With ``base`` (the text the agent read), the change base -> text is carried onto what the
        file holds now, so edits made since the read stay; where both touch the same place nothing
        is written and a ToolError shows that place.
        """
        self._check_write_size(text)
        doc = await self.live_document(api)
        if isinstance(doc, YUnicode):
            source = doc.ydoc.get("source", type=Text)
            now = str(source)
            changes, kept = self._rebase(api, base, text, now, doc)
            if kept:
                self._check_write_size(apply(now, changes))
            with activity.own_write(doc), doc.ydoc.transaction():
                apply_edits(source, now, changes)
                mark_dirty(doc)
                own_edits.text(api, now, str(source))  # the journal's record: this change alone
            return Written(True, kept)
        kept = []
        if base is not None and await ensure_async(self.contents.file_exists(api)):
            now = (await self.read_text(api)).text
            changes, kept = self._rebase(api, base, text, now, None)
            text = apply(now, changes)
            self._check_write_size(text)
        try:
            await ensure_async(self.contents.save({"type": "file", "format": "text", "content": text}, api))
        except HTTPError as err:
            raise ToolError(
                f"Could not write '{api}': {err.log_message or err.reason}. Nothing was changed."
            ) from err
        return Written(False, kept)

    def _rebase(
        self, api: str, base: str | None, text: str, now: str, doc: Any
    ) -> tuple[list[Edit], list[tuple[int, int]]]:
        if base is None:
            return edits(now, text), []
        merged = merge(base, text, now)
        if merged.conflicts:
            touch = activity.last_touch(doc, activity.FILE) if doc is not None else None
            name = activity.who(doc, touch) if doc is not None else None
            by = f" by {name}" if name else ""
            raise ToolError(
                f"Nothing was written to {api}: {describe_conflicts(merged.conflicts, by)}"
                "Read it again (read_file) and redo your change on its current text."
            )
        return merged.edits, merged.kept

    async def replace(self, current: TextFile, old: str, new: str) -> bool:
        """Replace every ``old`` in a file just read; a live text gets one splice per occurrence.

        Call without awaiting anything after ``read_text``, so the live text is still what was read.
        """
        updated = current.text.replace(old, new)
        if not isinstance(current.live, YUnicode):
            return (await self.write_text(current.path, updated)).live
        self._check_write_size(updated)
        source = current.live.ydoc.get("source", type=Text)
        text = str(source)
        starts, at = [], text.find(old)
        while at != -1:
            starts.append(at)
            at = text.find(old, at + len(old))
        with activity.own_write(current.live), current.live.ydoc.transaction():
            for start in reversed(starts):  # from the end, so earlier byte offsets stay valid
                byte_start = len(text[:start].encode())
                del source[byte_start : byte_start + len(old.encode())]
                if new:
                    source.insert(byte_start, new)
            mark_dirty(current.live)
            own_edits.text(current.path, text, str(source))
        return True

    async def read_bytes(self, api: str) -> tuple[str, str, bool]:
        """(mime type, content, is base64) of any file under the download cap."""
        await self._check_size(api, self.max_download_bytes, "download_file")
        model = await self._get(api, content=True, type="file")
        mime = model.get("mimetype") or mimetypes.guess_type(api)[0] or "application/octet-stream"
        content = model["content"]
        if model.get("format") == "base64":
            content = "".join(content.split())  # some managers wrap base64 lines
            if len(base64.b64decode(content)) > self.max_download_bytes:
                raise ToolError(self._too_big(api, self.max_download_bytes, "download_file"))
            return mime, content, True
        return mime, content, False

    def _check_write_size(self, text: str) -> None:
        if len(text.encode()) > self.max_file_bytes:
            raise ToolError(
                f"Content of {len(text.encode()):,} bytes is over this server's file limit of "
                f"{self.max_file_bytes:,} bytes (c.MCPExtensionApp.max_file_bytes). Nothing was written."
            )

    async def _check_size(self, api: str, limit: int, what: str) -> None:
        size = await self.size(api)
        if size is not None and size > limit:
            raise ToolError(self._too_big(api, limit, what, size))

    @staticmethod
    def _too_big(api: str, limit: int, what: str, size: int | None = None) -> str:
        has = f" ({size:,} bytes)" if size is not None else ""
        return (
            f"'{api}'{has} is over the {limit:,}-byte limit of {what} on this server. "
            "Work on it from a notebook cell (e.g. read it in parts with Python) instead."
        )

    async def _get(self, api: str, **kwargs: Any) -> dict[str, Any]:
        try:
            return await ensure_async(self.contents.get(api, **kwargs))
        except HTTPError as err:
            raise ToolError(f"Could not read '{api}': {err.log_message or err.reason}.") from err
