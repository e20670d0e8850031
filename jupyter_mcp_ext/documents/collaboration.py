"""The one door to jupyter-collaboration (``jupyter_server_ydoc``) and the pycrdt-websocket rooms it runs.

Collaboration's public API is its extension app, found in the server's settings under its name, with
``get_document``; its configuration; its events; and the room ids JupyterLab connects to. That opens a
room and hands out its live document, but this extension needs more: whether a room is open without
opening it, who is connected, whether a room has loaded, closing a room no tab uses, saving a room's
document through its own file loader. Each of those reaches into attributes collaboration does not
promise to keep, and each is one function here, saying what it reaches and why. Nothing else in the
package touches them; ``tests/documents/test_collaboration_adapter.py`` checks every one against the installed
collaboration on a running server, so an upgrade that moves one fails there, by name.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

# The stock update store, which ``ystore.py`` extends: that subclass uses pycrdt-store's private
# members (``_db``, ``_compress``, ``_update_counter``, ``_task_group``), checked by the adapter's tests.
from jupyter_server_ydoc.rooms import DocumentRoom
from jupyter_server_ydoc.stores import SQLiteYStore as SQLiteYStore
from jupyter_server_ydoc.utils import OutOfBandChanges

if TYPE_CHECKING:
    from collections.abc import Callable

    from jupyter_server_ydoc.app import YDocExtension
    from jupyter_server_ydoc.loaders import FileLoader
    from jupyter_ydoc.ybasedoc import YBaseDoc
    from pycrdt import Awareness
    from pycrdt.websocket import YRoom

EXTENSION = "jupyter_server_ydoc"  # the extension's name: its key in the server's settings
SESSION_EVENTS = "https://schema.jupyter.org/jupyter_collaboration/session/v1"  # its room events
GLOBAL_AWARENESS_ROOM = "JupyterLab:globalAwareness"  # JupyterLab's room for the collaborators panel


# -- public API ------------------------------------------------------------------------------------


def extension(settings: dict[str, Any]) -> YDocExtension | None:
    """Collaboration's extension app, or None where it is off. Looked up on every use: extensions load
    in name order, so it is not there yet when this extension builds its services."""
    return settings.get(EXTENSION)


def enabled(settings: dict[str, Any]) -> bool:
    return extension(settings) is not None


def version() -> str | None:
    """``jupyter_server_ydoc.__version__``: the server half's version, as capabilities report it."""
    try:
        import jupyter_server_ydoc

        return str(jupyter_server_ydoc.__version__)
    except (ImportError, AttributeError):
        return None


def room_id_of(file_format: str, content_type: str, file_id: str) -> str:
    """A file's room id, as JupyterLab names it in the room URL (``json:notebook:<file id>``)."""
    return f"{file_format}:{content_type}:{file_id}"


def file_id_of(room_id: str) -> str:
    """The file id in a room id (the file-id store's key of the file the room holds)."""
    return room_id.split(":", 2)[-1]


async def document(settings: dict[str, Any], room_id: str) -> YBaseDoc | None:
    """The live (not copied) document of an open room, or None: ``get_document(room_id=...)``."""
    ext = extension(settings)
    return None if ext is None else await ext.get_document(room_id=room_id, copy=False)


async def file_document(
    settings: dict[str, Any], path: str, content_type: str, file_format: str, *, create: bool
) -> YBaseDoc | None:
    """The live document of a file's room, opened (loaded from disk) when ``create``: ``get_document``."""
    ext = extension(settings)
    if ext is None:
        return None
    return await ext.get_document(
        path=path,
        content_type=content_type,
        file_format=file_format,
        copy=False,
        create=create,
    )


def save_delay(settings: dict[str, Any]) -> float | None:
    """``YDocExtension.document_save_delay`` (a setting): None when rooms never save on their own."""
    ext = extension(settings)
    return None if ext is None else ext.document_save_delay


def cleanup_delay(settings: dict[str, Any]) -> float | None:
    """``YDocExtension.document_cleanup_delay`` (a setting): how long a room stays after its last tab
    closed; None when rooms are never cleaned up."""
    ext = extension(settings)
    return None if ext is None else ext.document_cleanup_delay


# -- rooms: the websocket server's table -----------------------------------------------------------


def room(settings: dict[str, Any], room_id: str) -> YRoom | None:
    """An open room, or None, without opening it.

    Reaches ``YDocExtension.ywebsocket_server.rooms`` (pycrdt-websocket's ``WebsocketServer.rooms``, a
    dict by room id). ``get_document`` answers only with the document, and opens the room to do so.
    """
    server = getattr(extension(settings), "ywebsocket_server", None)
    return None if server is None else server.rooms.get(room_id)


def open_rooms(settings: dict[str, Any]) -> list[YRoom]:
    """Every open room (documents' and the global awareness room): the same table as ``room``."""
    server = getattr(extension(settings), "ywebsocket_server", None)
    return [] if server is None else list(server.rooms.values())


def open_documents(settings: dict[str, Any]) -> list[YRoom]:
    """The open rooms that hold a document (``DocumentRoom``), the global awareness room left out."""
    return [room for room in open_rooms(settings) if isinstance(room, DocumentRoom)]


def clients(room: YRoom | None) -> list[Any]:
    """The connections (pycrdt ``Channel``) of the tabs in a room: ``YRoom.clients``. Collaboration
    keeps no public count of who is connected; agents' awareness states are sent on these."""
    return [] if room is None else list(room.clients)


