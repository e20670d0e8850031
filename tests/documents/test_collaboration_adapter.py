"""Every reach of ``jupyter_mcp_ext/documents/collaboration.py`` into jupyter-collaboration's and
pycrdt-websocket's internals, checked on a running server with collaboration on: an upgrade that
renames or reshapes one fails here, naming the attribute and the versions installed, rather than as
a notebook that never closes, saves twice or loses a person's typing."""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import sqlite3
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import nbformat
import pytest
from jupyter_ydoc import YNotebook
from pycrdt import Awareness, Map

from jupyter_mcp_ext.documents import collaboration

from ..support.yclient import GlobalAwarenessPeer, YPeer

VERSIONS = ", ".join(
    f"{name} {version(name)}" for name in ("jupyter-collaboration", "jupyter-server-ydoc", "pycrdt-websocket")
)


def changed(what: str) -> str:
    """The failure message: what moved, under which versions, and where the adapter must follow."""
    return (
        f"{what} is not what jupyter_mcp_ext/documents/collaboration.py relies on with {VERSIONS}: "
        "update the adapter's function that reaches it (and its docstring)."
    )


def check(condition: object, what: str) -> None:
    if not condition:
        pytest.fail(changed(what), pytrace=False)


def attribute(obj: Any, name: str, owner: str) -> Any:
    check(hasattr(obj, name), f"{owner}.{name} (missing)")
    return getattr(obj, name)


async def wait_until(condition: Callable[[], object], what: str, timeout: float = 10.0) -> None:
    try:
        with anyio.fail_after(timeout):
            while not condition():
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"timed out waiting until {what}") from None


@pytest.fixture
def settings(jp_serverapp: Any) -> dict[str, Any]:
    return jp_serverapp.web_app.settings


@pytest.fixture
async def opened(settings: dict[str, Any], make_notebook: Any) -> tuple[str, str, YNotebook]:
    """A notebook's room opened as the extension opens one: path, room id and live document."""
    path = make_notebook("adapter.ipynb", cells=["x = 1"])
    doc = await collaboration.file_document(settings, path, "notebook", "json", create=True)
    assert isinstance(doc, YNotebook)
    file_id = settings["file_id_manager"].get_id(path)
    return path, collaboration.room_id_of("json", "notebook", file_id), doc


def edit(doc: YNotebook, value: int) -> None:
    with doc.ydoc.transaction():
        doc.ydoc.get("meta", type=Map)["adapter"] = value


async def test_the_extension_is_found_under_its_name_with_get_document(settings, ydoc_extension):
    check(collaboration.extension(settings) is ydoc_extension, "the server setting 'jupyter_server_ydoc'")
    signature = inspect.signature(attribute(ydoc_extension, "get_document", "YDocExtension"))
    wanted = {"path", "content_type", "file_format", "room_id", "copy", "create"}
    check(wanted <= set(signature.parameters), f"YDocExtension.get_document{signature}")
    check(collaboration.version() == version("jupyter-server-ydoc"), "jupyter_server_ydoc.__version__")
    check(
        collaboration.cleanup_delay(settings) == ydoc_extension.config.YDocExtension.document_cleanup_delay,
        "YDocExtension.document_cleanup_delay",
    )


async def test_rooms_are_found_by_id_in_the_websocket_servers_table(settings, ydoc_extension, opened):
    _, room_id, doc = opened
    server = attribute(ydoc_extension, "ywebsocket_server", "YDocExtension")
    rooms = attribute(server, "rooms", "YDocExtension.ywebsocket_server")
    check(
        isinstance(rooms, dict), f"YDocExtension.ywebsocket_server.rooms ({type(rooms).__name__}, not a dict)"
    )
    check(room_id in rooms, f"the room id {room_id!r} (json:notebook:<file id>) in ywebsocket_server.rooms")
    room = collaboration.room(settings, room_id)
    check(
        room is not None and room.ydoc is doc.ydoc, "ywebsocket_server.rooms[id].ydoc (not the live document)"
    )
    check(room in collaboration.open_rooms(settings), "ywebsocket_server.rooms.values()")
    check(await collaboration.document(settings, room_id) is doc, "get_document(room_id=..., copy=False)")


async def test_a_rooms_clients_are_the_tabs_connections(
    settings, ydoc_extension, make_notebook, server_url, jp_auth_header
):
    path = make_notebook("tab.ipynb", cells=["x = 1"])
    async with YPeer(server_url, jp_auth_header, path) as tab:
        room = collaboration.room(settings, tab.room_id)
        clients = attribute(room, "clients", "YRoom")
        check(len(clients) == 1, f"YRoom.clients ({clients!r}, not the one tab)")
        [channel] = collaboration.clients(room)
        check(inspect.iscoroutinefunction(channel.send), "YRoom.clients' channels' send(message)")
        check(collaboration.anyone_in(room) and collaboration.anyone_in_a_room(settings), "YRoom.clients")
    await wait_until(lambda: not collaboration.anyone_in(room), "the tab's connection leaves YRoom.clients")


