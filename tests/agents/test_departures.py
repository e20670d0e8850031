"""When an agent leaves (its MCP session ends), what its visit used goes: the notebook rooms it opened
close as a room does after its last tab closed (collaboration's ``document_cleanup_delay``, not the
idle time kept for agents still connected), what was kept for its session is forgotten, and once no
agent is left the server hands its free heap back to the system."""

from __future__ import annotations

import asyncio

import pytest
from traitlets.config import Config

from ..documents.test_rooms import notebook_rooms, wait_until
from ..support.mcp_client import connect, ok

CLEANUP = 0.3  # YDocExtension.document_cleanup_delay in this module


@pytest.fixture
def ydoc_cleanup_delay() -> float:
    return CLEANUP


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    jp_server_config.MCPExtensionApp.room_idle_timeout = 300.0  # agents still here keep their rooms
    return jp_server_config


def runtime_of(jp_serverapp):
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    return app.runtime


async def test_a_room_an_agent_opened_closes_as_a_tabs_room_once_the_agent_has_left(
    server_url, jp_auth_header, make_notebook, ydoc_extension
):
    path = make_notebook("left.ipynb", cells=["x = 1"])
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "insert_cells", path=path, cells=[{"source": "y = 2"}])
        await asyncio.sleep(6 * CLEANUP)
        assert len(notebook_rooms(ydoc_extension)) == 1  # the agent is still here: its room stays
    await wait_until(lambda: not notebook_rooms(ydoc_extension), "the room closes after the agent left")


async def test_a_room_stays_while_another_agent_that_used_it_is_still_here(
    server_url, jp_auth_header, make_notebook, ydoc_extension
):
    path = make_notebook("shared.ipynb", cells=["x = 1"])
    async with connect(server_url, jp_auth_header) as staying:
        await ok(staying, "read_cells", path=path)
        async with connect(server_url, jp_auth_header) as leaving:
            await ok(leaving, "insert_cells", path=path, cells=[{"source": "y = 2"}])
        await asyncio.sleep(6 * CLEANUP)
        assert len(notebook_rooms(ydoc_extension)) == 1
    await wait_until(lambda: not notebook_rooms(ydoc_extension), "the room closes after the last agent left")


async def test_what_was_kept_for_an_agents_session_goes_when_the_session_ends(
    server_url, jp_auth_header, make_notebook, jp_serverapp
):
    revisions = runtime_of(jp_serverapp).services.revisions
    path = make_notebook("reads.ipynb", cells=["x = 1"])
    async with connect(server_url, jp_auth_header) as agent:
        (cell,) = (await ok(agent, "read_cells", path=path))["cells"]
        assert len(revisions.sessions) == 1  # its reads, to merge its next whole-text write
    await wait_until(lambda: not revisions.sessions, "the session's reads are forgotten")
    # Its user's last reads stay: a client that reconnects writes from what it read, without reading again.
    async with connect(server_url, jp_auth_header) as back:
        written = await ok(back, "update_cell", path=path, cell_id=cell["id"], source="x = 2")
        assert written["merged"] == []  # applied as is, from the read before it reconnected


async def test_the_free_heap_is_returned_once_when_every_agent_and_its_rooms_are_gone(
    server_url, jp_auth_header, make_notebook, jp_serverapp, ydoc_extension
):
    departures = runtime_of(jp_serverapp).departures
    first, second = make_notebook("a.ipynb", cells=["x = 1"]), make_notebook("b.ipynb", cells=["y = 1"])
    async with connect(server_url, jp_auth_header) as one, connect(server_url, jp_auth_header) as two:
        await ok(one, "read_cells", path=first)
        await ok(two, "read_cells", path=second)
    await wait_until(lambda: not notebook_rooms(ydoc_extension), "the agents' rooms close")
    await wait_until(lambda: departures.trims == 1, "the heap is trimmed")
    await asyncio.sleep(6 * CLEANUP)
    assert departures.trims == 1  # once, not for each agent or room
