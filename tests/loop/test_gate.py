"""The person never waits for the agents: MCP gets at most its share of the loop (issue 14).

Four agents call flat out from a process of their own (``benchmarks.agents``: their client CPU is
not the server's) while two Yjs peers, a person typing and another tab watching, time keystrokes
through the server. The machine running the tests is shared, so latencies are reported and only
loosely bounded; what is asserted is the mechanism: MCP's metered loop time stays near its share, calls
over it wait, and waiting sessions are served in turn.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

import httpx
import nbformat
import pytest

from jupyter_mcp_ext.loop.gate import BURST, LoopGate

from ..support.mcp_client import RAW_HEADERS, connect, raw_session
from ..support.yclient import YPeer

SHARE = 0.1  # low, so that agents exceed it even on a machine busy with other work
AGENTS = 4
SECONDS = 6.0


@pytest.fixture
def jp_server_config(jp_server_config):
    jp_server_config.MCPExtensionApp.mcp_loop_share = SHARE
    return jp_server_config


def gate_of(jp_serverapp):
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    return app.gate


async def a_person_browses(server_url: str, jp_auth_header: dict[str, str]) -> None:
    """A person's file browser asks the server for the root folder: someone to serve first."""
    async with httpx.AsyncClient(headers=jp_auth_header, timeout=30) as http:
        assert (await http.get(f"{server_url}api/contents")).status_code == 200


async def keystrokes(person: YPeer, tab: YPeer, n: int, pause: float = 0.02) -> list[float]:
    """Seconds from a key typed in one tab to the other tab seeing it, ``n`` times."""
    times = []
    for _ in range(n):
        before = len(tab.sources()[0])
        start = time.perf_counter()
        person.insert_text(0, 0, "k")
        await tab.wait_for(lambda nb, before=before: len(tab.sources()[0]) > before, timeout=30)
        times.append(time.perf_counter() - start)
        await asyncio.sleep(pause)
    return times


async def start_agents(server_url: str, token: str, paths: list[str]) -> asyncio.subprocess.Process:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks.agents",
        server_url,
        token,
        *paths,
        "--seconds",
        str(SECONDS),
        stdout=asyncio.subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), timeout=120)
    assert json.loads(line) == {"ready": True}, line
    return proc


async def test_four_flat_out_agents_use_only_their_share_and_take_turns(
    server_url, jp_auth_header, jp_serverapp, make_notebook
):
    gate = gate_of(jp_serverapp)
    typed = make_notebook("typed.ipynb", cells=["text = ''"])
    paths = [make_notebook(f"agent{i}.ipynb", cells=["x = 1", "y = 2"]) for i in range(AGENTS)]
    token = jp_auth_header["Authorization"].split()[1]
    async with (
        YPeer(server_url, jp_auth_header, typed) as person,
        YPeer(server_url, jp_auth_header, typed) as tab,
    ):
        idle = await keystrokes(person, tab, 40)
        proc = await start_agents(server_url, token, paths)
        spent, waited, paused = gate.spent, gate.waited, gate.paused
        t0, cpu = time.monotonic(), time.thread_time()
        await asyncio.sleep(1.0)  # the agents reach their pace
        shares = []
        longest = []  # the longest step in each window: the gate pauses between steps, not inside one
        loaded = []
        while proc.returncode is None and time.monotonic() - t0 < SECONDS - 0.5:
            loaded += await keystrokes(person, tab, 5)
            shares.append(gate.recent_share())
            longest.append(gate.recent_longest())
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=120)
        wall = time.monotonic() - t0
    result = json.loads(out.decode().strip().splitlines()[-1])
    calls = result["calls"]
    share = (gate.spent - spent) / wall
    print(
        f"keystroke p50 idle {statistics.median(idle) * 1000:.1f} ms, under agents "
        f"{statistics.median(loaded) * 1000:.1f} ms; MCP share {share:.2f} (windows {shares}); "
        f"calls {calls}, waited {gate.waited - waited}, paused {gate.paused - paused}; "
        f"loop CPU {(time.thread_time() - cpu) / wall:.2f} of wall; longest steps {longest}"
    )
    assert result["errors"] == 0
    assert sum(calls) > 0 and gate.waited > waited, "flat-out agents must have waited for their turn"
    # Metered MCP loop time stays at its share (a loaded machine may give it less, never much more).
    assert share <= SHARE + 0.05, share
    # In any second too, but for the one step a window may end on: a step is never cut in two, and
    # on a loaded machine a 1 ms step waited 170 ms for a core (issue 23). Calls already admitted
    # are paused between steps, so they do not run on past the share (they took windows to 0.29).
    over = [(s, x) for s, x in zip(shares, longest, strict=True) if s > SHARE + 0.1 + x]
    assert not over, (shares, longest)
    # Waiting sessions are served in turn: none is starved, none runs away.
    assert min(calls) >= 0.6 * max(calls), calls
    # What the person feels, loosely (the machine is shared): typing keeps flowing.
    assert statistics.median(loaded) <= 5 * statistics.median(idle) + 0.05


