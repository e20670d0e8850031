"""While a request of a person's is being served, agents get the smaller ``waiting_share`` (issue 21:
``MCPExtensionApp.mcp_loop_waiting_share``), from its first step to its end, and not a moment longer.

The server-level test is in ``test_gate.py`` (a slow request of the person's holds an agent's call);
here the gate and the attendance are taken alone, so the timing of each change is exact.
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

from jupyter_mcp_ext.loop.gate import BURST, LoopGate
from jupyter_mcp_ext.people import attendance as attendance_module
from jupyter_mcp_ext.people.attendance import STALE, Attendance

ITERATIONS = 10  # passes of the event loop a released call may take to go on


async def two_steps() -> None:
    # Each step holds the loop 1 ms: both together well within the burst (20 ms) even where a busy
    # machine stretches a sleep several times over (5 ms steps were paused so in a loaded CI run).
    time.sleep(0.001)
    await asyncio.sleep(0)
    time.sleep(0.001)


async def test_a_person_who_starts_waiting_takes_the_agents_burst_away():
    """Within its burst a call runs through; once a request of the person's begins, what was left of
    the burst is gone, and the call's second step waits for the waiting share."""
    gate = LoopGate(0.5, person_here=lambda: True, waiting_share=0.25)
    try:
        await gate.run("agent", two_steps())
        assert gate.paused == 0, "a call within the agents' burst was paused with nobody waiting"
        gate.person_waits(True)
        await asyncio.wait_for(gate.run("agent", two_steps()), timeout=30)
        assert gate.paused == 1, "the burst outlived the start of the person's request"
    finally:
        gate.uninstall()


async def test_work_held_to_the_waiting_share_goes_on_as_soon_as_the_request_ends():
    """At a waiting share of 0.01 a second of debt is 100 s; the request ends, and the call goes on at
    once (the share is 1 then: no limit), within a few passes of the loop, not at the gate's next
    look, up to ``RECHECK`` later. Counted in passes of the loop, not in time: a busy machine does not
    change it."""
    gate = LoopGate(1.0, person_here=lambda: True, waiting_share=0.01)
    gate.person_waits(True)
    gate.spend(1.0)
    turn = asyncio.create_task(gate.turn("agent"))
    await asyncio.sleep(0.05)
    assert not turn.done(), "a call over the waiting share went on while the person waited"
    gate.person_waits(False)
    for _ in range(ITERATIONS):  # the gate's release, the admission, the call's step: a few passes
        await asyncio.sleep(0)
    assert turn.done(), "the call waited on after the person's request ended (for the next look?)"
    await turn


async def test_without_a_smaller_waiting_share_a_persons_request_changes_nothing():
    gate = LoopGate(0.5, person_here=lambda: True, waiting_share=1.0)
    gate.person_waits(True)
    assert gate.credit == BURST
    await gate.turn("agent")
    assert gate.waited == 0


def test_a_request_whose_end_never_comes_stops_counting(monkeypatch):
    """A person's request whose end never reached the log (its connection dropped mid-way) holds
    agents to the waiting share for ``STALE`` seconds at most."""
    told: list[bool] = []
    attendance = Attendance({}, is_agent=lambda handler: False)
    attendance.on_wait = told.append
    attendance._arrival()(SimpleNamespace(path="/api/contents"))
    assert told == [True] and attendance.waiting and attendance.person_here()
    later = time.monotonic() + STALE + 1
    monkeypatch.setattr(attendance_module.time, "monotonic", lambda: later)
    attendance.person_here()
    assert told == [True, False] and not attendance.waiting


def test_an_agents_and_a_probes_requests_are_no_person_waiting():
    told: list[bool] = []
    attendance = Attendance(
        {},
        is_agent=lambda handler: False,
        base_url="/base/",
        agent_paths=frozenset({"/base/mcp"}),
        agent_prefixes=("/base/oauth/", "/.well-known/"),
    )
    attendance.on_wait = told.append
    arrival = attendance._arrival()
    for path in (
        "/base/mcp",
        "/base/api",
        "/base/api/status",
        "/base/oauth/token",
        "/.well-known/oauth-protected-resource/base/mcp",
    ):
        arrival(SimpleNamespace(path=path))
    assert told == [] and not attendance.waiting
    arrival(SimpleNamespace(path="/base/api/contents"))
    assert told == [True]
