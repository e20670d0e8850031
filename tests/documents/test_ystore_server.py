"""The batching update store in a real server (issue 21): configured as collaboration's store, agents'
edits reach the person's tab, are saved, and the store holds every update: the document it restores
is the live one.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from jupyter_ydoc import YNotebook
from pycrdt import Doc

from jupyter_mcp_ext.documents.ystore import BatchedSQLiteYStore

from ..support.mcp_client import connect, ok
from ..support.yclient import YPeer


@pytest.fixture
def jp_server_config(jp_server_config):
    jp_server_config.YDocExtension.ystore_class = BatchedSQLiteYStore
    return jp_server_config


def _restored(db: Path, file_id: str) -> list[str]:
    """The notebook's cell sources as the store's rows give it back (every update, in order)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT yupdate FROM yupdates WHERE path = ? ORDER BY rowid", (f".notebook:{file_id}.y",)
        ).fetchall()
    doc: Doc = Doc()
    for (update,) in rows:
        doc.apply_update(update)
    return [cell["source"] for cell in YNotebook(doc).get()["cells"]]


async def test_agents_edits_reach_the_person_and_the_store(
    server_url, jp_auth_header, make_notebook, jp_serverapp, jp_root_dir, tmp_path
):
    path = make_notebook("batched.ipynb", cells=["x = 0"])
    async with YPeer(server_url, jp_auth_header, path) as tab, connect(server_url, jp_auth_header) as agent:
        # Two agents' worth of inserts at once: their updates queue behind each other's commits.
        await asyncio.gather(
            *(ok(agent, "insert_cells", path=path, cells=[{"source": f"y = {i}"}]) for i in range(12))
        )
        await tab.wait_for(lambda nb: len(tab.sources()) == 13, timeout=30)
        live = tab.sources()
        rooms = jp_serverapp.web_app.settings["jupyter_server_ydoc"].ywebsocket_server.rooms.values()
        assert any(isinstance(room.ystore, BatchedSQLiteYStore) for room in rooms)
        await asyncio.sleep(1.0)  # the last writes commit
    file_id = jp_serverapp.web_app.settings["file_id_manager"].get_id(path)
    stores = [p for p in (tmp_path / ".jupyter_ystore.db", tmp_path / "state" / "ystore.db") if p.exists()]
    assert stores, "no update store written"
    assert any(_restored(db, file_id) == live for db in stores), [_restored(db, file_id) for db in stores]
    assert sorted(live) == sorted(["x = 0", *(f"y = {i}" for i in range(12))])
