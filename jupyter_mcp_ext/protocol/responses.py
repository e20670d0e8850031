"""How each request is answered: a plain JSON body unless the call streams

An SSE answer costs the server about a third more CPU per call than a JSON body (the SDK's
``EventSourceResponse`` and its tasks), and most calls send nothing but their result. A request
streams when something may travel on its own stream before the result: a progress token, a
``subscriptions/listen``, or a tool that runs long (a kernel's: its call reports progress, may be
resumed with ``Last-Event-ID`` after a dropped connection, and is cancelled when its client goes
away). Everything else gets the SDK's JSON answer.

A stream's start (its headers and the priming event, an id and no data) is held for a moment
(``HOLD``): if the call's answer comes meanwhile, with nothing before it, a POST is answered with
that answer as a JSON body (``answer_in``) instead, in one write, on a connection the client keeps;
there was nothing to resume. Anything else that comes first (progress, a request to the client) or
the end of the moment sends the held start, and the call streams on as it would have.

The SDK decides JSON or SSE per session (``is_json_response_enabled``), not per request; it reads
the flag when it starts serving a POST, with no await in between, so setting it just before each
request hands it to the SDK per request.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

HOLD = 0.05  # seconds a stream's start may wait for the call's answer, to go out with it or as JSON


def wants_stream(body: bytes, streaming_tools: frozenset[str]) -> bool:
    """Whether the answer to this POST body must be an SSE stream."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False  # the SDK answers a parse error; JSON carries it
    if not isinstance(message, dict):
        return True  # not a single message: leave it to the SDK's default
    params = message.get("params")
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    if isinstance(meta, dict) and meta.get("progressToken") is not None:
        return True
    method = message.get("method")
    return method == "subscriptions/listen" or (
        method == "tools/call" and params.get("name") in streaming_tools
    )


def session_transport(
    manager: StreamableHTTPSessionManager, session_id: str
) -> StreamableHTTPServerTransport | None:
    """The SDK's transport of one session.

    Private: the manager keeps its sessions in ``_server_instances`` and has no public lookup.
    If that name changes, this returns None and every request of a session is answered the way
    the session was opened (JSON), streams included: tests/protocol/test_json_transport.py fails then.
    """
    sessions: dict[str, Any] = getattr(manager, "_server_instances", {})
    return sessions.get(session_id)


def answer_as(manager: StreamableHTTPSessionManager, session_id: str | None, *, stream: bool) -> None:
    """Have the SDK answer the next request (of ``session_id``, or a new or stateless one) as chosen."""
    manager.json_response = not stream  # read when a session opens, and by each 2026 request
    if session_id is not None:
        transport = session_transport(manager, session_id)
        if transport is not None:
            transport.is_json_response_enabled = not stream


def carries_data(chunk: bytes) -> bool:
    """Whether an SSE chunk holds an event with data (a message), not only an id or a comment."""
    return any(line[5:].strip() for line in chunk.splitlines() if line.startswith(b"data:"))


def answer_in(chunk: bytes) -> bytes | None:
    """The JSON-RPC answer (a result or an error) an SSE chunk carries as its one event, if it does."""
    data = [line[5:].removeprefix(b" ") for line in chunk.splitlines() if line.startswith(b"data:")]
    if not data:
        return None
    body = b"\n".join(data)
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message):
        return body
    return None
