"""Transport: serves the SDK's Streamable HTTP session manager (an ASGI app) from a Tornado handler.

Jupyter Server is Tornado, the SDK's transport is ASGI. This module and ``exchange.py`` (one
request and its answer) are the whole bridge: they turn one Tornado request into one ASGI call,
stream the answer back as it is produced (SSE), and tell the SDK when the client went away, which
is how the SDK sees a dropped stream or a cancelled call.
Around each call it keeps the session ledger (``sessions.py``: who holds which session, and room
made for new ones) and sets the event store's session scope (``events.py``: resumable streams).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from tornado.web import RequestHandler

from ..agents.directory import AgentDirectory
from .events import MemoryEventStore, session_scope
from .exchange import Exchange, Message
from .responses import answer_as, wants_stream
from .sessionless import SessionlessClients
from .sessions import Session, SessionLedger, SessionRefused

log = logging.getLogger(__name__)


class MCPTransport:
    """Owns the SDK's session manager and its lifetime inside the server's event loop."""

    def __init__(
        self,
        server: Server[Any],
        *,
        session_idle_timeout: float | None,
        retry_interval_ms: int,
        max_body_bytes: int = 4 * 1024 * 1024,
        max_sessions_per_principal: int | None = None,
        max_sessions: int | None = None,
        max_events: int = 2000,
        streaming_tools: frozenset[str] = frozenset(),
        agents: AgentDirectory | None = None,
    ):
        self._server = server
        self.streaming_tools = streaming_tools
        self.events = MemoryEventStore(max_events)
        self._settings: dict[str, Any] = {
            "session_idle_timeout": session_idle_timeout,
            "retry_interval": retry_interval_ms,
            "max_request_body_size": max_body_bytes,
            "event_store": self.events,
            "max_sessions": None,  # the ledger caps sessions, per principal and in all
        }
        self.sessions = SessionLedger(
            per_principal=max_sessions_per_principal,
            total=max_sessions,
            idle_timeout=session_idle_timeout,
            on_gone=self._gone,
        )
        # Sessionless (2026) clients enter the same ledger, one session per agent.
        self.sessionless = SessionlessClients(self.sessions, self._close, agents)
        server.middleware.append(self.sessionless)
        self.manager = self._new_manager()
        self._task: asyncio.Task[None] | None = None
        self._started = asyncio.Event()
        self._stopping = asyncio.Event()

    def _new_manager(self) -> StreamableHTTPSessionManager:
        # Host and Origin are checked by Jupyter (allow_remote_access, allow_origin) before a
        # request gets here; the SDK's own check would refuse proxied hosts (JupyterHub).
        return StreamableHTTPSessionManager(
            app=self._server,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            **self._settings,
        )

    async def _run(self) -> None:
        async with self.manager.run():
            self._started.set()
            await self._stopping.wait()

    async def start(self) -> None:
        """Start the manager on first use: the loop that serves requests is the one it must live on."""
        if self._task is not None and self._task.done() and not self._stopping.is_set():
            # The manager died (it runs once): start a new one rather than answer 500 forever.
            log.error("MCP session manager stopped unexpectedly; starting a new one")
            self.manager, self._task = self._new_manager(), None
            self._started.clear()
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="jupyter-mcp-ext transport")
        if not self._started.is_set():
            waiter = asyncio.ensure_future(self._started.wait())
            await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
            if not self._started.is_set():
                waiter.cancel()
                self._task.result()  # raises what stopped the manager from starting

    async def stop(self) -> None:
        if self._task is None:
            return
        self._stopping.set()
        try:
            await asyncio.wait_for(self._task, timeout=5)
        except (TimeoutError, asyncio.CancelledError):
            self._task.cancel()
        except Exception:
            log.exception("MCP transport stopped with an error")

    async def end_sessions(self) -> int:
        """End every MCP session (a person's stop); returns how many there were.

        The SDK ends all its sessions when its manager stops, which is its public way to close them;
        a fresh manager then serves whoever connects next, and old session ids answer 404.
        Sessionless clients are counted too, and refused until they connect again (``sessionless.py``).
        """
        sessionless = [sid for sid, s in self.sessions.sessions.items() if s.sessionless]
        self.sessionless.stop(sessionless)
        for sid in sessionless:
            self._gone(self.sessions.sessions.pop(sid))
        if self._task is None or self._task.done():
            return len(sessionless)
        count = len(self.sessions.sessions) + len(sessionless)  # the ledger knows every session the SDK holds
        self.sessions.sessions.clear()
        self.events.clear()
        await self.stop()
        self.manager, self._task = self._new_manager(), None
        self._started.clear()
        self._stopping.clear()
        return count

    async def end_sessions_of(self, principal: str) -> int:
        """End the sessions ``principal`` holds (a revoked agent's), as their client's DELETE would."""
        mine = [(sid, s) for sid, s in self.sessions.sessions.items() if s.principal == principal]
        for session_id, session in mine:
            self.sessions.sessions.pop(session_id, None)
            await self._close(session_id, session)
        return len(mine)

    async def serve(
        self, handler: RequestHandler, body: bytes, principal: str, extra_scope: dict[str, Any]
    ) -> None:
        """Answer the handler's request (its body already read) through the session manager."""
        await self.start()
        exchange = Exchange(handler, body)
        # Tornado calls the on_connection_close it bound when the handler was made, so the
        # handler forwards to ``on_close``; a client already gone (while it waited) is gone here too.
        handler.on_close = exchange.client_gone  # type: ignore[attr-defined]  # MCPHandler's hook, typed as Tornado's handler
        if getattr(handler, "_client_gone", False):
            exchange.client_gone()
        scope = exchange.scope(extra_scope)
        session_id = handler.request.headers.get(MCP_SESSION_ID_HEADER)
        if session_id is not None:
            session = self.sessions.begin(session_id)
            if session is not None and session.version:
                _speak(scope, session.version)
            token = session_scope.set(session.scope if session else None)
            try:
                self._answer(handler, body, session_id)
                await self.manager.handle_request(scope, exchange.receive, exchange.send)
            finally:
                session_scope.reset(token)
                if session is not None:
                    gone = exchange.status == 404 or (
                        handler.request.method == "DELETE" and exchange.status < 400
                    )
                    self.sessions.end(session_id, session, gone=gone)
        elif _opens_session(handler, body):
            await self._open(exchange, scope, principal, extra_scope.get("user"))
        else:
            self._answer(handler, body, None)
            await self.manager.handle_request(scope, exchange.receive, exchange.send)
        exchange.finish()

    def _answer(self, handler: RequestHandler, body: bytes, session_id: str | None) -> None:
        """A POST is answered with a JSON body unless it streams (``responses``); the SDK is told now."""
        if handler.request.method == "POST":
            answer_as(self.manager, session_id, stream=wants_stream(body, self.streaming_tools))

    async def _open(self, exchange: Exchange, scope: dict[str, Any], principal: str, owner: Any) -> None:
        """A request that would open a session: make room first (or refuse), then note what opened."""
        try:
            victims = self.sessions.reserve(principal)
        except SessionRefused as refused:
            await exchange.refuse(503, str(refused))
            return
        for session_id, session in victims:
            await self._close(session_id, session)
        new_scope = object()
        settled = False

        def started(status: int, session_id: str | None) -> Session | None:
            # Noted when the answer starts, not when the SDK returns: the client may send its next
            # request as soon as it has read the answer.
            nonlocal settled
            settled = True
            opened = session_id if status < 400 else None
            return self.sessions.settle(principal, opened, owner, new_scope)

        exchange.on_start = started
        token = session_scope.set(new_scope)
        try:
            self._answer(exchange.handler, exchange.body, None)
            await self.manager.handle_request(scope, exchange.receive, exchange.send)
        finally:
            session_scope.reset(token)
            if not settled:
                self.sessions.settle(principal, None, owner, new_scope)

    def _gone(self, session: Session) -> None:
        """A session ended: what was kept for it goes (its events; a sessionless client's agent)."""
        self.events.forget(session.scope)
        if session.on_end is not None:
            session.on_end()

    async def _close(self, session_id: str, session: Session) -> None:
        """End a session as its client would, with a DELETE presenting the owner's identity."""
        if session.sessionless:  # nothing the SDK holds
            self._gone(session)
            return
        log.info(
            "Closing idle MCP session %s of %s to make room for a new one", session_id[:8], session.principal
        )
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": "DELETE",
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "query_string": b"",
            "root_path": "",
            "headers": [(MCP_SESSION_ID_HEADER.encode(), session_id.encode("latin-1"))],
            "client": ("127.0.0.1", 0),
            "server": ("127.0.0.1", None),
            "state": {},
            "user": session.owner,
        }

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Message) -> None:
            return None

        token = session_scope.set(session.scope)
        try:
            await self.manager.handle_request(scope, receive, send)
        except Exception:
            log.exception("Closing MCP session %s failed", session_id[:8])
        finally:
            session_scope.reset(token)
            self.events.forget(session.scope)


def _speak(scope: dict[str, Any], negotiated: str) -> None:
    """Serve a session's request in the protocol version it negotiated.

    A client that sends an older ``MCP-Protocol-Version`` than it negotiated (the conformance suite
    does) would otherwise lose what its version offers: priming events, and so resumable streams.
    """
    headers = scope["headers"]
    for i, (name, value) in enumerate(headers):
        if name == b"mcp-protocol-version":
            sent = value.decode("latin-1")
            if sent in HANDSHAKE_PROTOCOL_VERSIONS and sent < negotiated:
                headers[i] = (name, negotiated.encode("latin-1"))
            return


def _opens_session(handler: RequestHandler, body: bytes) -> bool:
    """An ``initialize`` POST without a session id, on the handshake protocol (2026 requests hold none).

    Only such a request may make room by closing idle sessions: anything else is refused by the SDK.
    """
    version = handler.request.headers.get("mcp-protocol-version")
    return (
        handler.request.method == "POST"
        and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)
        and b'"initialize"' in body
    )
