"""Four agents flat out beside a typing person, in one-second turns of each kind (issues 14 and 21).

The agents call from a process of their own (``benchmarks.agents``) for the whole run; each turn
sets the gate on the server (``PUT /bench/gate``) and the person types and browses for a second, so
the machine's drift falls on every kind of turn alike. Kinds: the gate at its setting ("on"), nobody
there (the gate told so, the person still: what the agents get alone), off (neither share nor
slices), at half the share, and any of ``BENCH_GATE_MODES``.

One more kind is the machine's floor ("elsewhere"): the same four agents work on another server of
their own while the person types on this one, whose loop is then the person's alone (the agents of
this server are paused with ``SIGSTOP``, the others' the rest of the time). Whatever the person's
latency or the agents' calls/s lose there, they lose to the machine (cores shared by the agents'
client, the person's clients and two servers), not to this server: no gate can do better than that.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import psutil

from tests.support.server import JupyterServer, bench_server

from .bench import Bench, cpu_seconds
from .client import write_notebook
from .report import Row
from .typist import for_seconds, ratio_row, sample

REPO = str(Path(__file__).resolve().parent.parent)  # the agents' process imports benchmarks from here
ELSEWHERE = "elsewhere"
_GATE = ("spent_s", "admitted", "waited", "sliced", "thread_cpu_s")  # the gate's counts (GET /bench/gate)
_RAW = (*_GATE, "wall_s", "server_cpu_s")


async def agents_process(
    server: JupyterServer, paths: list[str], seconds: float
) -> asyncio.subprocess.Process:
    """The agents' process on ``server``, its sessions open and calling (``benchmarks.agents``)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks.agents",
        server.url,
        server.token,
        *paths,
        "--seconds",
        str(seconds),
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))},
    )
    assert proc.stdout is not None
    await proc.stdout.readline()  # ready
    return proc


@contextlib.asynccontextmanager
async def _elsewhere(notebooks: int, seconds: float) -> AsyncIterator[tuple[JupyterServer, Any] | None]:
    """Another server and its own four agents, paused; None where processes cannot be paused."""
    if not hasattr(signal, "SIGSTOP"):
        yield None
        return
    server = bench_server()
    server.start()
    proc = None
    try:
        paths = [write_notebook(server.root, f"agent-{i}.ipynb", 20).name for i in range(notebooks)]
        # Nobody is on that server (the benchmark's own requests to it are not a person's).
        alone = {"share": 1.0, "nobody": True, "ystore_batching": True}
        async with httpx.AsyncClient(headers=server.headers, timeout=60) as http:
            (await http.put(f"{server.url}bench/gate", json=alone)).raise_for_status()
        proc = await agents_process(server, paths, seconds)
        proc.send_signal(signal.SIGSTOP)
        yield server, proc
    finally:
        if proc is not None and proc.returncode is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            await proc.wait()
        server.stop()


