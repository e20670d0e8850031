"""A fresh server's update store: rooms that start together all become ready.

The collaboration layer's SQLite update store creates its database on a room's first start, each
room's store under a lock of its own. Several rooms starting at once on a server whose database
does not exist yet (a first start, or after the file was deleted) raced: one created the tables
while another saw them without their version, moved the file away as a mismatch, a third failed to
rename it, and a room never became ready, so an agent's call on that notebook hung. Here agents
and tabs open several notebooks at once on such a server; each call must succeed and each edit
reach its room and its file. A room that still cannot become ready (its store cannot open its
database) must give the agent a tool error in bounded time, and a retry must work once fixed.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pycrdt.store import SQLiteYStore

from ..support.mcp_client import connect, fails, ok
from ..support.yclient import YPeer

T = TypeVar("T")

NOTEBOOKS = 8
BOUND = 60.0  # seconds: far above a healthy open of eight small notebooks, even on a loaded machine
STAGGER = 0.01  # seconds between the calls "at once": parallel calls arrive a few ms apart


async def _after(delay: float, call: Awaitable[T]) -> T:
    await asyncio.sleep(delay)
    return await call


def _moved_away(*folders: Path) -> list[str]:
    """The store's "version mismatch" leftovers (``ystore(1).db``), a sign the race happened."""
    return sorted(p.name for folder in folders for p in folder.glob("*(*).db"))


def _made(db: Path) -> bool:
    """The database exists with the store's tables and schema version (what its first start makes)."""
    if not db.exists():
        return False
    with sqlite3.connect(db) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    return {"yupdates", "ycheckpoints"} <= tables and version == SQLiteYStore.version


def _rooms(jp_serverapp: Any, paths: list[str]) -> list[Any]:
    settings = jp_serverapp.web_app.settings
    rooms = settings["jupyter_server_ydoc"].ywebsocket_server.rooms
    ids = settings["file_id_manager"]
    return [rooms.get(f"json:notebook:{ids.get_id(p)}") for p in paths]


async def _on_disk(root: Path, path: str, source: str, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            cells = json.loads((root / path).read_text(encoding="utf-8"))["cells"]
        except ValueError:  # caught mid-save
            cells = []
        if any("".join(c["source"]) == source for c in cells):
            return True
        await asyncio.sleep(0.2)
    return False


async def test_agents_open_several_notebooks_at_once_on_a_fresh_server(
    server_url, jp_auth_header, make_notebook, jp_serverapp, jp_root_dir, tmp_path
):
    assert not (tmp_path / ".jupyter_ystore.db").exists() and not (tmp_path / "state" / "ystore.db").exists()
    paths = [make_notebook(f"nb{i}.ipynb", cells=[f"x = {i}"]) for i in range(NOTEBOOKS)]
    async with connect(server_url, jp_auth_header) as one, connect(server_url, jp_auth_header) as two:
        calls = [
            _after(i * STAGGER, ok(agent, "insert_cells", path=path, cells=[{"source": f"y = {i}"}]))
            for i, path in enumerate(paths)
            for agent in [(one, two)[i % 2]]
        ]
        await asyncio.wait_for(asyncio.gather(*calls), BOUND)
        rooms = _rooms(jp_serverapp, paths)
        assert all(room is not None and room.ready for room in rooms)
        for i, path in enumerate(paths):
            cells = (await ok(one, "read_cells", path=path))["cells"]
            assert [c["source"] for c in cells] == [f"x = {i}", f"y = {i}"]
        for i, path in enumerate(paths):
            assert await _on_disk(jp_root_dir, path, f"y = {i}"), path
    assert _moved_away(tmp_path, tmp_path / "state") == []


async def test_agents_open_several_notebooks_at_once_after_the_store_was_deleted(
    server_url, jp_auth_header, make_notebook, jp_serverapp, jp_root_dir, tmp_path
):
    first = make_notebook("first.ipynb", cells=["x = 0"])
    paths = [make_notebook(f"nb{i}.ipynb", cells=[f"x = {i}"]) for i in range(NOTEBOOKS)]
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "read_cells", path=first)
        (tmp_path / ".jupyter_ystore.db").unlink()  # a person cleaning up while the server runs
        calls = [
            _after(i * STAGGER, ok(agent, "insert_cells", path=p, cells=[{"source": f"y = {i}"}]))
            for i, p in enumerate(paths)
        ]
        await asyncio.wait_for(asyncio.gather(*calls), BOUND)
        assert all(room is not None and room.ready for room in _rooms(jp_serverapp, paths))
        for i, path in enumerate(paths):
            assert await _on_disk(jp_root_dir, path, f"y = {i}"), path
    assert _moved_away(tmp_path, tmp_path / "state") == []


