"""The batching update store (issue 21) keeps exactly what the stock SQLite store keeps, in fewer hand-offs.

Both stores get the same stream of real document updates, written the way a room writes them (each
``write`` a task of its own, none awaited by the editor); the database rows, the checkpoints and the
document each store gives back must be the same, and the batching store must have needed fewer
worker-thread hand-offs than updates.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest
from jupyter_server_ydoc.stores import SQLiteYStore
from pycrdt import Array, Doc, Text

from jupyter_mcp_ext.documents.ystore import BatchedSQLiteYStore

UPDATES = 230  # typed in 23 cells: 253 updates, two checkpoints at the stock interval of 100


def _updates() -> list[bytes]:
    """Real updates of a document: cells appended and typed into, one update per change."""
    doc: Doc = Doc()
    cells = doc.get("cells", type=Array)
    made: list[bytes] = []
    doc.observe(lambda event: made.append(event.update))
    for i in range(UPDATES):
        if i % 10 == 0:
            cells.append(Text())
        text = cells[len(cells) - 1]
        text.insert(len(text), f"{i};")  # ``+=`` on a Text in an Array empties it (field notes)
    return made


class Counting(BatchedSQLiteYStore):
    """Counts the worker-thread hand-offs that write rows."""

    hand_offs = 0

    def _insert(
        self, rows: list[tuple[str, bytes, bytes, float]]
    ) -> tuple[int, list[int], BaseException | None]:
        type(self).hand_offs += 1
        return super()._insert(rows)


async def _store(cls: type[SQLiteYStore], db: Path, updates: list[bytes], **traits: object) -> list[str]:
    """Write ``updates`` as a room does, concurrently; give back the document the store restores."""
    store = cls(path="json:notebook:x", db_path=str(db), **traits)
    async with store:
        async with anyio.create_task_group() as tasks:
            for update in updates:
                tasks.start_soon(store.write, update)
        restored: Doc = Doc()
        await store.apply_updates(restored)
    cells = restored.get("cells", type=Array)
    return [str(cell) for cell in cells]


def _rows(db: Path) -> tuple[list[tuple[str, bytes, bytes]], list[str]]:
    with sqlite3.connect(db) as conn:
        updates = conn.execute("SELECT path, yupdate, metadata FROM yupdates ORDER BY rowid").fetchall()
        checkpoints = [p for (p,) in conn.execute("SELECT path FROM ycheckpoints")]
    return updates, checkpoints


def _checkpoint(db: Path) -> list[str]:
    """The cells of the document in the last checkpoint."""
    with sqlite3.connect(db) as conn:
        found = conn.execute("SELECT checkpoint FROM ycheckpoints").fetchone()
    if found is None:
        return []
    doc: Doc = Doc()
    doc.apply_update(found[0])
    return [str(cell) for cell in doc.get("cells", type=Array)]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_batched_store_keeps_what_the_stock_store_keeps(tmp_path: Path, anyio_backend: str) -> None:
    updates = _updates()
    Counting.hand_offs = 0
    stock = await _store(SQLiteYStore, tmp_path / "stock.db", updates)
    batched = await _store(Counting, tmp_path / "batched.db", updates)
    assert batched == stock
    assert stock[-1].endswith(f"{UPDATES - 1};")
    assert _rows(tmp_path / "batched.db") == _rows(tmp_path / "stock.db")
    assert len(_rows(tmp_path / "batched.db")[0]) == len(updates)
    assert _checkpoint(tmp_path / "batched.db") == _checkpoint(tmp_path / "stock.db") != []
    # The stock store needs three hand-offs per update; this one a few for all of them.
    assert 0 < Counting.hand_offs < len(updates) / 10, Counting.hand_offs


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_one_at_a_time_is_the_stock_store(tmp_path: Path, anyio_backend: str) -> None:
    """Written one at a time (nothing to batch), rows and checkpoints are the stock store's."""
    updates = _updates()
    for cls, name in ((SQLiteYStore, "stock.db"), (BatchedSQLiteYStore, "one.db")):
        store = cls(path="p", db_path=str(tmp_path / name))
        async with store:
            for update in updates:
                await store.write(update)
    assert _rows(tmp_path / "one.db") == _rows(tmp_path / "stock.db")
    assert _checkpoint(tmp_path / "one.db") == _checkpoint(tmp_path / "stock.db") != []


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_squashing_takes_the_stock_path(tmp_path: Path, anyio_backend: str) -> None:
    """With history squashing configured, every write is the stock store's own."""
    updates = _updates()[:20]
    Counting.hand_offs = 0
    got = await _store(Counting, tmp_path / "squash.db", updates, squash_after_inactivity_of=3600)
    assert Counting.hand_offs == 0
    assert got[-1].endswith("17;")  # 20 updates: two cells opened, 18 typed


async def _written(store: BatchedSQLiteYStore, updates: list[bytes]) -> None:
    async with anyio.create_task_group() as tasks:  # as a room writes: a task per update
        for update in updates:
            tasks.start_soon(store.write, update)


def _restored(db: Path) -> list[str]:
    """The cells the rows give back, in their order."""
    doc: Doc = Doc()
    for _, update, _ in _rows(db)[0]:
        doc.apply_update(update)
    return [str(cell) for cell in doc.get("cells", type=Array)]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_failed_commit_keeps_its_updates_for_a_retry(tmp_path: Path, anyio_backend: str) -> None:
    """The table gone for a moment (another connection renamed it): the batch's commit fails with the
    database's error; its updates are written a second later, in order, with no write to take them."""
    updates, db = _updates()[:40], tmp_path / "kept.db"
    store = BatchedSQLiteYStore(path="p", db_path=str(db))
    async with store:
        await _written(store, updates[:10])
        with sqlite3.connect(db) as other:
            other.execute("ALTER TABLE yupdates RENAME TO hidden")
        await _written(store, updates[10:30])
        with sqlite3.connect(db) as other:
            other.execute("ALTER TABLE hidden RENAME TO yupdates")
        await _written(store, updates[30:35])  # the next batch takes the kept ones along
        with sqlite3.connect(db) as other:
            other.execute("ALTER TABLE yupdates RENAME TO hidden")
        await _written(store, updates[35:])
        with sqlite3.connect(db) as other:
            other.execute("ALTER TABLE hidden RENAME TO yupdates")
        with anyio.move_on_after(10):  # no write comes: the retry writes them
            while len(_rows(db)[0]) < len(updates):
                await anyio.sleep(0.1)
    assert [u for _, u, _ in _rows(db)[0]] == updates
    whole: Doc = Doc()
    for update in updates:
        whole.apply_update(update)
    assert _restored(db) == [str(cell) for cell in whole.get("cells", type=Array)]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_update_that_fails_alone_is_dropped_and_the_rest_kept(
    tmp_path: Path, anyio_backend: str
) -> None:
    """One update's row cannot be written (its metadata cannot be stored): the stock store loses that one
    update, and so does this one; the others of its batch are written."""
    updates, db, calls = _updates()[:20], tmp_path / "one.db", [0]

    def metadata() -> object:
        calls[0] += 1
        return {"not": "bytes"} if calls[0] == 12 else b""

    store = BatchedSQLiteYStore(path="p", db_path=str(db), metadata_callback=metadata)
    async with store:
        await _written(store, updates)
    written = [u for _, u, _ in _rows(db)[0]]
    assert written == updates[:11] + updates[12:]
