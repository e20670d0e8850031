"""The batching update store is collaboration's store by default, and a failed commit loses no update
(issue 21): with the database locked by another connection past SQLite's busy timeout, the person's
keystrokes of that moment are in the store once the lock is gone, restored by a fresh stock store as
a server's restart would load the room.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from typing import Any

import pytest
from jupyter_server_ydoc.stores import SQLiteYStore
from jupyter_ydoc import YNotebook
from pycrdt import Doc

from jupyter_mcp_ext.documents.ystore import BatchedSQLiteYStore

from ..support.yclient import YPeer

LOCKED = 6.5  # seconds: past sqlite3's default busy timeout (5 s), so the commit under way fails


@pytest.fixture
def chosen_store() -> type | None:
    """``YDocExtension.ystore_class`` as the user sets it; None: not set."""
    return None


@pytest.fixture
def jp_server_config(jp_server_config: Any, chosen_store: type | None) -> Any:
    if chosen_store is not None:
        jp_server_config.YDocExtension.ystore_class = chosen_store
    return jp_server_config


def _room(jp_serverapp: Any, room_id: str) -> Any:
    return jp_serverapp.web_app.settings["jupyter_server_ydoc"].ywebsocket_server.rooms[room_id]


async def _restored(db_path: str, path: str) -> list[str]:
    """The cell sources a fresh stock store gives back (checkpoint and updates since), as on a restart."""
    doc: Doc = Doc()
    async with SQLiteYStore(path=path, db_path=db_path) as store:
        await store.apply_updates(doc)
    return [cell["source"] for cell in YNotebook(doc).get()["cells"]]


async def test_a_failed_commit_loses_no_keystroke(server_url, jp_auth_header, make_notebook, jp_serverapp):
    path = make_notebook("locked.ipynb", cells=["x = 0"])
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        YPeer(server_url, jp_auth_header, path) as tab,
    ):
        store = _room(jp_serverapp, person.room_id).ystore
        assert type(store) is BatchedSQLiteYStore  # the default, nobody having set one
        person.insert_text(0, 0, "a")
        await tab.wait_for(lambda nb: tab.sources()[0].startswith("a"), timeout=10)
        await asyncio.sleep(0.5)  # that one is committed
        lock = sqlite3.connect(store.db_path, isolation_level=None)
        try:
            lock.execute("BEGIN EXCLUSIVE")
            end = time.monotonic() + LOCKED
            while time.monotonic() < end:  # keystrokes all along: the first commit fails, more queue
                person.insert_text(0, 0, "k")
                await asyncio.sleep(0.3)
        finally:
            lock.rollback()
            lock.close()
        person.insert_text(0, 0, "z")
        await tab.wait_for(lambda nb: tab.sources()[0].startswith("z"), timeout=10)
        live = tab.sources()
        deadline = time.monotonic() + 15
        while await _restored(store.db_path, store.path) != live and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        assert await _restored(store.db_path, store.path) == live
    assert live[0].count("k") >= 15


@pytest.mark.parametrize("chosen_store", [SQLiteYStore])
async def test_a_store_the_user_chose_is_kept(server_url, jp_auth_header, make_notebook, jp_serverapp):
    path = make_notebook("chosen.ipynb", cells=["x = 0"])
    async with YPeer(server_url, jp_auth_header, path) as tab:
        assert type(_room(jp_serverapp, tab.room_id).ystore) is SQLiteYStore