async def test_the_global_awareness_room_is_jupyterlabs(settings, server_url, jp_auth_header):
    async with GlobalAwarenessPeer(server_url, jp_auth_header, sync=False):
        await wait_until(
            lambda: collaboration.anyone_in(
                collaboration.room(settings, collaboration.GLOBAL_AWARENESS_ROOM)
            ),
            changed(f"the room {collaboration.GLOBAL_AWARENESS_ROOM!r} in ywebsocket_server.rooms"),
        )


async def test_a_loaded_room_says_it_is_ready(settings, opened):
    _, room_id, _ = opened
    room = collaboration.room(settings, room_id)
    check(attribute(room, "ready", "YRoom") is True, "YRoom.ready (not True once get_document loaded it)")
    check(collaboration.ready(room), "YRoom.ready")
    event = attribute(room, "ready_event", "YRoom")
    check(inspect.iscoroutinefunction(event.wait), "YRoom.ready_event.wait()")
    with anyio.fail_after(5):
        await collaboration.until_ready(room)


async def test_a_rooms_awareness_holds_the_tabs_states_and_their_autosave_vote(
    settings, make_notebook, server_url, jp_auth_header
):
    path = make_notebook("votes.ipynb", cells=["x = 1"])
    async with YPeer(server_url, jp_auth_header, path) as tab:
        room = collaboration.room(settings, tab.room_id)
        awareness = attribute(room, "awareness", "YRoom")
        check(isinstance(awareness, Awareness), f"YRoom.awareness ({type(awareness).__name__})")
        check(collaboration.autosave_on(room), "the autosave vote (a tab without one counts as yes)")
        tab.set_awareness(autosave=False)
        await wait_until(
            lambda: any(s.get("autosave") is False for s in collaboration.awareness(room).states.values()),
            changed("YRoom.awareness.states (the tab's state never arrived)"),
        )
        check(not collaboration.autosave_on(room), "the autosave vote read from YRoom.awareness")
        check(collaboration.autosave_on(room, skip=lambda s: True), "the autosave vote with states skipped")
    rule = inspect.getsource(attribute(type(room), "_on_document_change", "DocumentRoom"))
    check(
        '"autosave"' in rule and "awareness.states" in rule,
        "DocumentRoom._on_document_change's autosave rule",
    )


async def test_a_rooms_update_store_says_whether_its_database_opened(settings, ydoc_extension, opened):
    _, room_id, _ = opened
    room = collaboration.room(settings, room_id)
    store = attribute(room, "ystore", "YRoom")
    opened_event = attribute(store, "db_initialized", type(store).__name__)
    check(
        opened_event is not None and opened_event.is_set(), "SQLiteYStore.db_initialized (not set once ready)"
    )
    check(isinstance(attribute(store, "db_path", type(store).__name__), str), "SQLiteYStore.db_path")
    check(collaboration.unopened_store(room) is None, "SQLiteYStore.db_initialized")
    cls = collaboration.store_class(settings)
    check(
        cls is not None and isinstance(store, cls), "YDocExtension.ystore_class (not the rooms' store class)"
    )


async def test_the_batched_store_finds_the_sqlite_stores_members(settings, opened):
    """``documents/ystore.py`` extends pycrdt-store's ``SQLiteYStore`` with the members checked here."""
    _, room_id, doc = opened
    store = collaboration.room(settings, room_id).ystore
    edit(doc, 1)  # a write, so the store's connection is open
    owner = f"{type(store).__name__} (pycrdt-store {version('pycrdt-store')})"
    for name in ("_compress", "_decompress", "_update_counter", "lock", "checkpoint_interval"):
        attribute(store, name, owner)
    check(attribute(store, "_task_group", owner) is not None, f"{owner}._task_group (None while running)")
    db = attribute(store, "_db", owner)
    check(isinstance(attribute(db, "_real_connection", f"{owner}._db"), sqlite3.Connection), f"{owner}._db")
    attribute(db, "_limiter", f"{owner}._db")


async def test_closing_a_room_drops_it_and_its_files_loader(settings, ydoc_extension, opened):
    _, room_id, _ = opened
    server = ydoc_extension.ywebsocket_server
    signature = inspect.signature(attribute(server, "delete_room", "YDocExtension.ywebsocket_server"))
    check("name" in signature.parameters, f"ywebsocket_server.delete_room{signature}")
    loaders = attribute(ydoc_extension, "file_loaders", "YDocExtension")
    file_id = collaboration.file_id_of(room_id)
    check(file_id in loaders, "YDocExtension.file_loaders (no loader for an open room's file)")
    attribute(loaders[file_id], "number_of_subscriptions", "FileLoader")
    await collaboration.close_room(settings, room_id)
    check(collaboration.room(settings, room_id) is None, "ywebsocket_server.delete_room(name=...)")
    check(file_id not in loaders, "YDocExtension.file_loaders.remove (the loader outlived its room)")
    check(await collaboration.document(settings, room_id) is None, "get_document after delete_room")


