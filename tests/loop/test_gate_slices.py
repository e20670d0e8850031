"""A person's keystroke waits behind one slice of the agents' work, not behind every agent's step
(issue 21: ``MCPExtensionApp.mcp_loop_slice_ms``).

A keystroke crosses the server in about ten hops of the event loop, and at each hop it waits for
everything the loop runs before its next look for I/O: with four agents' calls in flight, a step of
each. With slices, MCP work that has held the loop for a slice since its last look waits for the next
one, so the keystroke's hop runs first. What is counted here is the agents' steps that ran between a
byte sent to the server and its read: a count, not a time, so a slow machine does not change it.
"""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from jupyter_mcp_ext.loop.gate import LoopGate

from .test_gate import start_a_task_that_cleans_up

STEP = 0.003  # seconds each of the agents' steps computes: longer than the slice
SLICE = 0.001
AGENTS = 6
KEYS = 20


async def steps_before_each_keystroke(gate: LoopGate) -> list[int]:
    """While ``AGENTS`` tasks of MCP work compute flat out, a person sends ``KEYS`` bytes over a
    socket; for each, the agents' steps that ran between the send and the server's read of it."""
    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    theirs.setblocking(False)
    steps = 0
    sent_at: list[int] = []
    waited: list[int] = []
    read = asyncio.Event()

    def on_readable() -> None:
        theirs.recv(16)
        waited.append(steps - sent_at[-1])
        read.set()

    async def agent() -> None:
        nonlocal steps
        while True:
            end = time.perf_counter() + STEP
            while time.perf_counter() < end:
                pass
            steps += 1
            await asyncio.sleep(0)

    async def start_agents() -> list[asyncio.Task[None]]:
        return [asyncio.create_task(agent()) for _ in range(AGENTS)]  # MCP work: metered

    loop.add_reader(theirs.fileno(), on_readable)
    agents = await gate.run("agents", start_agents(), meter=False, turn=False)
    try:
        await asyncio.sleep(0.05)
        for _ in range(KEYS):
            read.clear()
            sent_at.append(steps)
            ours.send(b"k")
            await asyncio.wait_for(read.wait(), timeout=30)
            await asyncio.sleep(0.005)
    finally:
        loop.remove_reader(theirs.fileno())
        for task in agents:
            task.cancel()
        await asyncio.gather(*agents, return_exceptions=True)
        gate.uninstall()
        ours.close()
        theirs.close()
    return waited


async def test_a_keystroke_waits_behind_one_slice_of_the_agents_work():
    gate = LoopGate(1.0, person_here=lambda: True, time_slice=SLICE)  # the share itself off
    waited = await steps_before_each_keystroke(gate)
    assert gate.sliced > 0
    # The step under way when the byte came, and at most one begun before the loop looked again.
    assert max(waited) <= 2, waited


async def test_without_slices_a_keystroke_waits_behind_every_agents_step():
    gate = LoopGate(1.0, person_here=lambda: True)  # the same, slices off: what they change
    waited = await steps_before_each_keystroke(gate)
    assert gate.sliced == 0
    assert max(waited) >= AGENTS, waited


async def test_with_nobody_here_agents_run_without_slices():
    gate = LoopGate(1.0, person_here=lambda: False, time_slice=SLICE)
    await steps_before_each_keystroke(gate)
    assert gate.sliced == 0


async def test_a_task_cancelled_while_it_waits_for_the_next_slice_still_runs_its_cleanup():
    gate = LoopGate(1.0, person_here=lambda: True, time_slice=SLICE)
    gate.spend(1.0)  # MCP work held the loop for a second since its last look for I/O
    ran: list[str] = []
    try:
        task = await gate.run("a", start_a_task_that_cleans_up(ran), meter=False, turn=False)
        await asyncio.sleep(0)  # its first look: the slice is used up, it waits for the next
        task.cancel()  # before its first step
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=5)
        assert gate.sliced == 1 and ran == ["started", "cleaned up"]
    finally:
        gate.uninstall()


def test_the_server_slices_agents_work_by_default(jp_serverapp):
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    assert app.gate.time_slice == app.mcp_loop_slice_ms / 1000 == 0.003


def test_a_gate_used_again_on_a_new_loop_starts_with_a_slice_of_its_own():
    gate = LoopGate(1.0, person_here=lambda: True, time_slice=SLICE)
    loop = asyncio.new_event_loop()
    gate.install(loop)
    # A slice used up and a wait for the next, and the loop stopped before that wait's timer fires.
    loop.call_soon(lambda: (gate.spend(1.0), gate.next_slice(), loop.stop()))
    loop.run_forever()
    gate.uninstall()
    loop.close()
    ran: list[str] = []

    async def on_a_new_loop() -> None:
        async def work() -> None:
            ran.append("ran")

        try:
            await asyncio.wait_for(gate.run("a", work(), turn=False), timeout=5)
        finally:
            gate.uninstall()

    asyncio.run(on_a_new_loop())
    assert ran == ["ran"]
