"""jupyter-collaboration's SQLite update store, writing the updates that arrive together in one go.

Every change of a shared document is written by the room to its update store, each write a task of
its own that nobody awaits. The stock ``SQLiteYStore`` hands each update to a worker thread three
times (cursor, insert, commit) under one lock, so a stream of edits costs the event loop three
thread hand-offs per update, and behind each the wait for the GIL and the loop's wake-up (about
three per agent call, the largest share of an agent's loop time after its own work).

This store keeps what is written: one row per update, in order, with the same metadata, the same
checkpoints every ``checkpoint_interval`` updates, and each ``write`` returning once its own update is
committed or kept for a retry. What changes is only how: the updates queued while a commit is under
way, or within ``LINGER`` of the first (an agent's insert and its run's outputs), are inserted and
committed together in one hand-off. A commit that fails loses nothing the stock
store would keep: the batch's rows are kept, in order, and written with the next batch (or after
``RETRY`` seconds with none); a row that fails on its own with an error other than the database's
(locked, read-only, out of space: ``sqlite3.OperationalError``) is dropped, as the stock store drops
its update. A writer cancelled while its update waits (the room stopping, the server shutting down)
writes it first, and ``stop`` writes what is kept. Any squashing or size-bound cleanup configured
makes every write take the stock path. The extension makes it collaboration's store unless
``c.YDocExtension.ystore_class`` is set (``app.py``).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import anyio
from anyio import to_thread
from pycrdt import Doc

from .collaboration import SQLiteYStore

Row = tuple[str, bytes, bytes, float]  # path, update, metadata, timestamp
KEEP_BYTES = 64 * 1024 * 1024  # updates kept after failed commits, at most (beyond: dropped, logged)
RETRY = 1.0  # seconds before kept updates are tried again when no write comes to take them along
LINGER = 0.05  # seconds a write with no commit under way waits for others to share its commit


class _Batch:
    __slots__ = ("flushed", "lingering", "rows", "wake")

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.flushed = False
        self.lingering = False  # its first writer waits for others to join it before flushing
        self.wake = anyio.Event()  # set once flushed, or when the flusher leaves it for a waiter to take


class BatchedSQLiteYStore(SQLiteYStore):
    """``SQLiteYStore`` whose writes queued behind a commit go to the database in one hand-off."""

    batching = True  # False: every write takes the stock path (the benchmark compares both in one run)
    linger = LINGER
    _open: _Batch | None = None
    _flushing = False
    _kept: list[Row] | None = None  # rows of failed commits, oldest first, written with the next batch
    _failing = False  # the last commit failed (logged once until one succeeds)
    _retrying = False

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
        try:
            if len(batch.rows) == 1 and not self._flushing and self.linger > 0:
                # The updates of one call (an insert, then its run's outputs) go in one commit.
                batch.lingering = True
                try:
                    await anyio.sleep(self.linger)
                finally:
                    batch.lingering = False
            await self._until_flushed(batch)
        except BaseException:  # cancelled (the room stops): its update is written before it goes
            with anyio.CancelScope(shield=True):
                await self._until_flushed(batch)
            raise

    async def _until_flushed(self, batch: _Batch) -> None:
        while not batch.flushed:
            if self._flushing or batch.lingering:
                await batch.wake.wait()
            else:
                await self._flush()

    async def stop(self) -> None:
        """Write what is waiting or kept (one more try), then stop as the stock store does."""
        if self.db_initialized is not None and self.db_initialized.is_set():
            with anyio.CancelScope(shield=True):
                if self._open is not None and self._open.rows:
                    await self._until_flushed(self._open)
                if self._kept and not self._flushing:
                    await self._flush()
        await super().stop()

    async def _flush(self) -> None:
        """Commit the open batch (after any kept rows) in one worker-thread hand-off; leave the next
        batch to one of its writers."""
        self._flushing = True
        try:
            async with self.lock:  # reads and the stock path's writes take it too
                batch, self._open = self._open or _Batch(), _Batch()
                rows, self._kept = [*(self._kept or []), *batch.rows], None
                try:  # the thread runs to its end even if this task is cancelled meanwhile
                    done, dropped, error = await to_thread.run_sync(
                        self._insert, rows, limiter=self._db._limiter
                    )
                    self._settle(rows, done, dropped, error)
                finally:
                    batch.flushed = True
                    batch.wake.set()
        finally:
            self._flushing = False
            following = self._open
            if following is not None and following.rows:  # its writers wait: one of them flushes next
                wake, following.wake = following.wake, anyio.Event()
                wake.set()

    def _settle(self, rows: list[Row], done: int, dropped: list[int], error: BaseException | None) -> None:
        """After a commit: keep what failed for the next one, log a failure once and the recovery."""
        if dropped:  # failed on their own with a row's error: the stock store loses those too
            self.log.error(
                "Dropped %d updates of %s the update store could not write", len(dropped), self.path
            )
        if error is None:
            if self._failing:
                self.log.warning("The update store of %s is written again, kept updates included", self.path)
            self._failing = False
            return
        kept, size = rows[done:], 0
        for n, row in enumerate(kept):
            size += len(row[1])
            if size > KEEP_BYTES:
                self.log.error("Dropped %d updates of %s kept past %d bytes", len(kept) - n, self.path, size)
                kept = kept[:n]
                break
        self._kept = kept
        if not self._failing:
            self.log.error(
                "Could not write %d updates of %s to the update store (%s: %s); kept, retrying",
                len(kept),
                self.path,
                type(error).__name__,
                error,
            )
        self._failing = True
        group = self._task_group
        if kept and not self._retrying and group is not None:
            self._retrying = True
            group.start_soon(self._retry)

    async def _retry(self) -> None:
        """Kept rows when no write comes to take them along: tried again every ``RETRY`` seconds."""
        try:
            while self._kept:
                await anyio.sleep(RETRY)
                if self._kept and not self._flushing:
                    await self._flush()
        finally:
            self._retrying = False

    def _insert(self, rows: list[Row]) -> tuple[int, list[int], BaseException | None]:
        """In the worker thread: every row in one commit. If that fails with the database's error,
        nothing is written; with another, each row on its own, dropping those that fail alone.
        Gives the rows settled (written or dropped, a prefix), the dropped ones and the error."""
        db: sqlite3.Connection = self._db._real_connection
        try:
            self._commit(db, rows)
            return len(rows), [], None
        except sqlite3.OperationalError as err:
            return 0, [], err
        except Exception:
            pass
        dropped: list[int] = []
        for i, row in enumerate(rows):
            try:
                self._commit(db, [row])
            except sqlite3.OperationalError as err:
                return i, dropped, err
            except Exception:
                dropped.append(i)
        return len(rows), dropped, None

    def _commit(self, db: sqlite3.Connection, rows: list[Row]) -> None:
        """Each row, with a checkpoint where the stock store makes one; one commit, or none of it."""
        counter = self._update_counter
        try:
            for row in rows:
                self._update_counter += 1
                if self.checkpoint_interval and self._update_counter >= self.checkpoint_interval:
                    self._checkpoint(db, row[3])
                    self._update_counter = 0
                db.execute("INSERT INTO yupdates VALUES (?, ?, ?, ?)", row)
            db.commit()
        except BaseException:
            self._update_counter = counter
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
