"""Transport: serves the SDK's Streamable HTTP session manager (an ASGI app) from a Tornado handler.

Jupyter Server is Tornado, the SDK's transport is ASGI. This module is the whole bridge: it turns
one Tornado request into one ASGI call, streams the answer back as it is produced (SSE), and tells
the SDK when the client went away, which is how the SDK sees a dropped stream or a cancelled call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import MutableMapping
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from tornado.iostream import StreamClosedError
from tornado.web import RequestHandler

log = logging.getLogger(__name__)

Message = MutableMapping[str, Any]


class MCPTransport:
    """Owns the SDK's session manager and its lifetime inside the server's event loop."""

    def __init__(self, server: Server[Any], *, session_idle_timeout: float | None, retry_interval_ms: int):
        self._server = server
        self._settings = {"session_idle_timeout": session_idle_timeout, "retry_interval": retry_interval_ms}
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
        """
        if self._task is None or self._task.done():
            return 0
        count = _session_count(self.manager)
        await self.stop()
        self.manager, self._task = self._new_manager(), None
        self._started.clear()
        self._stopping.clear()
        return count

    async def serve(self, handler: RequestHandler, extra_scope: dict[str, Any]) -> None:
        """Answer the handler's request through the session manager."""
        await self.start()
        exchange = _Exchange(handler)
        handler.on_connection_close = exchange.client_gone  # type: ignore[method-assign]
        await self.manager.handle_request(exchange.scope(extra_scope), exchange.receive, exchange.send)
        exchange.finish()


def _session_count(manager: StreamableHTTPSessionManager) -> int:
    """How many sessions the manager holds. The SDK has no public count: this reads its private
    session table, and says 0 (the stop still ends them) if that table moves."""
    sessions = getattr(manager, "_server_instances", None)
    return len(sessions) if isinstance(sessions, dict) else 0


class _Exchange:
    """One request/response pair seen from both sides."""

    def __init__(self, handler: RequestHandler):
        self.handler = handler
        self._body_sent = False
        self._gone = asyncio.Event()
        self._content_type = "application/json"
        self._streaming = False
        self._done = False

    def scope(self, extra: dict[str, Any]) -> dict[str, Any]:
        request = self.handler.request
        host, _, port = request.host.partition(":")
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": request.version.removeprefix("HTTP/"),
            "method": request.method,
            "scheme": request.protocol,
            "path": request.path,
            "raw_path": request.path.encode("latin-1"),
            "query_string": request.query.encode("latin-1"),
            "root_path": "",
            "headers": [
                (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.get_all()
            ],
            "client": (request.remote_ip, 0),
            "server": (host, int(port) if port.isdigit() else None),
            "state": {},
            **extra,
        }

    def client_gone(self) -> None:
        self._gone.set()

    async def receive(self) -> Message:
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self.handler.request.body or b"", "more_body": False}
        # After the body, an ASGI receive() only returns when the client disconnects.
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self._gone.is_set() or self._done:
            return
        handler = self.handler
        if message["type"] == "http.response.start":
            handler.set_status(message["status"])
            for raw_name, raw_value in message.get("headers", []):
                name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
                if name.lower() == "content-type":
                    self._content_type = value
                elif name.lower() != "content-length":
                    handler.add_header(name, value)
            handler.set_header("Content-Type", self._content_type)
            if self._content_type.startswith("text/event-stream"):
                # A stream's headers go out at once: the client waits for them to know it is open.
                self._streaming = True
                await self._flush()
        elif message["type"] == "http.response.body":
            body = message.get("body", b"")
            if body:
                handler.write(body)
            if message.get("more_body", False):
                if self._streaming:
                    await self._flush()
            else:
                self.finish()

    async def _flush(self) -> None:
        try:
            await self.handler.flush()
        except StreamClosedError:
            self._gone.set()

    def finish(self) -> None:
        if self._done:
            return
        self._done = True
        # The client may have left, or tornado finished the response already.
        with contextlib.suppress(StreamClosedError, RuntimeError):
            # APIHandler.finish would otherwise label every answer application/json.
            self.handler.finish(set_content_type=self._content_type)  # type: ignore[call-arg]
