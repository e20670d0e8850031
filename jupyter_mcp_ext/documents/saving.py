"""A deadline on unsaved changes: a notebook that keeps changing is still saved every few seconds.

The collaboration layer saves a room ``document_save_delay`` after its last change, and every change
restarts that wait: an agent editing without pause, or a cell printing every 0.3 s, postpones the
save for as long as it goes on (a crash then loses all of it, the person's typing included). Each
time this extension opens a room to read or write it, a deadline is armed for that room (once; it
is not pushed back by later changes); when it is reached and the document still has unsaved
changes, it is written to its file at once. It respects the collaboration
layer's settings: nothing is forced when saving is off (``document_save_delay`` None) or when every
person in the room turned autosave off.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from jupyter_server_ydoc.utils import OutOfBandChanges

log = logging.getLogger(__name__)

RETRY_SECONDS = 0.25  # when our previous save of the room is still running


class SaveDeadline:
    def __init__(self, settings: dict[str, Any], max_delay: float | None):
        self._settings = settings
        self.max_delay = max_delay
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._saving: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()  # held: the loop keeps only weak references

    def arm(self, room_id: str, delay: float | None = None) -> None:
        """Save ``room_id`` within ``max_delay`` if it has unsaved changes then (no-op if armed)."""
        if not self.max_delay or self.max_delay <= 0 or room_id in self._timers:
            return
        loop = asyncio.get_running_loop()
        self._timers[room_id] = loop.call_later(
            self.max_delay if delay is None else delay, self._due, room_id
        )

    def _due(self, room_id: str) -> None:
        self._timers.pop(room_id, None)
        task = asyncio.ensure_future(self._save(room_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _save(self, room_id: str) -> None:
        if room_id in self._saving:
            self.arm(room_id, RETRY_SECONDS)
            return
        self._saving.add(room_id)
        try:
            await self._save_room(room_id)
        except Exception:
            log.exception("Could not save room %s", room_id)
        finally:
            self._saving.discard(room_id)

    async def _save_room(self, room_id: str) -> None:
        ext = self._settings.get("jupyter_server_ydoc")
        server = getattr(ext, "ywebsocket_server", None)
        if server is None or not server.room_exists(room_id) or ext.document_save_delay is None:
            return
        room = server.rooms[room_id]
        file_id = room_id.split(":", 2)[-1]
        if not _autosave_on(room) or file_id not in ext.file_loaders:
            return
        doc = await ext.get_document(room_id=room_id, copy=False)
        if doc is None or not doc.dirty:
            return
        await save(ext.file_loaders[file_id], doc, file_format=room.file_format, file_type=room.file_type)

    def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for task in self._tasks:
            task.cancel()


async def save(loader: Any, doc: Any, *, file_format: str, file_type: str) -> bool:
    """Write the live document to its file through the room's own ``FileLoader``; True if written.

    The room's own save is a task that its next change cancels (a debounce), so under a steady
    stream of changes it may never get through; this call is not cancelled by changes. It takes
    the loader's lock like the room's saves, and keeps their check: if the file changed on disk
    since the room read it, nothing is written and the room is told to reload it, as the
    collaboration layer's file watcher would.
    """
    seen = loader.last_modified
    with doc.ydoc.transaction():  # one transaction for the whole read, not one per cell and field
        content = doc.get()
    try:
        saved = await loader.maybe_save_content(
            {"format": file_format, "type": file_type, "content": content}
        )
    except OutOfBandChanges:
        # maybe_save_content took the new modification time as seen: put back the one the room
        # holds, so the watcher's check notices the change and reloads the room from disk.
        loader.last_modified = seen
        await loader.maybe_notify()
        return False
    if saved:
        doc.hash = saved["hash"]  # as the room does after a save: tabs compare it with the file's
    return bool(saved)


def _autosave_on(room: Any) -> bool:
    # As the collaboration layer decides: anyone voting for autosave (a missing vote counts as yes).
    votes = [state.get("autosave", True) for state in room.awareness.states.values() if state]
    return not votes or any(votes)