async def test_tabs_open_several_notebooks_at_once_on_a_fresh_server(
    server_url, jp_auth_header, make_notebook, jp_serverapp, tmp_path
):
    # pytest-jupyter never runs extensions' start hooks; a real server runs ours first thing once its
    # loop runs, before it answers a tab.
    mcp = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    for app in mcp:
        await app._start_jupyter_server_extension(jp_serverapp)
    # Made at start, before any room: both the tabs' store (configured) and the agents' (its default).
    assert _made(tmp_path / "state" / "ystore.db") and _made(tmp_path / ".jupyter_ystore.db")
    paths = [make_notebook(f"tab{i}.ipynb", cells=[f"x = {i}"]) for i in range(NOTEBOOKS)]
    peers = [YPeer(server_url, jp_auth_header, path) for path in paths]
    try:
        opening = (_after(i * STAGGER, peer.__aenter__()) for i, peer in enumerate(peers))
        await asyncio.wait_for(asyncio.gather(*opening), BOUND)
        for i, peer in enumerate(peers):
            await peer.wait_for(lambda nb, i=i, peer=peer: peer.sources() == [f"x = {i}"], timeout=BOUND)
        assert all(room is not None and room.ready for room in _rooms(jp_serverapp, paths))
    finally:
        await asyncio.gather(*(peer.close() for peer in peers), return_exceptions=True)
    assert _moved_away(tmp_path, tmp_path / "state") == []


class TestARoomThatNeverBecomesReady:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        jp_server_config.MCPExtensionApp.room_ready_timeout = 3.0
        return jp_server_config

    async def test_is_a_tool_error_in_bounded_time_and_a_retry_works_once_fixed(
        self, server_url, jp_auth_header, make_notebook, tmp_path
    ):
        # The store of rooms opened server-side keeps its database in the cwd: a folder there cannot be
        # opened as one, so the room's store never initializes and the room never becomes ready.
        (tmp_path / ".jupyter_ystore.db").mkdir()
        path = make_notebook("stuck.ipynb", cells=["x = 1"])
        async with connect(server_url, jp_auth_header) as agent:
            started = time.monotonic()
            message = await asyncio.wait_for(fails(agent, "read_cells", path=path), BOUND)
            assert time.monotonic() - started < 20
            assert "stuck.ipynb" in message and "did not become ready" in message, message
            assert ".jupyter_ystore.db" in message, message  # what failed, so the person can fix it
            # Fixed (the folder gone): the next call opens the notebook afresh.
            (tmp_path / ".jupyter_ystore.db").rmdir()
            cells = (await asyncio.wait_for(ok(agent, "read_cells", path=path), BOUND))["cells"]
            assert [c["source"] for c in cells] == ["x = 1"]


class TestARoomStillLoading:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        jp_server_config.MCPExtensionApp.room_ready_timeout = 0.05  # far below a large notebook's load
        return jp_server_config

    async def test_is_a_tool_error_and_its_load_goes_on_for_the_next_call(
        self, server_url, jp_auth_header, make_notebook, jp_serverapp
    ):
        path = make_notebook("large.ipynb", cells=[f"x = {i}  # {'.' * 200}" for i in range(3000)])
        async with connect(server_url, jp_auth_header) as agent:
            message = await asyncio.wait_for(fails(agent, "read_cells", path=path, start=0, end=1), BOUND)
            assert "large.ipynb" in message and "still loading" in message, message
            (room,) = _rooms(jp_serverapp, [path])
            assert room is not None  # left to finish loading, not closed
            await asyncio.wait_for(room.ready_event.wait(), BOUND)
            cells = (await ok(agent, "read_cells", path=path, start=2999))["cells"]
            assert cells[0]["source"].startswith("x = 2999")
            assert _rooms(jp_serverapp, [path]) == [room]  # the same room: one per file
