"""One HTTP exchange of the transport (``transport.py``): a Tornado request and its answer, seen
from the ASGI side. It hands the request's body to the SDK, writes what the SDK answers (a JSON body,
or an SSE stream flushed as it goes, its start held a moment: ``responses``), and tells the SDK when
the client went away.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Callable, MutableMapping
from typing import Any

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from tornado.iostream import StreamClosedError
from tornado.web import RequestHandler

from ..auth.asgi import http_scope
from .responses import HOLD, answer_in, carries_data
from .sessions import Session

Message = MutableMapping[str, Any]
_NEGOTIATED = re.compile(rb'"protocolVersion"\s*:\s*"([0-9-]+)"')


class Exchange:
    """One request/response pair seen from both sides."""

    def __init__(self, handler: RequestHandler, body: bytes):
        self.handler = handler
        self.body = body
        self.status = 0
        self.session_id: str | None = None
        # An opening request: called when its answer starts, with the status and session id; the
        # session it returns learns the protocol version the answer negotiates.
        self.on_start: Callable[[int, str | None], Session | None] | None = None
        self._opened: Session | None = None
        self._body_sent = False
        self._gone = asyncio.Event()
        self._content_type = "application/json"
        self._streaming = False
        self._held: asyncio.TimerHandle | None = None  # a stream's start is held until this fires
        self._holding: list[bytes] = []  # what it holds: the priming event
        self._done = False

    def scope(self, extra: dict[str, Any]) -> dict[str, Any]:
        return http_scope(self.handler.request, **extra)

    def client_gone(self) -> None:
        self._gone.set()

    async def receive(self) -> Message:
        if not self._body_sent:
            self._body_sent = True
            # Handed over, not kept: a finished request's handler (and so this exchange) stays
            # reachable while a cancelled timer holds its context, up to a hundred of them.
            body, self.body = self.body, b""
            return {"type": "http.request", "body": body, "more_body": False}
        # After the body, an ASGI receive() only returns when the client disconnects.
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self._gone.is_set() or self._done:
            return
        handler = self.handler
        if message["type"] == "http.response.start":
            self.status = message["status"]
            handler.set_status(self.status)
            for raw_name, raw_value in message.get("headers", []):
                name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
                if name.lower() == "content-type":
                    self._content_type = value
                elif name.lower() == MCP_SESSION_ID_HEADER:
                    self.session_id = value
                    handler.add_header(name, value)
                elif name.lower() != "content-length":
                    handler.add_header(name, value)
            handler.set_header("Content-Type", self._content_type)
            if self.on_start is not None:
                self._opened = self.on_start(self.status, self.session_id)
            if self._content_type.startswith("text/event-stream"):
                # Its start is held a moment: a quick call's answer goes out alone, as JSON
                # (``responses``); a long call's start soon, as the client waits to know it is open.
                self._streaming = True
                self._held = asyncio.get_running_loop().call_later(HOLD, self._release)
        elif message["type"] == "http.response.body":
            body = message.get("body", b"")
            more = message.get("more_body", False)
            if body and self._opened is not None and self._opened.version is None:
                found = _NEGOTIATED.search(body)
                self._opened.version = found.group(1).decode() if found else None
            if self._held is not None:
                if more and not carries_data(body):
                    self._holding.append(body)  # the priming event
                    return
                answer = answer_in(body) if handler.request.method == "POST" else None
                if answer is not None:  # the whole answer, at once: no stream to resume
                    self._held.cancel()
                    self._held, self._holding = None, []
                    self._content_type = "application/json"
                    handler.write(answer)
                    self.finish()
                    return
                self._unhold()
            if body:
                handler.write(body)
            if not more:
                self.finish()
            elif self._streaming:
                await self._flush()

    async def refuse(self, status: int, message: str) -> None:
        """Answer with a JSON-RPC error, as the SDK answers what it refuses."""
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}})
        await self.send({"type": "http.response.start", "status": status, "headers": []})
        await self.send({"type": "http.response.body", "body": body.encode()})

    def _unhold(self) -> None:
        """The held start goes into the answer, ahead of what follows."""
        if self._held is not None:
            self._held.cancel()
            self._held = None
            for chunk in self._holding:
                self.handler.write(chunk)
            self._holding = []

    def _release(self) -> None:
        """Nothing came soon after the stream opened: what is held goes out alone."""
        if self._held is None or self._gone.is_set() or self._done:
            return
        self._unhold()
        try:
            flushed = self.handler.flush()
        except StreamClosedError:
            self._gone.set()
            return
        flushed.add_done_callback(self._flushed)

    def _flushed(self, flushed: asyncio.Future[None]) -> None:
        if not flushed.cancelled() and isinstance(flushed.exception(), StreamClosedError):
            self._gone.set()

    async def _flush(self) -> None:
        try:
            await self.handler.flush()
        except StreamClosedError:
            self._gone.set()

    def finish(self) -> None:
        if self._done:
            return
        self._done = True
        self._unhold()  # what is held goes out with the end of the answer
        # The client may have left, or tornado finished the response already.
        with contextlib.suppress(StreamClosedError, RuntimeError):
            # APIHandler.finish would otherwise label every answer application/json.
            self.handler.finish(set_content_type=self._content_type)  # type: ignore[call-arg]