async def test_waiting_sessions_are_admitted_round_robin(jp_serverapp, server_url, jp_auth_header):
    """Three sessions queue behind an exhausted share: they are let in in turn, not in arrival order."""
    gate = gate_of(jp_serverapp)
    await a_person_browses(server_url, jp_auth_header)
    gate.recent_share()  # the credit the time since the server started brings, counted now
    gate.spend(0.05)  # the agents just held the loop for 50 ms: the next calls wait
    admitted: list[str] = []

    async def call(key: str) -> None:
        async def work() -> None:
            admitted.append(key)

        await gate.run(key, work())

    # Session a queued three calls before b and c queued one each. (Once let in, a call's first step
    # may still wait for the loop's next look for I/O, its slice being used up: tests/loop/test_gate_slices.py.)
    calls = [call("a"), call("a"), call("a"), call("b"), call("c")]
    await asyncio.wait_for(asyncio.gather(*calls), timeout=30)
    assert list(gate.order)[-5:] == ["a", "b", "c", "a", "a"]
    assert sorted(admitted) == ["a", "a", "a", "b", "c"]


async def test_a_step_that_holds_the_loop_without_computing_counts_against_the_share(
    jp_serverapp, server_url, jp_auth_header
):
    """A blocking disk sync in a save, or a core taken by other work, holds the loop as computing does.

    The person waits for the loop's time, not its CPU: 50 ms of MCP work that mostly waits in
    ``fsync`` (here: sleeps) is 50 ms of the loop, and the next call waits its turn for it.
    """
    gate = gate_of(jp_serverapp)
    await a_person_browses(server_url, jp_auth_header)
    gate.recent_share()

    async def blocking() -> None:
        time.sleep(0.05)  # the loop is held; the thread uses next to no CPU

    spent, waited = gate.spent, gate.waited
    await gate.run("a", blocking())
    assert gate.spent - spent >= 0.05
    await asyncio.wait_for(gate.run("a", asyncio.sleep(0)), timeout=30)
    assert gate.waited > waited, "the call after a 50 ms blocking step did not wait for its turn"