async def agent_turns(
    bench: Bench,
    peer: Any,
    tab: Any,
    http: httpx.AsyncClient,
    paths: list[str],
    seconds: float,
    setting: dict[str, Any],
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The person's latencies while four agents call flat out, in one-second turns of each kind;
    per kind, the gate's and the server's figures (``elsewhere``: the other server's)."""
    share, free_step = setting["share"], setting.get("free_step", 0.0)
    time_slice, waiting_share = setting.get("time_slice", 0.0), setting.get("waiting_share", 1.0)
    shares = {"on": share, "nobody": share, "off": 1.0, "half": share / 2}
    # More gate settings to try beside these, with the person typing (issue 21): BENCH_GATE_MODES,
    # JSON {"name": {"share": x, "waiting_share": x, "free_step": seconds, "time_slice": seconds,
    # "nobody": bool, "ystore_batching": bool}, ...}.
    tries: dict[str, dict[str, Any]] = json.loads(os.environ.get("BENCH_GATE_MODES", "{}"))
    shares.update({name: float(t.get("share", share)) for name, t in tries.items()})
    url = bench.server.url
    async with _elsewhere(len(paths), (len(shares) + 1) * seconds + 30) as other:
        kinds = [*shares, *([ELSEWHERE] if other is not None else [])]
        # The turns and the last one's overrun (paused in the floor's turns, its clock still runs).
        proc = await agents_process(bench.server, paths, len(kinds) * seconds + 3)
        modes: dict[str, dict[str, Any]] = {
            m: {"keystroke": [], "rest": [], "raw": dict.fromkeys(_RAW, 0.0)} for m in kinds
        }
        end = time.monotonic() + len(kinds) * seconds
        turn = 0
        with bench.phase("person under four agents", 1):  # --profile: a py-spy record of these turns
            while time.monotonic() < end:
                mode = kinds[turn % len(kinds)]
                turn += 1
                if mode == ELSEWHERE:
                    assert other is not None
                    await _turn_elsewhere(bench, peer, tab, http, proc, other, modes[mode])
                    continue
                nobody = mode == "nobody" or bool(tries.get(mode, {}).get("nobody"))
                gate = {
                    "free_step": free_step,
                    "time_slice": 0.0 if mode == "off" else time_slice,
                    "waiting_share": 1.0 if mode == "off" else waiting_share,
                    "ystore_batching": True,
                    **tries.get(mode, {}),
                    "share": shares[mode],
                    "nobody": nobody,
                }
                (await http.put(f"{url}bench/gate", json=gate)).raise_for_status()
                before, cpu, start = (
                    (await http.get(f"{url}bench/gate")).json(),
                    bench.server_cpu(),
                    time.monotonic(),
                )
                if nobody:
                    await asyncio.sleep(1.0)
                    got = {"keystroke": [], "rest": []}
                else:
                    got = await sample(peer, tab, http, url, for_seconds(1.0))
                after, wall = (await http.get(f"{url}bench/gate")).json(), time.monotonic() - start
                _count(modes[mode], got, before, after, wall, bench.server_cpu() - cpu)
    gate = {
        "share": share,
        "waiting_share": waiting_share,
        "nobody": False,
        "free_step": free_step,
        "time_slice": time_slice,
    }
    (await http.put(f"{url}bench/gate", json=gate)).raise_for_status()
    out, _ = await proc.communicate()
    agents = json.loads(out.decode().strip().splitlines()[-1])
    for name, mode in modes.items():
        raw = mode.pop("raw")
        calls = max(1.0, raw["admitted"])  # the agents' requests (each a call) admitted in these turns
        mode["stats"] = {
            "share": shares.get(name, 1.0),
            "calls_per_s": raw["admitted"] / raw["wall_s"],
            "server_cpu_ms_per_call": raw["server_cpu_s"] * 1000 / calls,
            "mcp_share_measured": raw["spent_s"] / raw["wall_s"],
            "loop_thread_share": raw["thread_cpu_s"] / raw["wall_s"],
            "calls_waited": raw["waited"] / calls,
            "slice_waits_per_call": raw["sliced"] / calls,
        }
    return modes, agents


async def _turn_elsewhere(
    bench: Bench,
    peer: Any,
    tab: Any,
    http: httpx.AsyncClient,
    ours: Any,
    other: tuple[JupyterServer, Any],
    mode: dict[str, Any],
) -> None:
    """A turn of the floor: this server's agents paused, the other server's working; the person
    types here, and the calls/s and CPU are the other server's."""
    server, theirs = other
    ours.send_signal(signal.SIGSTOP)
    theirs.send_signal(signal.SIGCONT)
    try:
        async with httpx.AsyncClient(headers=server.headers, timeout=60) as there:
            before, start = (await there.get(f"{server.url}bench/gate")).json(), time.monotonic()
            proc = psutil.Process(server.pid)
            cpu = cpu_seconds(proc)
            got = await sample(peer, tab, http, bench.server.url, for_seconds(1.0))
            after, wall = (await there.get(f"{server.url}bench/gate")).json(), time.monotonic() - start
            _count(mode, got, before, after, wall, cpu_seconds(proc) - cpu)
    finally:
        theirs.send_signal(signal.SIGSTOP)
        ours.send_signal(signal.SIGCONT)


def _count(
    mode: dict[str, Any],
    got: dict[str, list[float]],
    before: dict[str, Any],
    after: dict[str, Any],
    wall: float,
    cpu: float,
) -> None:
    raw = mode["raw"]
    for key in _GATE:
        raw[key] += after.get(key, 0) - before.get(key, 0)
    raw["wall_s"] += wall
    raw["server_cpu_s"] += cpu
    mode["keystroke"] += got["keystroke"]
    mode["rest"] += got["rest"]


def issue21_rows(bench: Bench, idle: list[float], modes: dict[str, dict[str, Any]]) -> None:
    """Issue 21: agents are not throttled by a person's presence. Four agents' calls/s with a person
    typing (the gate at its setting) against the same agents with nobody there, in the same run's
    interleaved turns; their total; the person's keystroke p95 then against idle. Beside them, the
    machine's floor: the same figures with the agents on another server."""
    on, alone = modes["on"]["stats"], modes["nobody"]["stats"]
    extra = {
        "typing_calls_per_s": on["calls_per_s"],
        "nobody_calls_per_s": alone["calls_per_s"],
        "typing_server_cpu_ms_per_call": on["server_cpu_ms_per_call"],
        "nobody_server_cpu_ms_per_call": alone["server_cpu_ms_per_call"],
        "typing_calls_waited": on["calls_waited"],
    }
    name = "4 agents' calls/s, a person typing, against nobody there"
    bench.add(
        Row(
            name,
            "calls/s",
            on["calls_per_s"],
            None,
            1,
            alone["calls_per_s"],
            "nobody there",
            "min_ratio",
            0.8,
            ">= 0.8x",
            extra,
        )
    )
    total = "4 agents' calls/s in all, a person typing"
    bench.add(
        Row(total, "calls/s", on["calls_per_s"], None, 1, 0.0, "-", "min", 250, ">= 250 calls/s", extra)
    )
    ratio_row(
        bench, "person's keystroke p95, typing among 4 agents (issue 21)", idle, modes["on"]["keystroke"], 2.0
    )
    floor = modes.get(ELSEWHERE)
    if floor is None:
        return
    there = floor["stats"]["calls_per_s"]
    bench.add(
        Row(
            "machine's floor: 4 agents' calls/s on another server, a person typing here, against nobody there",
            "calls/s",
            there,
            None,
            1,
            alone["calls_per_s"],
            "nobody there",
            "info",
            0,
            "-",
            {"elsewhere_server_cpu_ms_per_call": floor["stats"]["server_cpu_ms_per_call"]},
        )
    )
    ratio_row(
        bench,
        "machine's floor: person's keystroke p95, 4 agents on another server",
        idle,
        floor["keystroke"],
        None,
    )


def issue36_rows(bench: Bench, modes: dict[str, dict[str, Any]]) -> None:
    """Issue 36: the gate against the machine's floor. With four agents and a person typing, the agents
    get at least 0.8x the calls/s they get working on another server of this machine while the person
    types here, and the person's keystroke p95 stays within 1.2x of what it is then."""
    floor = modes.get(ELSEWHERE)
    if floor is None or not floor["keystroke"]:
        return
    on, there = modes["on"], floor["stats"]["calls_per_s"]
    bench.add(
        Row(
            "4 agents' calls/s, a person typing, against the machine's floor",
            "calls/s",
            on["stats"]["calls_per_s"],
            None,
            1,
            there,
            "agents on another server",
            "min_ratio",
            0.8,
            ">= 0.8x",
        )
    )
    ratio_row(
        bench,
        "person's keystroke p95 among 4 agents, against the machine's floor",
        floor["keystroke"],
        on["keystroke"],
        1.2,
        against="floor",
    )
