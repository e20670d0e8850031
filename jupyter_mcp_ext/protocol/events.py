"""Resumable streams: a bounded, in-memory event store (the SDK's ``EventStore``).

With it, every SSE stream starts with a priming event (an id and the ``retry:`` field), each message
carries an event id, and a client whose stream dropped (a proxy cutting idle connections) reconnects
with ``Last-Event-ID`` and gets what it missed, a long tool call's result included.

The SDK keeps one store for all sessions and names streams by request id, which sessions share
("1", "_GET_stream"). Events are therefore kept per session scope, which the transport sets for
each request (``session_scope``) and which the session's own tasks inherit from the request that
opened it; a ``Last-Event-ID`` replays only events of the caller's own scope. Event ids are random,
so one cannot be guessed.

The store is bounded by count and by bytes (a result can be large), and a session's events go
when the session does: nobody can resume a stream of a session that has ended.
"""

from __future__ import annotations

import contextvars
import itertools
import secrets
from collections import OrderedDict, deque
from dataclasses import dataclass

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

session_scope: contextvars.ContextVar[object | None] = contextvars.ContextVar(
    "jupyter_mcp_ext_session_scope", default=None
)
"""The session a request belongs to, as an opaque token; set by the transport around each request."""


@dataclass
class _Event:
    scope: object | None
    stream: StreamId
    message: JSONRPCMessage | None
    size: int


class MemoryEventStore(EventStore):
    """Keeps the last ``max_events`` events, at most ``max_bytes`` of them, of live sessions."""

    def __init__(self, max_events: int = 2000, max_bytes: int = 16 * 1024 * 1024):
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.bytes = 0
        self._events: OrderedDict[EventId, _Event] = OrderedDict()
        self._streams: dict[tuple[object | None, StreamId], deque[EventId]] = {}
        self._serial = itertools.count()
        self._salt = secrets.token_hex(6)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        scope = session_scope.get()
        event_id = f"{self._salt}-{next(self._serial)}"
        size = len(message.model_dump_json(by_alias=True, exclude_unset=True)) if message else 0
        self._events[event_id] = _Event(scope, stream_id, message, size)
        self.bytes += size
        self._streams.setdefault((scope, stream_id), deque()).append(event_id)
        while len(self._events) > self.max_events or self.bytes > self.max_bytes:
            self._forget_oldest()
        return event_id

    def forget(self, scope: object) -> None:
        """Drop every event of a session that has ended."""
        for key in [key for key in self._streams if key[0] is scope]:
            for event_id in self._streams.pop(key):
                self.bytes -= self._events.pop(event_id).size

    def clear(self) -> None:
        self._events.clear()
        self._streams.clear()
        self.bytes = 0

    def _forget_oldest(self) -> None:
        _, event = self._events.popitem(last=False)
        self.bytes -= event.size
        key = (event.scope, event.stream)
        ids = self._streams[key]
        ids.popleft()  # events of a stream are stored, and so forgotten, in order
        if not ids:
            del self._streams[key]

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        event = self._events.get(last_event_id)
        if event is None or event.scope is not session_scope.get():
            return None
        ids = list(self._streams.get((event.scope, event.stream), ()))
        for event_id in ids[ids.index(last_event_id) + 1 :]:
            later = self._events.get(event_id)
            if later is not None and later.message is not None:  # priming events carry nothing
                await send_callback(EventMessage(later.message, event_id))
        return event.stream

    @property
    def size(self) -> int:
        """Events kept. (Not ``__len__``: the SDK tests the store for truth, and empty must not be false.)"""
        return len(self._events)
