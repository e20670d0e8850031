"""Watching notebooks for changes: one watcher per file, however many clients subscribe to it.

While a collaboration room holds a notebook, its shared document is observed: a person's keystroke
and an agent's edit count alike, and nothing is polled. Only a notebook no room holds is polled, by
its modification time, once a ``POLL_SECONDS``. One task serves every watched file and ends when
none is watched, so a watcher costs nothing once its last subscriber is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_core.utils import ensure_async
from pycrdt import Map

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0  # how often a file no room holds is looked at, and rooms are looked for
QUIET_SECONDS = 0.3  # changes closer together than this are one notification
MAX_COMPARED_BYTES = 8_000_000  # a larger file whose room just appeared counts as changed, unread


@dataclass
class _File:
    doc: Any = None  # the shared document observed, if a room holds the file
    subscriptions: list[tuple[Any, Any]] = field(default_factory=list)
    mtime: Any = None
    changed_at: float | None = None


class NotebookWatchers:
    """Calls ``on_change(api)`` once changes to a watched notebook pause."""

    def __init__(
        self,
        live_document: Callable[[str], Awaitable[Any]],
        contents: Any,
        on_change: Callable[[str], Awaitable[None]],
    ):
        self._live_document = live_document
        self._contents = contents
        self._on_change = on_change
        self._files: dict[str, _File] = {}
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    @property
    def watched(self) -> list[str]:
        return list(self._files)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def watch(self, api: str) -> None:
        """Start watching ``api`` (no-op if watched): its current state is the baseline."""
        if api in self._files:
            return
        entry = self._files[api] = _File()
        await self._look(api, entry)
        if not self.running:
            self._task = asyncio.create_task(self._run(), name="jupyter-mcp-ext notebook watchers")

    def unwatch(self, api: str) -> None:
        entry = self._files.pop(api, None)
        if entry is not None:
            _unobserve(entry)
        if not self._files:
            self._wake.set()  # the task sees nothing is watched and ends

    async def stop(self) -> None:
        for api in list(self._files):
            self.unwatch(api)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def _run(self) -> None:
        next_look = time.monotonic() + POLL_SECONDS
        while self._files:
            now = time.monotonic()
            if now >= next_look:
                for api, entry in list(self._files.items()):
                    if self._files.get(api) is entry:
                        await self._look(api, entry)
                next_look = time.monotonic() + POLL_SECONDS
            now = time.monotonic()
            wake_at = next_look
            for api, entry in list(self._files.items()):
                if entry.changed_at is None:
                    continue
                due = entry.changed_at + QUIET_SECONDS
                if now >= due:
                    entry.changed_at = None
                    try:
                        await self._on_change(api)
                    except Exception:
                        log.exception("Notifying subscribers of %s failed", api)
                else:
                    wake_at = min(wake_at, due)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(0.0, wake_at - time.monotonic()))

    async def _look(self, api: str, entry: _File) -> None:
        """Follow the room that holds the file now, or its modification time when none does."""
        doc = await self._live_document(api)
        if self._files.get(api) is not entry:
            return  # unwatched meanwhile
        if doc is not entry.doc:
            polled_since = entry.mtime if entry.doc is None else None
            _unobserve(entry)
            entry.doc = doc
            if doc is not None:

                def changed(*_: Any) -> None:
                    entry.changed_at = time.monotonic()
                    self._wake.set()

                for shared in (doc.ycells, doc.ydoc.get("meta", type=Map)):
                    entry.subscriptions.append((shared, shared.observe_deep(changed)))
                # A room that appeared since the last look may already hold edits (an agent opens a
                # room and edits at once): they happened before anything observed it.
                if polled_since is not None and await self._edited_before(api, doc, polled_since):
                    entry.changed_at = time.monotonic()
        if doc is None:
            mtime = await self._mtime(api)
            if entry.mtime is not None and mtime != entry.mtime:
                entry.changed_at = time.monotonic()  # changed on disk (another tool, a git pull, ...)
            entry.mtime = mtime
        else:
            entry.mtime = None  # the room saves the file: its own saves are not news

    async def _edited_before(self, api: str, doc: Any, mtime: Any) -> bool:
        """Whether a room that just appeared differs from the file as last seen on disk: saved since
        (another modification time) or holding unsaved edits (compared as the room compares on load)."""
        try:
            model = await ensure_async(self._contents.get(api, content=False))
            if model.get("last_modified") != mtime or (model.get("size") or 0) > MAX_COMPARED_BYTES:
                return True
            model = await ensure_async(self._contents.get(api, content=True, type="notebook"))
            return bool(await doc.aget() != model["content"])
        except Exception:
            return True  # cannot tell: a needless notification costs a re-read, a lost one is wrong

    async def _mtime(self, api: str) -> Any:
        try:
            model = await ensure_async(self._contents.get(api, content=False))
        except Exception:
            return None
        return model.get("last_modified")


def _unobserve(entry: _File) -> None:
    for shared, sub in entry.subscriptions:
        with contextlib.suppress(Exception):
            shared.unobserve(sub)
    entry.subscriptions.clear()
    entry.doc = None
