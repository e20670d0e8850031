"""A second Yjs client for tests: joins a notebook's room the way JupyterLab does.

JupyterLab first asks ``PUT api/collaboration/session/<path>`` for the file id and the
server session, then opens ``api/collaboration/room/json:notebook:<fileId>?sessionId=...``
and speaks the y-websocket protocol. ``YPeer`` does the same with pycrdt's ``Provider``
over an httpx-ws connection, so a test sees exactly what a browser tab would.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote

import anyio
import httpx
from anyio.abc import TaskGroup
from httpx_ws import (
    AsyncWebSocketSession,
    WebSocketDisconnect,
    WebSocketInvalidTypeReceived,
    aconnect_ws,
)
from jupyter_ydoc import YNotebook
from pycrdt import (
    Awareness,
    Channel,
    Doc,
    Provider,
    TransactionEvent,
    YMessageType,
    YSyncMessageType,
    create_awareness_message,
    create_sync_message,
    create_update_message,
    read_message,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

#: httpx-ws defaults to 64 KiB per message; a notebook's first sync can be far larger.
MAX_MESSAGE_SIZE = 64 * 1024 * 1024
#: Renew the awareness state well within the server's 30 s outdated timeout.
AWARENESS_RENEW_SECONDS = 10.0
#: Upper bound for leaving a room, so a broken server cannot hang a test's teardown.
CLOSE_TIMEOUT = 5.0


def browser_user(name: str = "Test Peer") -> dict[str, str]:
    """An awareness ``user`` like JupyterLab's; the server needs at least ``name``."""
    initials = "".join(part[0] for part in name.split()[:2]).upper() or "?"
    return {
        "username": f"{name.lower().replace(' ', '-')}-{secrets.token_hex(3)}",
        "name": name,
        "display_name": name,
        "initials": initials,
        "color": "var(--jp-collaborator-color3)",
    }


class PeerDisconnected(ConnectionError):
    """The server closed the room's websocket (e.g. code 4404: file not found)."""