async def test_a_rooms_file_loader_and_kind_write_its_document(settings, opened, jp_root_dir):
    path, room_id, doc = opened
    room = collaboration.room(settings, room_id)
    check(collaboration.file_kind(room) == ("json", "notebook"), "DocumentRoom.file_format / file_type")
    loader = collaboration.file_loader(settings, room_id)
    check(loader is not None and loader.path == path, "YDocExtension.file_loaders[file_id].path")
    check(
        collaboration.file_loader(settings, "json:notebook:no-such-id") is None, "file_loaders.__contains__"
    )
    doc.ycells[0]["source"].insert(0, "# ")
    model = {"format": "json", "type": "notebook", "content": doc.get()}
    saved = await collaboration.save_content(loader, model)
    check(isinstance(saved, dict) and "hash" in saved, "FileLoader.maybe_save_content (no saved model)")
    check(nbformat.read(jp_root_dir / path, as_version=4).cells[0].source == "# x = 1", "maybe_save_content")


@pytest.mark.parametrize("ydoc_poll_interval", [0])  # no watcher: only the save finds the change on disk
async def test_a_save_over_a_change_on_disk_writes_nothing_and_reloads_the_room(
    settings, opened, jp_root_dir
):
    path, room_id, doc = opened
    file = jp_root_dir / path
    on_disk = nbformat.read(file, as_version=4)
    on_disk.cells[0].source = "changed on disk"
    nbformat.write(on_disk, file)
    later = os.stat(file).st_mtime + 10
    os.utime(file, (later, later))
    loader = collaboration.file_loader(settings, room_id)
    for name in ("last_modified", "maybe_notify"):
        attribute(loader, name, "FileLoader")
    model = {"format": "json", "type": "notebook", "content": doc.get()}
    check(await collaboration.save_content(loader, model) is None, "OutOfBandChanges from maybe_save_content")
    check(
        nbformat.read(file, as_version=4).cells[0].source == "changed on disk", "maybe_save_content's check"
    )
    await wait_until(
        lambda: doc.ycells[0]["source"].to_py() == "changed on disk",
        changed("FileLoader.last_modified / maybe_notify (the room did not reload the file)"),
    )


async def test_the_rooms_own_save_is_a_task_and_its_lock_holds_it_back(settings, opened):
    _, room_id, doc = opened
    room = collaboration.room(settings, room_id)
    attribute(room, "_saving_document", "DocumentRoom")
    lock = attribute(room, "_update_lock", "DocumentRoom")
    check(
        isinstance(lock, asyncio.Lock) and collaboration.update_lock(room) is lock,
        "DocumentRoom._update_lock",
    )
    if (settling := collaboration.pending_save(room)) is not None:
        await asyncio.wait({settling})
    async with lock:
        edit(doc, 1)
        check(collaboration.pending_save(room) is None, "DocumentRoom._update_lock (a change under it saved)")
    edit(doc, 2)
    pending = collaboration.pending_save(room)
    check(isinstance(pending, asyncio.Task), "DocumentRoom._saving_document (no task after a change)")
    await asyncio.wait({pending})
    check(collaboration.pending_save(room) is None, "DocumentRoom._saving_document (not done once saved)")
    check(doc.dirty is False, "DocumentRoom's save (the document still dirty)")


async def test_the_session_events_are_registered(jp_serverapp):
    schemas = jp_serverapp.event_logger.schemas
    check(
        collaboration.SESSION_EVENTS in schemas.schema_ids, f"the event schema {collaboration.SESSION_EVENTS}"
    )


def test_no_other_module_reaches_into_collaboration():
    """The adapter stays the one door: a new reach elsewhere would escape the checks above."""
    reaches = re.compile(
        r"ywebsocket_server|file_loaders|delete_room|_saving_document|_update_lock|ready_event"
        r"|(get\(|\[)[\"']jupyter_server_ydoc[\"']|(from|import) jupyter_server_ydoc|pycrdt\.websocket"
    )
    adapter = Path(collaboration.__file__)
    found = [
        f"{file.relative_to(adapter.parents[2])}:{n}: {line.strip()}"
        for file in sorted(adapter.parents[1].rglob("*.py"))
        if file != adapter
        for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1)
        if reaches.search(line)
    ]
    assert not found, "collaboration's internals reached outside documents/collaboration.py:\n" + "\n".join(
        found
    )