def anyone_in(room: YRoom | None) -> bool:
    return room is not None and bool(room.clients)  # as ``clients``, without a copy


def anyone_in_a_room(settings: dict[str, Any]) -> bool:
    """Whether any room of the server has a client: someone has a notebook, file or JupyterLab open."""
    return any(anyone_in(r) for r in open_rooms(settings))


def ready(room: YRoom) -> bool:
    """Whether a room has loaded its document: ``YRoom.ready``. ``get_document`` returns a room's
    document before it is loaded, and an edit then would be merged into what loads after it."""
    return bool(room.ready)


async def until_ready(room: YRoom) -> None:
    """Wait until a room has loaded its document: ``YRoom.ready_event`` (no public signal either)."""
    await room.ready_event.wait()


def awareness(room: YRoom) -> Awareness:
    """A room's awareness (the tabs' users, carets, autosave votes): ``YRoom.awareness``. The public
    document has it too, but only once opened; presence reads it for rooms it does not open."""
    return room.awareness


def autosave_on(room: YRoom | None, *, skip: Callable[[dict[str, Any]], bool] | None = None) -> bool:
    """Whether a room saves on its own, as ``DocumentRoom._on_document_change`` decides it: anyone
    voting for autosave in the awareness (a missing vote counts as yes; no votes at all, yes).
    ``skip``: states left out of the vote (agents')."""
    if room is None:
        return True
    votes = [s.get("autosave", True) for s in room.awareness.states.values() if s and not (skip and skip(s))]
    return not votes or any(votes)


def unopened_store(room: YRoom) -> str | None:
    """The database file of a room's SQLite update store that has not opened it (yet), else None.

    Reaches ``YRoom.ystore`` and pycrdt-store's ``SQLiteYStore.db_initialized`` / ``db_path``: a room
    whose store cannot open its database never becomes ready, and nothing public says why.
    """
    store = getattr(room, "ystore", None)
    opened = getattr(store, "db_initialized", None)  # SQLite stores only
    if store is None or opened is None or opened.is_set():
        return None
    return str(store.db_path)


def store_class(settings: dict[str, Any]) -> type | None:
    """``YDocExtension.ystore_class`` (a setting), as the extension resolved it: the rooms' stores."""
    cls = getattr(extension(settings), "ystore_class", None)
    return cls if isinstance(cls, type) else None


async def close_room(settings: dict[str, Any], room_id: str) -> None:
    """Stop a room and drop it, and its file's loader when no other room watches that file.

    Reaches ``ywebsocket_server.delete_room`` and ``YDocExtension.file_loaders`` (its
    ``FileLoaderMapping``; ``FileLoader.number_of_subscriptions``). Collaboration closes a room only
    when its last tab leaves; rooms ``get_document`` opened have no tab, so they would stay open (and
    their file watched) until the server stops.
    """
    ext = extension(settings)
    if ext is None:
        return
    await ext.ywebsocket_server.delete_room(name=room_id)
    file_id = file_id_of(room_id)
    loaders = ext.file_loaders
    if file_id in loaders and loaders[file_id].number_of_subscriptions == 0:
        await loaders.remove(file_id)


# -- saving a room's document through its own file loader ------------------------------------------


def file_loader(settings: dict[str, Any], room_id: str) -> FileLoader | None:
    """The ``FileLoader`` of an open room's file, never a new one: ``YDocExtension.file_loaders``.
    Saving through it keeps the room's check for changes made on disk meanwhile; collaboration has
    no public save."""
    ext = extension(settings)
    file_id = file_id_of(room_id)
    if ext is None or file_id not in ext.file_loaders:
        return None
    return ext.file_loaders[file_id]


def file_kind(room: YRoom) -> tuple[str, str]:
    """A document room's ``file_format`` and ``file_type`` (``DocumentRoom`` properties), the model a
    save writes."""
    return room.file_format, room.file_type  # type: ignore[attr-defined]  # DocumentRoom's


async def save_content(loader: FileLoader, model: dict[str, Any]) -> dict[str, Any] | None:
    """Write ``model`` through the room's loader, as the room's own save does; the saved model, or None.

    ``FileLoader.maybe_save_content`` under its lock, and its check: if the file changed on disk since
    the room read it, it raises ``OutOfBandChanges`` having taken the new modification time as seen.
    Then nothing is written, ``last_modified`` is put back and ``maybe_notify`` tells the room to
    reload the file, as collaboration's file watcher would.
    """
    seen = loader.last_modified
    try:
        return await loader.maybe_save_content(model)
    except OutOfBandChanges:
        loader.last_modified = seen
        await loader.maybe_notify()
        return None


def pending_save(room: YRoom) -> asyncio.Future[Any] | None:
    """The room's own save, pending (its debounce) or running, if any.

    ``DocumentRoom._saving_document`` (private, no public signal): without it, or if it changes shape,
    None, and callers save at once as if none were pending. A change cancels it (it then ends quietly).
    """
    task = getattr(room, "_saving_document", None)
    return task if isinstance(task, asyncio.Future) and not task.done() else None


def update_lock(room: YRoom | None) -> asyncio.Lock | None:
    """``DocumentRoom._update_lock`` (private): held around the room's own flag writes after a save, so
    that writing ``dirty`` does not start another save. None where it is missing: not used."""
    lock = getattr(room, "_update_lock", None)
    return lock if isinstance(lock, asyncio.Lock) else None