async def test_a_call_whose_client_leaves_while_it_waits_is_dropped(
    jp_serverapp, server_url, jp_auth_header, make_notebook
):
    gate = gate_of(jp_serverapp)
    path = make_notebook("left.ipynb", cells=["a = 1"])
    url = f"{server_url}mcp"
    version = "2025-11-25"
    insert = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "insert_cells", "arguments": {"path": path, "cells": [{"source": "b = 2"}]}},
    }
    async with httpx.AsyncClient(headers={**jp_auth_header, **RAW_HEADERS}, timeout=30) as http:
        session = await raw_session(http, url, version)
        await a_person_browses(server_url, jp_auth_header)
        gate.recent_share()
        gate.spend(1000 * SHARE)  # the agents used the loop for the next 1000 s: calls wait
        with pytest.raises(httpx.ReadTimeout):
            await http.post(url, headers=session, json=insert, timeout=1.0)  # the client gives up
        for _ in range(50):
            if gate.waiting == 0:
                break
            await asyncio.sleep(0.1)
        assert gate.waiting == 0, "the call of a client that left still waits for its turn"
        gate.spend(-1000 * SHARE)  # the share is free again: a call still queued would run now
        pong = await http.post(url, headers=session, json={"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert pong.status_code == 200
    await asyncio.sleep(0.5)
    saved = json.loads((Path(jp_serverapp.root_dir) / path).read_text())
    assert ["".join(c["source"]) for c in saved["cells"]] == ["a = 1"]


async def test_with_nobody_but_agents_on_the_server_agents_are_not_held_back(
    jp_serverapp, server_url, jp_auth_header, make_notebook
):
    """The share is for a person's sake: a lone agent runs at full speed until a tab opens."""
    gate = gate_of(jp_serverapp)
    path = make_notebook("alone.ipynb", cells=["a = 1"])
    url = f"{server_url}mcp"
    version = "2025-11-25"
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    async with httpx.AsyncClient(headers={**jp_auth_header, **RAW_HEADERS}, timeout=30) as http:
        session = await raw_session(http, url, version)
        gate.recent_share()
        gate.spend(1000 * SHARE)  # the agents used the loop for the next 1000 s: calls would wait
        waited = gate.waited
        pong = await http.post(url, headers=session, json=ping, timeout=5)
        assert pong.status_code == 200 and gate.waited == waited, "a lone agent was held back"
        async with YPeer(server_url, jp_auth_header, path):  # a person opens the notebook in a tab
            await asyncio.sleep(0.5)
            gate.spend(1000 * SHARE)
            with pytest.raises(httpx.ReadTimeout):
                await http.post(url, headers=session, json=ping, timeout=1.0)
            assert gate.waited > waited, "with a person here, a call over the share did not wait"
            gate.spend(-2000 * SHARE)


async def test_a_persons_request_in_flight_holds_agents_to_the_waiting_share(
    jp_serverapp, server_url, jp_auth_header, slow_request
):
    """With no limit while a person is merely here (share 1), agents run free; while a request of
    the person's is being served (a slow folder listing), a call over the waiting share waits, and
    goes on as soon as the request ends."""
    gate = gate_of(jp_serverapp)
    await a_person_browses(server_url, jp_auth_header)
    url = f"{server_url}mcp"
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    share, waiting_share = gate.share, gate.waiting_share
    gate.share, gate.waiting_share = 1.0, SHARE
    try:
        async with httpx.AsyncClient(headers={**jp_auth_header, **RAW_HEADERS}, timeout=30) as http:
            session = await raw_session(http, url)
            gate.recent_share()
            gate.spend(1000 * SHARE)  # the agents used the loop for the next 1000 s at the waiting share
            waited = gate.waited
            pong = await http.post(url, headers=session, json=ping, timeout=5)
            assert pong.status_code == 200 and gate.waited == waited, "agents were held with nobody waiting"
            async with slow_request():
                gate.spend(1000 * SHARE)
                call = asyncio.create_task(http.post(url, headers=session, json=ping, timeout=30))
                deadline = time.monotonic() + 30
                while gate.waited == waited and time.monotonic() < deadline:  # the call reached the gate
                    await asyncio.sleep(0.05)
                await asyncio.sleep(0.5)
                assert not call.done() and gate.waited > waited, "a call ran while the person waited"
            pong = await asyncio.wait_for(call, timeout=5)
            assert pong.status_code == 200, "the waiting call did not go on once the person's request ended"
    finally:
        gate.share, gate.waiting_share = share, waiting_share
        gate.spend(-2000 * SHARE)


async def test_short_steps_are_free_with_a_free_step(jp_serverapp, server_url, jp_auth_header):
    """With ``mcp_loop_free_step_ms``, steps under it are not charged: only long ones make calls wait."""
    gate = gate_of(jp_serverapp)
    await a_person_browses(server_url, jp_auth_header)
    gate.recent_share()
    gate.free_step = 0.001
    try:
        waited = gate.waited
        for _ in range(1000):
            gate.spend(0.0005)  # half a second of short steps in all: ten times the burst
        await asyncio.wait_for(gate.run("a", asyncio.sleep(0)), timeout=30)
        assert gate.waited == waited, "a call after short steps only waited for its turn"

        async def long_step() -> None:
            time.sleep(0.05)  # one step holding the loop 50 ms

        await gate.run("a", long_step())
        await asyncio.wait_for(gate.run("a", asyncio.sleep(0)), timeout=30)
        assert gate.waited > waited, "the call after a 50 ms step did not wait for its turn"
    finally:
        gate.free_step = 0.0


async def test_a_call_far_past_its_share_is_paused_between_steps(jp_serverapp, server_url, jp_auth_header):
    """Admission alone does not hold the share: a call let in runs all its steps (issue 23).

    Ten 20 ms steps are 0.2 s of the loop. With a person here and a share of 0.1, the gate lets
    through its burst and one step more, then spreads the rest at the share: the loop time used
    stays within that allowance plus the share of the call's time.
    """
    gate = gate_of(jp_serverapp)
    await a_person_browses(server_url, jp_auth_header)
    gate.recent_share()
    steps: list[float] = []

    async def long_call() -> None:
        for _ in range(10):
            start = time.perf_counter()
            time.sleep(0.02)
            steps.append(time.perf_counter() - start)
            await asyncio.sleep(0)

    spent, paused, start = gate.spent, gate.paused, time.monotonic()
    await asyncio.wait_for(gate.run("a", long_call()), timeout=60)
    elapsed, used = time.monotonic() - start, gate.spent - spent
    allowance = BURST + max(steps) + 0.005
    assert gate.paused > paused, "a call deep past its share was not paused between its steps"
    assert used <= allowance + SHARE * elapsed, (used, elapsed, steps)


async def test_a_room_an_agent_opened_serves_the_persons_tabs_while_agents_are_paused(
    jp_serverapp, server_url, jp_auth_header, make_notebook
):
    """A room an agent's call opens is also the person's: its tasks are metered, never paused.

    The person's keystrokes reach their other tab through the room's broadcast, a task started in
    the agent's call; were it paused with the agents, the person would wait for the agents' share.
    """
    gate = gate_of(jp_serverapp)
    path = make_notebook("shared.ipynb", cells=["text = ''"])
    async with connect(server_url, jp_auth_header) as agent:
        assert not (await agent.call_tool("get_notebook", {"path": path})).is_error  # the agent opens it
        async with (
            YPeer(server_url, jp_auth_header, path) as person,
            YPeer(server_url, jp_auth_header, path) as tab,
        ):
            await keystrokes(person, tab, 2)
            gate.recent_share()
            gate.spend(1000 * SHARE)  # the agents used the loop for the next 1000 s
            try:
                typed = await asyncio.wait_for(keystrokes(person, tab, 5), timeout=10)
            finally:
                gate.spend(-1000 * SHARE)
            assert max(typed) < 5, typed


async def start_a_task_that_cleans_up(ran: list[str]) -> asyncio.Task[None]:
    """Started in ``gate.run``, a task of MCP work (metered, and paused or sliced by the gate) that
    records in ``ran`` that its body started and that its ``finally`` ran."""

    async def body() -> None:
        try:
            ran.append("started")
            await asyncio.sleep(30)
        finally:
            ran.append("cleaned up")

    return asyncio.create_task(body())


async def test_a_task_cancelled_while_paused_before_its_first_step_still_runs_its_cleanup():
    """A task MCP work starts can be paused before its first step; cancelled there (the server
    stopping), it must still hear the cancellation inside its body, as it would have without the
    gate: thrown into a coroutine that never started, it skips its ``finally`` blocks, and whoever
    waits for them waits forever (the room-save hang below)."""
    gate = LoopGate(SHARE, person_here=lambda: True)
    gate.spend(1000 * SHARE)  # the agents used the loop for the next 1000 s: their work is paused
    ran: list[str] = []
    try:
        task = await gate.run("a", start_a_task_that_cleans_up(ran), meter=False, turn=False)
        await asyncio.sleep(0.05)
        assert gate.paused == 1 and ran == [], "the task was not paused before its first step"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=5)
        assert ran == ["started", "cleaned up"]
    finally:
        gate.uninstall()


async def test_a_save_an_agent_started_does_not_hang_the_server_stopping_while_it_is_paused(
    jp_serverapp, server_url, jp_auth_header, make_notebook, jp_root_dir, ydoc_extension
):
    """The collaboration layer saves through a task it waits for, shielded, and then waits for an
    event that task sets in its ``finally`` (``FileLoader.maybe_save_content``). A save started in
    an agent's call is MCP work; under load its task was paused before its first step, and a
    server stopping then (every task cancelled at once, as ``asyncio.run`` and pytest-asyncio do)
    cancelled it before it started: the event was never set and the save waited forever, the loop
    idle (a test's teardown hung on it for 120 s)."""
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    gate = app.gate
    path = make_notebook("saved.ipynb", cells=["x = 1"])
    _, doc = await app.services.documents.open(path)
    file_id = jp_serverapp.web_app.settings["file_id_manager"].get_id(path)
    loader = ydoc_extension.file_loaders[file_id]
    model = {"format": "json", "type": "notebook", "content": doc.get()}
    await a_person_browses(server_url, jp_auth_header)
    before = asyncio.all_tasks()
    gate.recent_share()
    gate.spend(1000 * SHARE)
    try:
        paused = gate.paused
        saving = asyncio.create_task(gate.run("a", loader.maybe_save_content(model), meter=False, turn=False))
        for _ in range(500):
            if gate.paused > paused or saving.done():
                break
            await asyncio.sleep(0.01)
        assert gate.paused > paused, "the save's task was not paused"
        for task in asyncio.all_tasks() - before - {asyncio.current_task()}:  # the server stops
            task.cancel()
        done, _ = await asyncio.wait({saving}, timeout=5)
        assert done, "the save waited forever for a task that was cancelled before it started"
    finally:
        gate.spend(-1000 * SHARE)
    assert nbformat.read(jp_root_dir / path, as_version=4).cells[0].source == "x = 1"  # intact
