"""Documents: finds the live shared notebook (the one JupyterLab tabs edit) for a path.

Every call resolves the document afresh: a handle kept across calls goes stale when the
collaboration layer drops its room, and edits on a stale handle are lost without a sound. Rooms
opened here for a notebook no tab has open are closed again after an idle time; the collaboration
layer saves every change on its own (``document_save_delay``) before that.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_ydoc import YNotebook
from pycrdt import Map
from tornado.web import HTTPError

from ..errors import ToolError
from ..gate import unpaused
from .blank import drop_filler
from .cells import mark_dirty
from .paths import canonical, without_root
from .saving import SaveDeadline
from .secrets import DEFAULT_DENIED, DeniedFiles

log = logging.getLogger(__name__)


class DocumentService:
    def __init__(
        self,
        settings: dict[str, Any],
        contents: Any,
        *,
        idle_timeout: float,
        max_save_delay: float | None = None,
        denied: DeniedFiles | None = None,
    ):
        self._settings = settings
        self.saves = SaveDeadline(settings, max_save_delay)
        self.contents = contents
        self.denied = denied or DeniedFiles(DEFAULT_DENIED)
        self.idle_timeout = idle_timeout
        self._agent_rooms: dict[str, float] = {}  # room id -> last use (monotonic seconds)
        self._held: dict[str, int] = {}  # room id -> calls in flight holding its document
        self._evictor: asyncio.Task[None] | None = None

    @property
    def _collaboration(self) -> Any:
        ext = self._settings.get("jupyter_server_ydoc")
        if ext is None:
            raise ToolError(
                "Real-time collaboration is off on this Jupyter server, so notebooks cannot be edited "
                "safely. Enable the jupyter_server_ydoc extension (jupyter-collaboration) and restart."
            )
        return ext

    async def resolve(self, path: str) -> str:
        """The API path of an existing notebook, or a ToolError that says what to do."""
        api, real = await self.denied.locate(path, self.contents)
        # A link to a notebook opens the notebook's own room, not a second one for the same file.
        api = canonical(api, self.contents, real=real)
        if not api.endswith(".ipynb"):
            raise ToolError(f"'{path}' is not a notebook (.ipynb). Notebook tools take .ipynb paths.")
        if not await ensure_async(self.contents.file_exists(api)):
            raise ToolError(
                f"No notebook at '{path}'. Call list_notebooks to see the notebooks on this server."
            )
        return api

    def room_id(self, api: str) -> str:
        ids = self._settings["file_id_manager"]
        # A lookup first: index() opens a write transaction of the id database every time.
        return f"json:notebook:{ids.get_id(api) or ids.index(api)}"

    def is_open_in_tab(self, api: str) -> bool:
        """Whether a client (a JupyterLab tab) is connected to the notebook's room right now."""
        ext = self._settings.get("jupyter_server_ydoc")
        if ext is None:
            return False
        file_id = self._settings["file_id_manager"].get_id(api)
        rooms = ext.ywebsocket_server.rooms
        room = rooms.get(f"json:notebook:{file_id}") if file_id else None
        return bool(room is not None and room.clients)

    async def open(self, path: str, *, upgrade: bool = False) -> tuple[str, YNotebook]:
        """The live shared notebook for ``path``: edits on it reach every tab and get saved.

        ``upgrade``: give a notebook older than nbformat 4.5 persistent cell ids (a write).
        """
        api = await self.resolve(path)
        ext = self._collaboration
        room_id = self.room_id(api)
        existed = ext.ywebsocket_server.room_exists(room_id)
        if not existed:
            await self._check_readable(api, path)
        try:
            # By room id when it is open: the path's file id was just looked up.
            doc = await ext.get_document(room_id=room_id, copy=False) if existed else None
            if doc is None:
                # The room lives on for every tab: what it does for people is never paused with agents.
                doc = await unpaused(
                    ext.get_document(
                        path=api, content_type="notebook", file_format="json", copy=False, create=True
                    )
                )
        except HTTPError as err:
            raise ToolError(f"Could not open '{path}': {err.log_message or err.reason}.") from err
        if not isinstance(doc, YNotebook):
            raise ToolError(f"Could not open '{path}' as a notebook.")
        if not existed:
            await drop_filler(doc, api, self.contents)
        if not existed or room_id in self._agent_rooms:
            self._agent_rooms[room_id] = time.monotonic()
            self._ensure_evictor()
        if upgrade:
            _upgrade_to_cell_ids(doc)
        self.saves.arm(room_id)
        return api, doc

    def hold(self, api: str) -> str:
        """Keep the notebook's room open while a call works on its document; ``release`` it after.

        A call can outlast the idle timeout between opening a notebook and editing it (the gate's
        queue, a loaded machine): had its room been closed meanwhile, the edit would go to a detached
        document, lost without a sound. Idle time counts from the last call's end.
        """
        room_id = self.room_id(api)
        self._held[room_id] = self._held.get(room_id, 0) + 1
        return room_id

    def release(self, room_id: str) -> None:
        left = self._held.get(room_id, 0) - 1
        if left > 0:
            self._held[room_id] = left
        else:
            self._held.pop(room_id, None)
        if room_id in self._agent_rooms:
            self._agent_rooms[room_id] = time.monotonic()

    async def live(self, api: str, room_id: str) -> YNotebook | None:
        """The live document of a notebook opened before, by its room; reopened if the room closed.

        For writers that outlive a tool call (a running cell): None once the notebook is gone. The
        room id is the caller's, taken when it opened the notebook, so a rename mid-run still lands
        the outputs in the same notebook.
        """
        ext = self._settings.get("jupyter_server_ydoc")
        if ext is None:
            return None
        if room_id in self._agent_rooms:
            self._agent_rooms[room_id] = time.monotonic()
        if ext.ywebsocket_server.room_exists(room_id):
            doc = await ext.get_document(room_id=room_id, copy=False)
            self.saves.arm(room_id)
            return doc if isinstance(doc, YNotebook) else None
        try:
            return (await self.open(api, upgrade=True))[1]
        except ToolError:
            return None

    async def _check_readable(self, api: str, path: str) -> None:
        """Refuse a file the collaboration layer could not load, before it tries (and logs a trace)."""
        try:
            await ensure_async(self.contents.get(api, type="notebook", content=True))
        except HTTPError as err:
            reason = without_root(err.log_message or err.reason or "unreadable", self.contents)
            raise ToolError(
                f"'{path}' is not a valid notebook ({reason}). It was left untouched; fix or replace the file."
            ) from err

    def _ensure_evictor(self) -> None:
        if self._evictor is None or self._evictor.done():
            self._evictor = asyncio.create_task(self._evict_idle_rooms(), name="jupyter-mcp-ext room evictor")

    async def _evict_idle_rooms(self) -> None:
        while self._agent_rooms:
            await asyncio.sleep(max(0.2, min(self.idle_timeout / 4, 15)))
            now = time.monotonic()
            for room_id, last_used in list(self._agent_rooms.items()):
                if now - last_used >= self.idle_timeout:
                    with contextlib.suppress(Exception):
                        if await self._evict(room_id):
                            self._agent_rooms.pop(room_id, None)

    async def _evict(self, room_id: str) -> bool:
        """Close an idle room nobody is connected to, once its content is saved. True when gone."""
        ext = self._settings.get("jupyter_server_ydoc")
        if ext is None or not ext.ywebsocket_server.room_exists(room_id):
            return True
        server = ext.ywebsocket_server
        room = server.rooms[room_id]
        if room.clients:
            return False  # a tab has it: the collaboration layer cleans it up when the tab goes
        if self._held.get(room_id):
            return False  # a call is working on it
        last_used = self._agent_rooms.get(room_id, 0.0)
        doc = await ext.get_document(room_id=room_id, copy=False)
        if doc is not None and doc.dirty:
            return False  # not saved yet: try again later
        # Checked again after the await, with no await before the room leaves the server's table:
        # a tab that connected or a call that used the room meanwhile keeps it.
        if (
            room.clients
            or self._held.get(room_id)
            or self._agent_rooms.get(room_id, 0.0) != last_used
            or not server.room_exists(room_id)
        ):
            return not server.room_exists(room_id)
        await server.delete_room(name=room_id)
        file_id = room_id.rsplit(":", 1)[-1]
        loaders = ext.file_loaders
        if file_id in loaders and loaders[file_id].number_of_subscriptions == 0:
            await loaders.remove(file_id)
        log.info("Closed idle agent room %s", room_id)
        return True

    async def stop(self) -> None:
        self.saves.stop()
        if self._evictor is not None:
            self._evictor.cancel()


def _upgrade_to_cell_ids(doc: YNotebook) -> None:
    """Notebooks older than nbformat 4.5 lose cell ids on save; bump them as JupyterLab does."""
    meta = doc.ydoc.get("meta", type=Map)
    if int(meta.get("nbformat", 4)) == 4 and int(meta.get("nbformat_minor", 0)) < 5:
        with doc.ydoc.transaction():
            meta["nbformat_minor"] = 5
            mark_dirty(doc)
