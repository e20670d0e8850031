"""The collaboration layer's update store: its SQLite database made once, before rooms share it.

jupyter-collaboration's ``SQLiteYStore`` (pycrdt-store) creates its database when a room first starts
its store, under a lock each store has of its own. Rooms that start together on a server whose database
does not exist yet (its first start on a root, or after the file was deleted) race: one creates the
tables while another sees them without their version, moves the file away as a "version mismatch",
a third fails to rename it, and a room never becomes ready. Made here once, under one lock, the
database is ready before those rooms look at it, and each room's own start only checks it. Stores
other than SQLite ones are left alone.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import anyio
from pycrdt.store import SQLiteYStore
from traitlets.config import Config, Configurable

from . import collaboration

log = logging.getLogger(__name__)
BATCHED = "jupyter_mcp_ext.documents.ystore.BatchedSQLiteYStore"  # documents/ystore.py

PROBE = ".jupyter_mcp_ext:init.y"  # the document path the initializing store is made for; it writes none


def default_update_store(config: Config) -> bool:
    """Make collaboration's update store the batching one (a thread hand-off per batch of
    updates, not three per update), unless ``YDocExtension.ystore_class`` is set in the server's
    config (files or command line). Run before collaboration links: extensions link in name order,
    ``jupyter_mcp_ext`` before ``jupyter_server_ydoc``. Whether it was set here."""
    if "YDocExtension" in config and "ystore_class" in config.YDocExtension:
        return False
    config.YDocExtension.ystore_class = BATCHED
    return True


class UpdateStores:
    """Makes (or checks) the configured SQLite update store's databases, once per file."""

    def __init__(self, settings: dict[str, Any], *, timeout: float = 30.0):
        self._settings = settings
        self.timeout = timeout
        self._lock = asyncio.Lock()
        self._ready: set[str] = set()  # databases made or checked here (absolute paths)
        self.failures: dict[str, str] = {}  # database -> why it could not be made, for tool errors
        self._paths: list[str] | None = None

    def _stores(self) -> list[SQLiteYStore]:
        """One store per database the collaboration layer's rooms use, made as it makes them."""
        ext = collaboration.extension(self._settings)
        cls = collaboration.store_class(self._settings)
        if ext is None or cls is None or not issubclass(cls, SQLiteYStore):
            return []
        # Rooms a tab opens get the class with the server's config; rooms opened with get_document
        # (ours) the bare class, whose db_path is its default in the server's working directory.
        stores = [cls(path=PROBE, log=log)]
        if issubclass(cls, Configurable):
            stores.append(cls(path=PROBE, log=log, config=ext.config))  # type: ignore[call-arg]  # a Configurable: it takes config
        by_file = {os.path.abspath(s.db_path): s for s in stores if s.db_path != ":memory:"}
        return list(by_file.values())

    def _files(self) -> list[str]:
        """The databases, worked out once (a store made with the server's config costs ~0.2 ms)."""
        if self._paths is None:
            self._paths = [os.path.abspath(s.db_path) for s in self._stores()]
        return self._paths

    def _known(self, path: str) -> bool:
        return path in self._ready and os.path.exists(path)  # a stat: deleted since, made again

    async def ensure(self) -> None:
        """Make or check each database not known to be ready; a stat per file once they are."""
        pending = [path for path in self._files() if not self._known(path)]
        if not pending:
            return
        self._ready.difference_update(pending)  # until made again, later callers wait too
        async with self._lock:  # one at a time: concurrent openers wait for the first one's work
            for store in self._stores():
                path = os.path.abspath(store.db_path)
                if path in pending and not self._known(path):
                    await self._initialize(store)

    async def _initialize(self, store: SQLiteYStore) -> None:
        path = os.path.abspath(store.db_path)
        try:
            with anyio.fail_after(self.timeout):
                async with store:  # its start makes or checks the database, as a room's store would
                    assert store.db_initialized is not None
                    await store.db_initialized.wait()
        except Exception as err:  # the rooms' stores will fail too: say why where it shows
            reason = _reason(err).replace(os.path.dirname(path) + os.sep, "")  # agents see it: no folders
            if self.failures.get(path) != reason:
                log.error("The update store %s could not be initialized: %s", path, reason)
            self.failures[path] = reason
            return
        self.failures.pop(path, None)
        self._ready.add(path)

    def failure(self, db_path: str) -> str | None:
        """Why this database could not be made, naming its file (not its folder), if it could not."""
        reason = self.failures.get(os.path.abspath(db_path))
        if reason is None:
            return None
        return f"its update store {os.path.basename(db_path)} could not be opened ({reason})"


def _reason(err: BaseException) -> str:
    """The first real error in an (anyio) exception group, as one line."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    if isinstance(err, TimeoutError):
        return "it did not answer in time"
    return f"{type(err).__name__}: {err}"
