"""What is kept for resumable streams stays bounded, in count and in bytes, and goes when its session
ends: a client that reconnects gets what it missed, and a server that served many sessions gives
their memory back."""

from __future__ import annotations

import nbformat
from mcp_types import JSONRPCNotification

from jupyter_mcp_ext.protocol.events import MemoryEventStore, session_scope

from ..support.mcp_client import connect, ok


def note(method: str, size: int = 0) -> JSONRPCNotification:
    return JSONRPCNotification(jsonrpc="2.0", method=method, params={"pad": "x" * size} if size else None)


async def test_the_event_store_is_bounded_and_replays_only_to_its_own_session():
    store = MemoryEventStore(max_events=5)
    alice, bob = object(), object()
    ids = []
    for i in range(8):
        session_scope.set(alice)
        ids.append(await store.store_event("1", note(f"n{i}")))
        session_scope.set(bob)  # another session, with the same request id, in between
        await store.store_event("1", note(f"b{i}"))
    assert store.size == 5
    replayed = []

    async def collect(event):
        replayed.append((event.event_id, event.message.method))

    session_scope.set(alice)
    assert await store.replay_events_after(ids[0], collect) is None  # forgotten: too old
    assert await store.replay_events_after(ids[6], collect) == "1"
    assert replayed == [(ids[7], "n7")]  # alice's only, none of bob's
    session_scope.set(bob)
    assert await store.replay_events_after(ids[6], collect) is None  # not bob's to replay


async def test_large_events_are_bounded_by_bytes_and_an_ended_sessions_events_go():
    store = MemoryEventStore(max_events=1000, max_bytes=100_000)
    alice, bob = object(), object()
    session_scope.set(alice)
    first = await store.store_event("1", note("big", 30_000))
    for i in range(4):
        await store.store_event("1", note(f"big{i}", 30_000))
    assert store.size == 3 and 90_000 < store.bytes <= 100_000  # the oldest two made room
    replayed = []

    async def collect(event):
        replayed.append(event.message.method)

    assert await store.replay_events_after(first, collect) is None
    session_scope.set(bob)
    kept = await store.store_event("2", note("small"))
    store.forget(alice)
    assert store.size == 1 and store.bytes < 100
    assert await store.replay_events_after(kept, collect) == "2"  # bob's stream is untouched


async def test_a_closed_sessions_replay_is_dropped_by_the_server(
    jp_serverapp, server_url, jp_auth_header, jp_root_dir
):
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    nbformat.write(nbformat.v4.new_notebook(), jp_root_dir / "run.ipynb")
    async with connect(server_url, jp_auth_header) as agent:
        # A kernel call streams its answer (SSE), so its events are kept for a reconnect.
        await ok(agent, "execute_code", path="run.ipynb", code="print('x' * 50_000)")
        assert app.transport.events.size > 0 and app.transport.events.bytes > 10_000
    # The client ended its session (DELETE): nothing of it can be resumed, so nothing is kept.
    assert app.transport.events.size == 0 and app.transport.events.bytes == 0