def _unwrap(exc: BaseException) -> BaseException:
    """anyio task groups wrap errors in groups; a test wants the one real error."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


class _RoomChannel(Channel):
    """pycrdt ``Channel`` over httpx-ws that diverts awareness and counts SYNC_STEP2 replies.

    ``Provider`` only understands sync messages, so awareness is applied here, and the
    step-2 counter lets ``YPeer.flush`` see the server's answer to its own step 1.
    """

    def __init__(self, ws: AsyncWebSocketSession, path: str, peer: YPeer) -> None:
        self._ws = ws
        self._path = path
        self._peer = peer
        self._send_lock = anyio.Lock()

    @property
    def path(self) -> str:
        return self._path

    def __aiter__(self) -> _RoomChannel:
        return self

    async def __anext__(self) -> bytes:
        try:
            return await self.recv()
        except PeerDisconnected:
            raise StopAsyncIteration from None

    async def recv(self) -> bytes:
        while True:
            try:
                message = bytes(await self._ws.receive_bytes())
            except WebSocketInvalidTypeReceived:
                continue
            except WebSocketDisconnect as exc:
                self._peer._on_disconnect(exc.code, exc.reason)
                raise PeerDisconnected(f"closed {exc.code}: {exc.reason}") from exc
            except Exception as exc:
                self._peer._on_disconnect(None, repr(exc))
                raise PeerDisconnected(repr(exc)) from exc
            if message and message[0] == YMessageType.AWARENESS:
                self._peer.awareness.apply_awareness_update(read_message(message[1:]), "remote")
            elif message and message[0] == YMessageType.SYNC:
                if len(message) > 1 and message[1] == YSyncMessageType.SYNC_STEP2:
                    self._peer._on_step2()
                return message
            # anything else (RAW save replies, ...) is not for the Provider

    async def send(self, message: bytes) -> None:
        if self._peer.closed:
            return  # edits made after the server hung up go nowhere, as in a browser
        async with self._send_lock:
            try:
                await self._ws.send_bytes(message)
            except Exception as exc:
                log.debug("send failed on %s: %r", self._path, exc)


class YPeer:
    """A Yjs client in a notebook's collaboration room, like a JupyterLab tab.

    ``async with YPeer(server_url, jp_auth_header, "nb.ipynb") as peer:`` joins and waits
    for the initial sync (``sync=False`` skips that wait); leaving removes its awareness
    state, sends queued updates and closes the websocket. The connection lives in a
    background task, so a peer may be opened in a fixture and closed in its teardown.
    """

    file_format = "json"  # what the session request asks for, and the room's name: json:notebook:<id>
    file_type = "notebook"

    def __init__(
        self,
        server_url: str,
        headers: Mapping[str, str],
        path: str,
        *,
        user: Mapping[str, Any] | None = None,
        sync: bool = True,
        timeout: float = 10.0,
    ) -> None:
        self.server_url = server_url if server_url.endswith("/") else server_url + "/"
        self.headers = dict(headers)
        self.path = path
        self.timeout = timeout
        self._sync_on_enter = sync
        self.ydoc = Doc()
        self.notebook = YNotebook(self.ydoc)
        self.awareness = Awareness(self.ydoc)
        self.user: dict[str, Any] = dict(user) if user is not None else browser_user()
        self.file_id: str | None = None
        self.session_id: str | None = None
        self.room_id: str | None = None
        self.close_code: int | None = None
        self.close_reason: str | None = None
        # asyncio (not anyio) events: a YPeer may be built outside a running loop.
        self._changed = asyncio.Event()
        self._disconnected = asyncio.Event()
        self._step2_count = 0
        self._provider: Provider | None = None
        self._channel: _RoomChannel | None = None
        self._task_group: TaskGroup | None = None
        self._runner: asyncio.Task[None] | None = None
        self._leave = asyncio.Event()

    @property
    def closed(self) -> bool:
        """Whether the websocket is gone (closed by the server, or the peer left)."""
        return self._disconnected.is_set()

    # -- lifecycle ---------------------------------------------------------------------

    async def _open_session(self) -> None:
        """Ask for the document's session, as JupyterLab does before it opens the room."""
        async with httpx.AsyncClient(headers=self.headers, timeout=self.timeout) as client:
            resp = await client.put(
                f"{self.server_url}api/collaboration/session/{quote(self.path)}",
                json={"format": self.file_format, "type": self.file_type},
            )
        resp.raise_for_status()
        session = resp.json()
        self.file_id, self.session_id = session["fileId"], session["sessionId"]
        self.room_id = f"{self.file_format}:{self.file_type}:{self.file_id}"

    async def __aenter__(self) -> YPeer:
        await self._open_session()
        ready = asyncio.get_running_loop().create_future()
        self._runner = asyncio.create_task(self._run(ready), name=f"{type(self).__name__} {self.path}")
        try:
            await ready  # raises the connection error, if any
            if self._sync_on_enter:
                await self.synced()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.close()
        except Exception:
            if exc is None:
                raise
            log.exception("closing %s while handling %r", self.path, exc)

    async def close(self) -> None:
        """Leave the room (idempotent); a failure of the connection task is raised here."""
        if self._runner is None:
            return
        runner, self._runner = self._runner, None
        self._leave.set()
        with anyio.CancelScope(shield=True):
            done, _ = await asyncio.wait({runner}, timeout=CLOSE_TIMEOUT)
            if not done:
                runner.cancel()
                await asyncio.wait({runner})
        if not runner.cancelled() and runner.exception() is not None:
            raise _unwrap(runner.exception())  # type: ignore[arg-type]

    async def _run(self, ready: asyncio.Future[None]) -> None:
        """Own every connection resource in one task (anyio scopes are task-bound)."""
        url = (
            f"{self.server_url}api/collaboration/room/{self.room_id}?sessionId={quote(self.session_id or '')}"
        )
        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(
                    httpx.AsyncClient(headers=self.headers, timeout=self.timeout)
                )
                ws = await stack.enter_async_context(
                    aconnect_ws(url, client, max_message_size_bytes=MAX_MESSAGE_SIZE)
                )
                stack.callback(self._on_disconnect, 1000, "left")
                self._channel = _RoomChannel(ws, url, self)
                doc_sub = self.ydoc.observe(self._on_doc_change)
                stack.callback(self.ydoc.unobserve, doc_sub)
                # Left before the websocket closes, so queued updates still get sent.
                self._provider = await stack.enter_async_context(Provider(self.ydoc, self._channel))
                self._task_group = await stack.enter_async_context(anyio.create_task_group())
                awareness_sub = self.awareness.observe(self._on_awareness)
                self.awareness.set_local_state({"user": self.user})
                self._task_group.start_soon(self._renew_awareness)
                if not ready.done():
                    ready.set_result(None)
                await self._leave.wait()
                self.awareness.unobserve(awareness_sub)
                await self._send_awareness_removal()
                self._task_group.cancel_scope.cancel()
        except BaseException as exc:
            self._on_disconnect(None, repr(exc))
            if not ready.done():
                ready.set_exception(_unwrap(exc))
                return
            raise

    async def _send_awareness_removal(self) -> None:
        """A null state, as a closing browser tab sends, so others drop us at once."""
        if self._channel is None or self.closed:
            return
        self.awareness.set_local_state(None)
        update = self.awareness.encode_awareness_update([self.awareness.client_id])
        await self._channel.send(create_awareness_message(update))

    # -- waiting -----------------------------------------------------------------------

    async def synced(self, timeout: float | None = None) -> None:
        """Wait until the server's initial content is in ``self.notebook``."""
        assert self._provider is not None, "use YPeer as an async context manager"
        synced = self._provider.synced
        await self._until(lambda: synced.is_set(), timeout, "initial sync")

    async def wait_for(self, predicate: Callable[[YNotebook], T], timeout: float | None = None) -> T:
        """Return ``predicate(self.notebook)`` once truthy; re-checked on every doc or
        awareness change. Raises ``TimeoutError`` (showing the sources) or ``PeerDisconnected``.
        """
        result: list[T] = []

        def check() -> bool:
            value = predicate(self.notebook)
            if value:
                result.append(value)
            return bool(value)

        await self._until(check, timeout, f"predicate; sources are {self.sources()!r}")
        return result[0]

    async def flush(self, timeout: float | None = None) -> None:
        """Return once the server has applied every local edit made so far.

        Sends the whole local state (idempotent for a CRDT), then a sync step 1: the server
        handles a client's messages in order, so its step-2 reply proves the update landed.
        """
        assert self._channel is not None, "use YPeer as an async context manager"
        seen = self._step2_count
        await self._channel.send(create_update_message(self.ydoc.get_update()))
        await self._channel.send(create_sync_message(self.ydoc))
        await self._until(lambda: self._step2_count > seen, timeout, "reply to flush")

    async def _until(self, condition: Callable[[], bool], timeout: float | None, what: str) -> None:
        """Re-check ``condition`` whenever something changes; fail fast on disconnect."""
        try:
            with anyio.fail_after(self.timeout if timeout is None else timeout):
                while True:
                    changed = self._changed
                    if condition():
                        return
                    if self.closed:
                        raise PeerDisconnected(
                            f"{self.path}: room closed ({self.close_code}: {self.close_reason})"
                        )
                    await changed.wait()
        except TimeoutError:
            raise TimeoutError(f"{self.path}: timed out waiting for {what}") from None

    def _notify(self) -> None:
        """Wake every waiter; they re-check their condition on a fresh event."""
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _on_doc_change(self, _event: TransactionEvent) -> None:
        self._notify()

    def _on_step2(self) -> None:
        self._step2_count += 1
        # The Provider applies this message (and sets `synced`) only after recv returns.
        asyncio.get_running_loop().call_soon(self._notify)

    def _on_disconnect(self, code: int | None, reason: str | None) -> None:
        if self._disconnected.is_set():
            return
        self.close_code, self.close_reason = code, reason
        self._disconnected.set()
        self._notify()

    # -- editing and presence ----------------------------------------------------------

    def sources(self) -> list[str]:
        """Each cell's source, for assertions and error messages."""
        return [str(ycell["source"]) for ycell in self.notebook.ycells]

    def insert_text(self, cell: int, pos: int, text: str) -> None:
        """Type ``text`` at character ``pos`` of a cell's source, like a keystroke.

        pycrdt counts UTF-8 bytes, so ``pos`` (Python characters) is converted here.
        """
        source = self.notebook.ycells[cell]["source"]
        source.insert(len(str(source)[:pos].encode("utf-8")), text)

    def set_awareness(self, **fields: Any) -> None:
        """Update fields of the local awareness state (e.g. ``cursors=[...]``)."""
        state = dict(self.awareness.get_local_state() or {})
        state.update(fields)
        self.awareness.set_local_state(state)

    def remote_states(self) -> dict[int, dict[str, Any]]:
        """Awareness states of the other clients in the room."""
        own = self.awareness.client_id
        return {cid: state for cid, state in self.awareness.states.items() if cid != own}

    def _on_awareness(self, topic: str, changes: tuple[dict[str, Any], Any]) -> None:
        """Send local changes, as y-protocols does in a browser; wake waiters on remote ones."""
        diff, origin = changes
        if origin != "local":
            self._notify()
        elif topic == "update" and self._channel is not None and self._task_group is not None:
            clients = diff["added"] + diff["updated"] + diff["removed"]
            update = self.awareness.encode_awareness_update(clients)
            # Called synchronously from set_local_state: send from a task.
            self._task_group.start_soon(self._channel.send, create_awareness_message(update))

    async def _renew_awareness(self) -> None:
        while True:
            await anyio.sleep(AWARENESS_RENEW_SECONDS)
            state = self.awareness.get_local_state()
            if state is not None:
                self.awareness.set_local_state(state)


class GlobalAwarenessPeer(YPeer):
    """A tab's link to JupyterLab's global awareness room, where the collaborators panel reads who is
    connected (``user``) and where (``current``, ``documents``). It has no document and no session."""

    def __init__(self, server_url: str, headers: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(server_url, headers, "", **kwargs)

    async def _open_session(self) -> None:
        self.room_id, self.session_id = "JupyterLab:globalAwareness", ""
