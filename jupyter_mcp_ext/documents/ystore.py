"""jupyter-collaboration's SQLite update store, writing the updates that arrive together in one go.

Every change of a shared document is written by the room to its update store, each write a task of
its own that nobody awaits. The stock ``SQLiteYStore`` hands each update to a worker thread three
times (cursor, insert, commit) under one lock, so a stream of edits costs the event loop three
thread hand-offs per update, and behind each the wait for the GIL and the loop's wake-up (issue 21:
about three per agent call, the largest share of an agent's loop time after its own work).

This store keeps what is written: one row per update, in order, with the same metadata, the same
checkpoints every ``checkpoint_interval`` updates, and each ``write`` returning once its own update is
committed. What changes is only how: the updates queued while a commit is under way are inserted and
committed together in one hand-off. Any squashing or size-bound cleanup configured makes every write
take the stock path. Use: ``c.YDocExtension.ystore_class =
"jupyter_mcp_ext.documents.ystore.BatchedSQLiteYStore"``.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import anyio
from anyio import to_thread
from jupyter_server_ydoc.stores import SQLiteYStore
from pycrdt import Doc

Row = tuple[str, bytes, bytes, float]  # path, update, metadata, timestamp


class _Batch:
    __slots__ = ("flushed", "rows", "wake")

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.flushed = False
        self.wake = anyio.Event()  # set once flushed, or when the flusher leaves it for a waiter to take


class BatchedSQLiteYStore(SQLiteYStore):
    """``SQLiteYStore`` whose writes queued behind a commit go to the database in one hand-off."""

    batching = True  # False: every write takes the stock path (the benchmark compares both in one run)
    _open: _Batch | None = None
    _flushing = False

    def _plain(self) -> bool:
        """No squashing nor cleanup configured: the writes this store batches."""
        return (
            self.squash_after_inactivity_of is None
            and self.document_ttl is None
            and self.squash_history_older_than is None
            and not self.cleanup_when_db_size_above
        )

    async def write(self, data: bytes) -> None:
        if self.db_initialized is None:
            raise RuntimeError("YStore not started")
        if not (self.batching and self._plain()):
            await super().write(data)
            return
        await self.db_initialized.wait()
        metadata = await self.get_metadata()
        compressed = self._compress(data) if self._compress else data
        if self._open is None:
            self._open = _Batch()
        batch = self._open
        batch.rows.append((self.path, compressed, metadata, time.time()))
        while not batch.flushed:
            if self._flushing:
                await batch.wake.wait()
            else:
                await self._flush()

    async def _flush(self) -> None:
        """Commit the open batch in one worker-thread hand-off; leave the next to one of its writers."""
        self._flushing = True
        try:
            async with self.lock:  # reads and the stock path's writes take it too
                batch, self._open = self._open, _Batch()
                assert batch is not None
                try:  # the thread runs to its end even if this task is cancelled meanwhile
                    await to_thread.run_sync(self._insert, batch.rows, limiter=self._db._limiter)
                except Exception:  # as the stock store: logged, the update is not retried
                    self.log.exception(
                        "Could not write %d updates of %s to the update store", len(batch.rows), self.path
                    )
                finally:
                    batch.flushed = True
                    batch.wake.set()
        finally:
            self._flushing = False
            following = self._open
            if following is not None and following.rows:  # its writers wait: one of them flushes next
                wake, following.wake = following.wake, anyio.Event()
                wake.set()

    def _insert(self, rows: list[Row]) -> None:
        """In the worker thread: each row, with a checkpoint where the stock store makes one; one commit."""
        db: sqlite3.Connection = self._db._real_connection
        try:
            for row in rows:
                self._update_counter += 1
                if self.checkpoint_interval and self._update_counter >= self.checkpoint_interval:
                    self._checkpoint(db, row[3])
                    self._update_counter = 0
                db.execute("INSERT INTO yupdates VALUES (?, ?, ?, ?)", row)
            db.commit()
        except BaseException:
            db.rollback()
            raise

    def _checkpoint(self, db: sqlite3.Connection, now: float) -> None:
        """The stock store's checkpoint: the last one and every update since, merged, as of ``now``."""
        found = db.execute(
            "SELECT checkpoint, timestamp FROM ycheckpoints WHERE path = ?", (self.path,)
        ).fetchone()
        ydoc: Any = Doc()
        since = 0.0
        if found:
            blob, since = found
            ydoc.apply_update(self._decompress(blob) if self._decompress else blob)
        for (update,) in db.execute(
            "SELECT yupdate FROM yupdates WHERE path = ? AND timestamp >= ? ORDER BY timestamp ASC",
            (self.path, since),
        ).fetchall():
            ydoc.apply_update(self._decompress(update) if self._decompress else update)
        state = ydoc.get_update()
        db.execute(
            "INSERT OR REPLACE INTO ycheckpoints (path, checkpoint, timestamp) VALUES (?, ?, ?)",
            (self.path, self._compress(state) if self._compress else state, now),
        )
