"""A deadline on unsaved changes: a notebook that keeps changing is still saved every few seconds.

The collaboration layer saves a room ``document_save_delay`` after its last change, and every change
restarts that wait: an agent editing without pause, or a cell printing every 0.3 s, postpones the
save for as long as it goes on (a crash then loses all of it, the person's typing included). Each
time this extension opens a room to read or write it, a deadline is armed for that room (once; it
is not pushed back by later changes); when it is reached and the document still has unsaved
changes, it is written to its file at once, unless the room's own save is under way: then the
deadline waits for it and writes only if it did not get through (a change cancelled it). It respects
the collaboration layer's settings: nothing is forced when saving is off (``document_save_delay`` None) or when every
person in the room turned autosave off.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from jupyter_ydoc import YNotebook

from . import collaboration
from .content import notebook_content

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
        room = collaboration.room(self._settings, room_id)
        if room is None or collaboration.save_delay(self._settings) is None:
            return
        loader = collaboration.file_loader(self._settings, room_id)
        if not collaboration.autosave_on(room) or loader is None:
            return
        await _room_save_settled(room)
        doc = await collaboration.document(self._settings, room_id)
        if doc is None or not doc.dirty:
            return
        file_format, file_type = collaboration.file_kind(room)
        await save(loader, doc, file_format=file_format, file_type=file_type, room=room)

    def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for task in self._tasks:
            task.cancel()


async def save(loader: Any, doc: Any, *, file_format: str, file_type: str, room: Any = None) -> bool:
    """Write the live document to its file through the room's own ``FileLoader``; True if written.

    The room's own save is a task that its next change cancels (a debounce), so under a steady
    stream of changes it may never get through; this call is not cancelled by changes. It takes
    the loader's lock like the room's saves, and keeps their check: if the file changed on disk
    since the room read it, nothing is written and the room is told to reload it, as the
    collaboration layer's file watcher would.

    ``room``: the document's room. When nothing changed since the read, this save is what the room's
    own pending save would write: that one is called off, and ``dirty`` is cleared as the room does
    after its saves (the idle-room evictor waits for it), under the room's lock for those flags so
    that writing them does not start its save again. Without it only ``hash`` is written.
    """
    with doc.ydoc.transaction():  # one transaction for the whole read, not one per cell and field
        content = notebook_content(doc) if isinstance(doc, YNotebook) else doc.get()
        read_state = doc.ydoc.get_state()
    saved = await collaboration.save_content(
        loader, {"format": file_format, "type": file_type, "content": content}
    )
    if saved:
        lock = collaboration.update_lock(room)
        if lock is None:
            doc.hash = saved["hash"]  # as the room does after a save: tabs compare it with the file's
        else:
            async with lock:
                with doc.ydoc.transaction():
                    if doc.ydoc.get_state() == read_state:
                        _call_off_pending_save(room)
                        doc.dirty = False
                    doc.hash = saved["hash"]
    return bool(saved)


async def _room_save_settled(room: Any) -> None:
    """Wait for the room's own save if one is pending or running (it saves within its delay).

    Where collaboration gives no sign of it, the deadline saves at once as it used to. A change
    cancels the task (the task then ends quietly): the caller finds ``dirty`` still set and saves,
    so a steady stream of changes is saved by the deadline as before.
    """
    task = collaboration.pending_save(room)
    if task is not None:
        await asyncio.wait({task})


def _call_off_pending_save(room: Any) -> None:
    # The room's debounced save: it ends quietly when cancelled, and would only write the content
    # just saved. Its write itself, once begun, is shielded by the loader.
    task = collaboration.pending_save(room)
    if task is not None:
        task.cancel()
