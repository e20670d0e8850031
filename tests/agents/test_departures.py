"""When an agent leaves (its MCP session ends), what its visit used goes: the notebook rooms it opened
close as a room does after its last tab closed (collaboration's ``document_cleanup_delay``, not the
idle time kept for agents still connected), and their documents leave memory with them, as do those
of rooms a tab held; what was kept for its session is forgotten; and once no agent is left the
server hands its free heap back to the system."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest
from traitlets.config import Config

from ..documents.test_rooms import notebook_rooms, wait_until
from ..support.mcp_client import connect, ok
from ..support.yclient import YPeer

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


async def test_once_every_agent_and_its_rooms_are_gone_the_server_frees_their_memory_once(
    server_url, jp_auth_header, make_notebook, jp_serverapp, ydoc_extension
):
    departures = runtime_of(jp_serverapp).departures
    first, second = make_notebook("a.ipynb", cells=["x = 1"]), make_notebook("b.ipynb", cells=["y = 1"])
    async with connect(server_url, jp_auth_header) as one, connect(server_url, jp_auth_header) as two:
        await ok(one, "read_cells", path=first)
        doc = await live_doc(ydoc_extension, first)
        await ok(two, "read_cells", path=second)
    await wait_until(lambda: not notebook_rooms(ydoc_extension), "the agents' rooms close")
    await wait_until(lambda: departures.trims == 1, "the server collects garbage and trims its heap")
    assert doc() is None  # collected by the server, not left for a collection that may not come soon
    await asyncio.sleep(6 * CLEANUP)
    assert departures.trims == 1  # once, not for each agent or room


def gone(ref: weakref.ref) -> bool:
    """Whether the object is gone once garbage is collected: twice, as what a finalizer let go is
    freed by the collection after the one that ran it."""
    gc.collect()
    gc.collect()
    return ref() is None


async def live_doc(ydoc_extension, path: str):
    """A weak reference to the pycrdt document of the notebook's open room."""
    notebook = await ydoc_extension.get_document(
        path=path, content_type="notebook", file_format="json", copy=False
    )
    return weakref.ref(notebook.ydoc)


async def test_the_document_of_a_room_an_agent_used_leaves_memory_when_the_room_closes(
    server_url, jp_auth_header, make_notebook, ydoc_extension
):
    path = make_notebook("freed.ipynb", cells=["x = 1", "y = 2"])
    async with connect(server_url, jp_auth_header) as agent:
        (first, _) = (await ok(agent, "read_cells", path=path))["cells"]
        await ok(agent, "update_cell", path=path, cell_id=first["id"], source="x = 3")
        doc = await live_doc(ydoc_extension, path)
    await wait_until(lambda: not notebook_rooms(ydoc_extension), "the agent's room closes")
    await wait_until(lambda: gone(doc), "the closed room's document is collected")  # its task ends after


async def test_the_document_of_a_tabs_room_an_agent_edited_leaves_memory_when_the_tab_has_gone(
    server_url, jp_auth_header, make_notebook, ydoc_extension
):
    path = make_notebook("tab.ipynb", cells=["x = 1"])
    # The agent first: what exists when the extension's runtime is built is frozen (``startup_heap``).
    async with connect(server_url, jp_auth_header) as agent, YPeer(server_url, jp_auth_header, path):
        await ok(agent, "insert_cells", path=path, cells=[{"source": "y = 2"}])
        doc = await live_doc(ydoc_extension, path)
    await wait_until(lambda: not notebook_rooms(ydoc_extension), "collaboration closes the tab's room")
    await wait_until(lambda: gone(doc), "the closed room's document is collected")  # its task ends after


async def test_a_notebook_a_person_had_open_when_the_first_agent_came_leaves_memory_once_closed(
    server_url, jp_auth_header, make_notebook, ydoc_extension, jp_serverapp
):
    path = make_notebook("open-before.ipynb", cells=["x = 1"])
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    async with YPeer(server_url, jp_auth_header, path):  # the tab, open before any agent
        doc = await live_doc(ydoc_extension, path)
        assert app._runtime is None  # nothing built yet: the agent below builds it, the tab open
        async with connect(server_url, jp_auth_header) as agent:
            await ok(agent, "insert_cells", path=path, cells=[{"source": "y = 2"}])
    await wait_until(lambda: not notebook_rooms(ydoc_extension), "collaboration closes the tab's room")
    await wait_until(lambda: app.runtime.departures.trims >= 1, "every agent has left")
    # Not frozen with the runtime, which was built with the tab open: a freeze would keep it for good.
    await wait_until(lambda: gone(doc), "the closed room's document is collected")
