"""Documents: finds the live shared notebook (the one JupyterLab tabs edit) for a path.

Every call resolves the document afresh: a handle kept across calls goes stale when the
collaboration layer drops its room, and edits on a stale handle are lost without a sound. Rooms
opened here for a notebook no tab has open are closed again after an idle time; the collaboration
layer saves every change on its own (``document_save_delay``) before that. Once every agent that used
such a room has left (its MCP session ended), the room goes as a room goes after its last tab closed:
after collaboration's ``document_cleanup_delay``, not after the idle time kept for agents still here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_ydoc import YNotebook
from pycrdt import Map
from tornado.web import HTTPError

from ..errors import ToolError
from ..loop.gate import unpaused
from . import collaboration, observers
from .blank import drop_filler
from .cells import mark_dirty
from .content import read_in_one_pass
from .paths import canonical, without_root
from .saving import SaveDeadline
from .secrets import DEFAULT_DENIED, DeniedFiles
from .update_store import UpdateStores

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
        ready_timeout: float | None = 30.0,
    ):
        self._settings = settings
        self.saves = SaveDeadline(settings, max_save_delay)
        self.stores = UpdateStores(settings)
        self.ready_timeout = ready_timeout
        self.contents = contents
        self.denied = denied or DeniedFiles(DEFAULT_DENIED)
        self.idle_timeout = idle_timeout
        self._agent_rooms: dict[str, float] = {}  # room id -> last use (monotonic seconds)
        self._held: dict[str, int] = {}  # room id -> calls in flight holding its document
        self._users: dict[str, set[str]] = {}  # agent room id -> the agents that used it and are here
        self._left: set[str] = set()  # agent rooms whose agents all left: closed as a closed tab's
        self._evictor: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._all_closed: list[Callable[[], None]] = []  # told when the last agent room has closed

    def _collaboration_on(self) -> None:
        if not collaboration.enabled(self._settings):
            raise ToolError(
                "Real-time collaboration is off on this Jupyter server, so notebooks cannot be edited "
                "safely. Enable the jupyter_server_ydoc extension (jupyter-collaboration) and restart."
            )

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
        return collaboration.room_id_of("json", "notebook", ids.get_id(api) or ids.index(api))

    def is_open_in_tab(self, api: str) -> bool:
        """Whether a client (a JupyterLab tab) is connected to the notebook's room right now."""
        if not collaboration.enabled(self._settings):
            return False
        file_id = self._settings["file_id_manager"].get_id(api)
        room_id = collaboration.room_id_of("json", "notebook", file_id) if file_id else None
        return room_id is not None and collaboration.anyone_in(collaboration.room(self._settings, room_id))

    async def open(
        self,
        path: str,
        *,
        upgrade: bool = False,
        held: list[str] | None = None,
        rooms: dict[str, str] | None = None,
        user: str | None = None,
    ) -> tuple[str, YNotebook]:
        """The live shared notebook for ``path``: edits on it reach every tab and get saved.

        ``upgrade``: give a notebook older than nbformat 4.5 persistent cell ids (a write).
        ``held``: the room is held (``hold``) from here on and its id added, for the caller to release.
        ``rooms``: the room's id is kept there under the notebook's API path, for the rest of the call.
        ``user``: the agent opening it; once it and every other agent that used the room have left
        (``left``), a room opened here closes as after a tab, not after the idle time.
        """
        api = await self.resolve(path)
        self._collaboration_on()
        room_id = self.room_id(api)
        if rooms is not None:
            rooms[api] = room_id
        if held is not None:
            held.append(self._hold(room_id))
        existed = collaboration.room(self._settings, room_id) is not None
        if not existed:
            await self._check_readable(api, path)
            await self.stores.ensure()  # before the room's store looks at its database
        try:
            doc = await self._ready_document(api, room_id, existed)
        except HTTPError as err:
            raise ToolError(f"Could not open '{path}': {err.log_message or err.reason}.") from err
        except _Unready as unready:
            if unready.why:
                raise ToolError(
                    f"'{path}' did not become ready within {self.ready_timeout:g} s: the collaboration "
                    f"layer could not load its shared document ({unready.why}). Its room was closed: try "
                    "again, and if it fails again, ask the person to check the server's log."
                ) from None
            raise ToolError(
                f"'{path}' did not become ready within {self.ready_timeout:g} s: the collaboration layer is "
                "still loading its shared document. Try again in a moment; if it keeps failing, ask the "
                "person to check the server's log."
            ) from None
        if not isinstance(doc, YNotebook):
            raise ToolError(f"Could not open '{path}' as a notebook.")
        if not existed:
            await drop_filler(doc, api, self.contents)
        if not existed or room_id in self._agent_rooms:
            self._agent_rooms[room_id] = time.monotonic()
            if user is not None:
                self._users.setdefault(room_id, set()).add(user)
                self._left.discard(room_id)
            self._ensure_evictor()
        if upgrade:
            _upgrade_to_cell_ids(doc)
        read_in_one_pass(doc)  # the room's own saves of it, too
        self.saves.arm(room_id)
        return api, doc

    async def _ready_document(self, api: str, room_id: str, existed: bool) -> Any:
        """The room's live document once the room is ready (its content loaded), within the timeout."""
        room = collaboration.room(self._settings, room_id)
        # Every call's path: no task of its own.
        if existed and room is not None and collaboration.ready(room):
            try:
                async with asyncio.timeout(self.ready_timeout):
                    return await collaboration.document(self._settings, room_id)
            except TimeoutError:
                raise _Unready(None) from None
        # A load that outlasts the timeout goes on (a large file): the next call finds it done.
        # The room lives on for every tab: what it does for people is never paused with agents.
        loading = unpaused(self._load(api, room_id, existed))
        loading.add_done_callback(lambda task: task.cancelled() or task.exception())
        try:
            async with asyncio.timeout(self.ready_timeout):
                return await asyncio.shield(loading)
        except TimeoutError:
            why = await self._drop_broken(room_id, loading)
            if why is None and not existed:  # ours, still loading: closed when idle, as any agent room
                self._agent_rooms.setdefault(room_id, time.monotonic())
                self._ensure_evictor()
            raise _Unready(why) from None

    async def _load(self, api: str, room_id: str, existed: bool) -> Any:
        # By room id when it is open: the path's file id was just looked up.
        doc = await collaboration.document(self._settings, room_id) if existed else None
        if doc is None:
            doc = await collaboration.file_document(self._settings, api, "notebook", "json", create=True)
        room = collaboration.room(self._settings, room_id)
        if room is not None and not collaboration.ready(room):  # another's load under way, or one that failed
            await collaboration.until_ready(room)
        return doc

    async def _drop_broken(self, room_id: str, loading: asyncio.Future[Any]) -> str | None:
        """Close a room that can never become ready, so that a retry opens it afresh; say why.

        Only one whose update store has not opened its database, which cannot be opened: a room
        still loading a large file (perhaps for a tab, whose connection joins it only once it is
        loaded) is left to finish.
        """
        room = collaboration.room(self._settings, room_id)
        if room is None or collaboration.ready(room) or collaboration.anyone_in(room):
            return None
        db_path = collaboration.unopened_store(room)
        if db_path is None:
            return None
        await self.stores.ensure()  # tried again: fixed meanwhile, or still failing
        why = self.stores.failure(db_path)
        if why is None or collaboration.ready(room):
            return None
        self._forget(room_id)
        loading.cancel()  # it waits for the store without end, holding the room's lock
        await asyncio.wait({loading})
        with contextlib.suppress(Exception):
            await collaboration.close_room(self._settings, room_id)
        log.warning("Closed room %s: %s", room_id, why)
        return why

    def hold(self, api: str) -> str:
        """Keep the notebook's room open while a call works on its document; ``release`` it after.

        A call can outlast the idle timeout between opening a notebook and editing it (the gate's
        queue, a loaded machine): had its room been closed meanwhile, the edit would go to a detached
        document, lost without a sound. Idle time counts from the last call's end.
        """
        return self._hold(self.room_id(api))

    def _hold(self, room_id: str) -> str:
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
        if not collaboration.enabled(self._settings):
            return None
        if room_id in self._agent_rooms:
            self._agent_rooms[room_id] = time.monotonic()
        room = collaboration.room(self._settings, room_id)
        if room is not None and collaboration.ready(room):  # else opened as a call does: never unloaded
            doc = await collaboration.document(self._settings, room_id)
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

    def left(self, user: str) -> None:
        """An agent left (its session ended): the rooms only it used close as after a tab closed.

        A tab's room stays ``document_cleanup_delay`` after the tab closed (in case it comes back),
        then goes; a room an agent opened stays as long after the agent left, not the idle time kept
        for an agent still connected, which would hold a notebook's document for minutes after
        anyone could use it.
        """
        now = time.monotonic()
        for room_id in [r for r, users in self._users.items() if user in users]:
            users = self._users[room_id]
            users.discard(user)
            if not users:
                del self._users[room_id]
                if room_id in self._agent_rooms:  # else closed already
                    self._left.add(room_id)
                    self._agent_rooms[room_id] = max(self._agent_rooms[room_id], now)
        if self._left:
            self._ensure_evictor()
            self._wake.set()  # it may be asleep for a quarter of the idle time

    def on_all_closed(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` each time the last room kept for agents has closed."""
        self._all_closed.append(callback)

    @property
    def agent_rooms(self) -> int:
        """Rooms open for agents (no tab opened them), closed when idle."""
        return len(self._agent_rooms)

    def _timeout(self, room_id: str) -> float:
        """Idle seconds after which an agent room closes: shorter once its agents all left."""
        if room_id in self._left:
            delay = collaboration.cleanup_delay(self._settings)
            if delay is not None:
                return min(delay, self.idle_timeout)
        return self.idle_timeout

    def _ensure_evictor(self) -> None:
        if self._evictor is None or self._evictor.done():
            self._evictor = asyncio.create_task(self._evict_idle_rooms(), name="jupyter-mcp-ext room evictor")

    async def _evict_idle_rooms(self) -> None:
        while self._agent_rooms:
            shortest = min(self._timeout(r) for r in self._agent_rooms)
            with contextlib.suppress(TimeoutError):  # woken early when agents leave (``left``)
                async with asyncio.timeout(max(0.2, min(shortest / 4, 15))):
                    await self._wake.wait()
            self._wake.clear()
            now = time.monotonic()
            for room_id, last_used in list(self._agent_rooms.items()):
                if now - last_used >= self._timeout(room_id):
                    with contextlib.suppress(Exception):
                        if await self._evict(room_id):
                            self._forget(room_id)
        for callback in self._all_closed:
            callback()

    def _forget(self, room_id: str) -> None:
        self._agent_rooms.pop(room_id, None)
        self._users.pop(room_id, None)
        self._left.discard(room_id)

    async def _evict(self, room_id: str) -> bool:
        """Close an idle room nobody is connected to, once its content is saved. True when gone."""
        room = collaboration.room(self._settings, room_id)
        if room is None:
            return True
        if collaboration.anyone_in(room):
            return False  # a tab has it: the collaboration layer cleans it up when the tab goes
        if not collaboration.ready(room):
            return False  # still loading (its loader holds the room's lock): try again later
        if self._held.get(room_id):
            return False  # a call is working on it
        last_used = self._agent_rooms.get(room_id, 0.0)
        doc = await collaboration.document(self._settings, room_id)
        if doc is not None and doc.dirty:
            return False  # not saved yet: try again later
        # Checked again after the await, with no await before the room leaves the server's table:
        # a tab that connected or a call that used the room meanwhile keeps it.
        if (
            collaboration.anyone_in(room)
            or self._held.get(room_id)
            or self._agent_rooms.get(room_id, 0.0) != last_used
            or collaboration.room(self._settings, room_id) is None
        ):
            return collaboration.room(self._settings, room_id) is None
        await collaboration.close_room(self._settings, room_id)
        log.info("Closed idle agent room %s", room_id)
        return True

    async def stop(self) -> None:
        self.saves.stop()
        if self._evictor is not None:
            self._evictor.cancel()


class _Unready(Exception):
    """A notebook's room did not become ready in time; ``why`` it never will, if it was closed."""

    def __init__(self, why: str | None):
        super().__init__(why)
        self.why = why


def _upgrade_to_cell_ids(doc: YNotebook) -> None:
    """Notebooks older than nbformat 4.5 lose cell ids on save; bump them as JupyterLab does.

    Read on a notebook's first open for writing, then again only after its format keys changed
    (a reload from disk, anyone's write): every write call opens its notebook."""
    checked = _format_checked.get(doc)
    if checked is not None and checked.current:
        return
    meta = doc.ydoc.get("meta", type=Map)
    if checked is None:
        checked = _format_checked[doc] = _FormatChecked(doc, meta)
    if int(meta.get("nbformat", 4)) == 4 and int(meta.get("nbformat_minor", 0)) < 5:
        with doc.ydoc.transaction():
            meta["nbformat_minor"] = 5
            mark_dirty(doc)
    checked.current = True  # after the write: its own change, seen by the observer, is checked


class _FormatChecked:
    """Whether a notebook's format was checked since its ``meta`` keys last changed (an observer on
    the map itself: keys set, by this server or any client; edits inside its ``metadata`` do not)."""

    def __init__(self, doc: YNotebook, meta: Map):
        self.current = False
        self._subscription = observers.observe(doc, meta, self._changed)

    def _changed(self, _event: Any) -> None:
        self.current = False


_format_checked: weakref.WeakKeyDictionary[YNotebook, _FormatChecked] = weakref.WeakKeyDictionary()
