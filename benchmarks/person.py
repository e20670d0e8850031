"""What the person feels while agents work (issue 14), and what a call costs the server.

A person is two Yjs clients in one notebook (a keystroke in one, timed until the other's observer
sees it) and a file browser (``GET /api/contents``), taken in turns. Their latencies are measured
idle, while four agents call flat out from a process of their own (``benchmarks.agents``), and
while an agent's cell prints 100 MB; the rows give the ratios to idle in the same run.

Server CPU per call is measured with a raw HTTP client (no SDK client: its own CPU, about 2.8 ms
a call, would hide the server's) for ``ping``, ``read_cells`` and ``insert_cells``, beside a floor:
an authenticated ``APIHandler`` inside the same server answering the same bytes (``floor.py``).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from .bench import Bench
from .client import call, cell_ids, mcp_client, raw_initialize, write_notebook
from .report import Row, ms, pct
from .yjs import YPeer

AGENTS = 4
REPO = str(Path(__file__).resolve().parent.parent)  # the agents' process imports benchmarks from here
VERSION = "2025-11-25"


async def _sample(
    peer: Any, tab: Any, http: httpx.AsyncClient, url: str, until: Any
) -> dict[str, list[float]]:
    """Keystrokes and REST calls in turns, every ~20 ms, until ``until()`` is true."""
    keys: list[float] = []
    rest: list[float] = []
    while not until():
        before = len(tab.sources()[0])
        start = time.perf_counter()
        peer.insert_text(0, 0, "k")
        await tab.wait_for(lambda nb, before=before: len(tab.sources()[0]) > before, timeout=60)
        keys.append(time.perf_counter() - start)
        start = time.perf_counter()
        (await http.get(f"{url}api/contents", params={"content": "1"})).raise_for_status()
        rest.append(time.perf_counter() - start)
        await asyncio.sleep(0.02)
    return {"keystroke": ms(keys), "rest": ms(rest)}


def _for(seconds: float) -> Any:
    end = time.monotonic() + seconds
    return lambda: time.monotonic() >= end


async def person(bench: Bench, *, flood: bool = True) -> None:
    """Keystroke and REST latency idle, under four flat-out agents, and (``flood``) during a 100 MB
    print."""
    server, quick = bench.server, bench.s.quick
    bench.log("what the person feels")
    write_notebook(server.root, "person.ipynb", 3)
    write_notebook(server.root, "person-flood.ipynb", 1)
    paths = [write_notebook(server.root, f"agent-{i}.ipynb", 20).name for i in range(AGENTS)]
    seconds = 4.0 if quick else 15.0
    url = server.url
    async with (
        YPeer(url, server.headers, "person.ipynb") as peer,
        YPeer(url, server.headers, "person.ipynb") as tab,
        httpx.AsyncClient(headers=server.headers, timeout=60) as http,
    ):
        await _sample(peer, tab, http, url, _for(1.0))  # warm-up
        idle = await _sample(peer, tab, http, url, _for(seconds))
        # One agents' run, its seconds taken in turns with the gate at the server's setting and off
        # (the server as it was): the machine's drift falls on both alike.
        setting = (await http.get(f"{url}bench/gate")).json()
        modes, agents = await _agents(bench, peer, tab, http, paths, seconds, setting)
        printing: dict[str, list[float]] = {}
        async with mcp_client(server) as client:
            # The agent's cell prints 100 MB into its notebook (5 MB of it kept there).
            code = "for _ in range(100):\n    print('x' * (1024 * 1024 - 1))"
            if flood:
                printed = asyncio.create_task(
                    call(client, "insert_and_execute", path="person-flood.ipynb", source=code, timeout=300)
                )
                printing = await _sample(peer, tab, http, url, printed.done)
                await printed
    for what, label, target in (("keystroke", "keystroke", 1.5), ("rest", "REST", 2.0)):
        _ratio_row(bench, f"person's {label} p95, 4 agents flat out", idle[what], modes["on"][what], target)
        _ratio_row(bench, f"person's {label} p95, 4 agents, gate off", idle[what], modes["off"][what], None)
        _ratio_row(
            bench,
            f"person's {label} p95, 4 agents, gate at half the share",
            idle[what],
            modes["half"][what],
            None,
        )
    if printing:
        _ratio_row(
            bench,
            "person's keystroke p95, during a 100 MB print",
            idle["keystroke"],
            printing["keystroke"],
            1.5,
        )
        _ratio_row(bench, "person's REST p95, during a 100 MB print", idle["rest"], printing["rest"], None)
    for name, mode in modes.items():  # every kind of turn, the ones tried included
        bench.log(
            f"  turns {name}: {mode['stats']['calls_per_s']:.1f} calls/s, keystroke p95 "
            f"{pct(mode['keystroke'], 0.95) if mode['keystroke'] else 0:.1f} ms "
            f"(idle {pct(idle['keystroke'], 0.95):.1f}), REST p95 "
            f"{pct(mode['rest'], 0.95) if mode['rest'] else 0:.1f} ms (idle {pct(idle['rest'], 0.95):.1f}), "
            f"{mode['stats']}"
        )
    on, off, half = modes["on"]["stats"], modes["off"]["stats"], modes["half"]["stats"]
    alone = modes["nobody"]["stats"]
    _issue21_rows(bench, idle["keystroke"], modes["on"]["keystroke"], on, alone)
    bench.add(
        Row(
            "4 agents flat out under the gate: throughput",
            "calls/s",
            # A server without the gate counts no calls: then the agents' own count over their run.
            on["calls_per_s"] or sum(agents["calls"]) / agents["wall_s"],
            None,
            sum(agents["calls"]),
            1.0,
            "-",
            "min",
            300,
            ">= 300 calls/s",
            {
                "errors": agents["errors"],
                "per_session": agents["calls"],
                "client_cpu_ms_per_call": agents["client_cpu_s"] * 1000 / max(1, sum(agents["calls"])),
                **on,
                **{f"gate_off_{k}": v for k, v in off.items()},
                **{f"gate_half_{k}": v for k, v in half.items()},
                **{f"nobody_{k}": v for k, v in alone.items()},
            },
        )
    )


async def _agents(
    bench: Bench,
    peer: Any,
    tab: Any,
    http: httpx.AsyncClient,
    paths: list[str],
    seconds: float,
    setting: dict[str, Any],
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The person's latencies while four agents call flat out from their own process, in one-second
    turns with the gate at ``share`` ("on"), with nobody there, off, at half the share, and with the
    settings of ``BENCH_GATE_MODES``; per kind of turn, the gate's and the server's figures."""
    # "nobody": the gate takes nobody to be here and the person is still (the agents alone);
    # "off": neither share nor slices; "half": what a lower setting would give.
    share, free_step = setting["share"], setting.get("free_step", 0.0)
    time_slice = setting.get("time_slice", 0.0)
    shares = {"on": share, "nobody": share, "off": 1.0, "half": share / 2}
    # More gate settings to try beside these, with the person typing (issue 21): BENCH_GATE_MODES,
    # JSON {"name": {"share": x, "free_step": seconds, "nobody": bool, "ystore_batching": bool}, ...}.
    tries: dict[str, dict[str, Any]] = json.loads(os.environ.get("BENCH_GATE_MODES", "{}"))
    shares.update({name: float(t.get("share", share)) for name, t in tries.items()})
    url = bench.server.url
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks.agents",
        url,
        bench.server.token,
        *paths,
        "--seconds",
        str(len(shares) * seconds + 3),  # the turns and the last one's overrun
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))},
    )
    assert proc.stdout is not None
    await proc.stdout.readline()  # ready
    await asyncio.sleep(0.5)
    modes: dict[str, dict[str, Any]] = {
        m: {"keystroke": [], "rest": [], "raw": dict.fromkeys(_RAW, 0.0)} for m in shares
    }
    end = time.monotonic() + len(shares) * seconds
    turn = 0
    with bench.phase("person under four agents", 1):  # --profile: a py-spy record of these turns
        while time.monotonic() < end:
            mode = list(shares)[turn % len(shares)]
            turn += 1
            nobody = mode == "nobody" or bool(tries.get(mode, {}).get("nobody"))
            (
                await http.put(
                    f"{url}bench/gate",
                    json={
                        "free_step": free_step,
                        "time_slice": 0.0 if mode == "off" else time_slice,
                        "ystore_batching": True,
                        **tries.get(mode, {}),
                        "share": shares[mode],
                        "nobody": nobody,
                    },
                )
            ).raise_for_status()
            before, cpu, start = (
                (await http.get(f"{url}bench/gate")).json(),
                bench.server_cpu(),
                time.monotonic(),
            )
            if nobody:
                await asyncio.sleep(1.0)
                got = {"keystroke": [], "rest": []}
            else:
                got = await _sample(peer, tab, http, url, _for(1.0))
            after, wall = (await http.get(f"{url}bench/gate")).json(), time.monotonic() - start
            raw = modes[mode]["raw"]
            for key in ("spent_s", "admitted", "waited", "sliced", "thread_cpu_s"):
                raw[key] += after.get(key, 0) - before.get(key, 0)
            raw["wall_s"] += wall
            raw["server_cpu_s"] += bench.server_cpu() - cpu
            modes[mode]["keystroke"] += got["keystroke"]
            modes[mode]["rest"] += got["rest"]
    (
        await http.put(
            f"{url}bench/gate",
            json={"share": share, "nobody": False, "free_step": free_step, "time_slice": time_slice},
        )
    ).raise_for_status()
    out, _ = await proc.communicate()
    agents = json.loads(out.decode().strip().splitlines()[-1])
    for name, mode in modes.items():
        raw = mode.pop("raw")
        calls = max(1.0, raw["admitted"])  # the agents' requests (each a call) admitted in these turns
        mode["stats"] = {
            "share": shares[name],
            "calls_per_s": raw["admitted"] / raw["wall_s"],
            "server_cpu_ms_per_call": raw["server_cpu_s"] * 1000 / calls,
            "mcp_share_measured": raw["spent_s"] / raw["wall_s"],
            "loop_thread_share": raw["thread_cpu_s"] / raw["wall_s"],
            "calls_waited": raw["waited"] / calls,
            "slice_waits_per_call": raw["sliced"] / calls,
        }
    return modes, agents


def _issue21_rows(
    bench: Bench, idle: list[float], typing: list[float], on: dict[str, Any], alone: dict[str, Any]
) -> None:
    """Issue 21: agents are not throttled by a person's presence. Four agents' calls/s with a person
    typing (the gate at its setting) against the same agents with nobody there, in the same run's
    interleaved turns; their total; the person's keystroke p95 then against idle."""
    extra = {
        "typing_calls_per_s": on["calls_per_s"],
        "nobody_calls_per_s": alone["calls_per_s"],
        "typing_server_cpu_ms_per_call": on["server_cpu_ms_per_call"],
        "nobody_server_cpu_ms_per_call": alone["server_cpu_ms_per_call"],
        "typing_calls_waited": on["calls_waited"],
    }
    bench.add(
        Row(
            "4 agents' calls/s, a person typing, against nobody there",
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
    bench.add(
        Row(
            "4 agents' calls/s in all, a person typing",
            "calls/s",
            on["calls_per_s"],
            None,
            1,
            0.0,
            "-",
            "min",
            250,
            ">= 250 calls/s",
            extra,
        )
    )
    _ratio_row(bench, "person's keystroke p95, typing among 4 agents (issue 21)", idle, typing, 2.0)


_RAW = ("spent_s", "admitted", "waited", "sliced", "thread_cpu_s", "wall_s", "server_cpu_s")


def _ratio_row(bench: Bench, name: str, idle: list[float], busy: list[float], target: float | None) -> None:
    """``busy`` p95 against ``idle`` p95 (both in ms, from the same run); p50s in extra."""
    bench.raw[name] = busy
    p95_idle, p95_busy = pct(idle, 0.95), pct(busy, 0.95)
    bench.add(
        Row(
            name,
            "ms",
            p95_busy,
            None,
            len(busy),
            p95_idle,
            "idle p95",
            "ratio" if target is not None else "info",
            target or 0,
            f"<= {target}x idle" if target is not None else "-",
            {
                "p50_ms": statistics.median(busy),
                "idle_p50_ms": statistics.median(idle),
                "p50_vs_idle": statistics.median(busy) / statistics.median(idle),
            },
        )
    )


async def server_cpu(bench: Bench) -> None:
    """Server CPU per call of ping, read_cells and insert_cells, against an APIHandler's floor."""
    server = bench.server
    bench.log("server CPU per call")
    n = 200 if bench.s.quick else 1000  # psutil counts CPU in 10 ms ticks: enough calls to resolve 0.1 ms
    path = write_notebook(server.root, "cpu.ipynb", 20)
    target = cell_ids(path)[10]
    url = f"{server.url}mcp"
    headers = {
        **server.headers,
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        opened = await http.post(url, json=raw_initialize(VERSION))
        session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": VERSION}
        await http.post(url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})

        def tool(name: str, **arguments: Any) -> dict[str, Any]:
            return {"method": "tools/call", "params": {"name": name, "arguments": arguments}}

        requests = {
            "ping": {"method": "ping"},
            "read_cells": tool("read_cells", path=path.name, cell_ids=[target]),
            "insert_cells": tool("insert_cells", path=path.name, cells=[{"source": "y = 1"}], after=target),
        }
        for name, request in requests.items():
            body = json.dumps({"jsonrpc": "2.0", "id": 1, **request}).encode()

            async def mcp(body: bytes = body) -> bytes:
                answer = await http.post(url, headers=session, content=body)
                answer.raise_for_status()
                return answer.content

            answer = b""
            for _ in range(5):
                answer = await mcp()
            await http.put(f"{server.url}bench/floor", content=answer)

            async def floor(body: bytes = body) -> bytes:
                got = await http.post(f"{server.url}bench/floor", content=body)
                got.raise_for_status()
                return got.content

            for _ in range(5):
                await floor()
            figures = {}
            for label, op in (("floor", floor), ("mcp", mcp)):
                gate = (await http.get(f"{server.url}bench/gate")).json()
                cpu, client, start = bench.server_cpu(), time.process_time(), time.perf_counter()
                for _ in range(n):
                    await op()
                figures[label] = (
                    (bench.server_cpu() - cpu) * 1000 / n,
                    (time.process_time() - client) * 1000 / n,
                    (time.perf_counter() - start) * 1000 / n,
                )
            metered = (
                ((await http.get(f"{server.url}bench/gate")).json()["spent_s"] - gate["spent_s"]) * 1000 / n
            )
            target_ratio = {"ping": 1.5, "read_cells": 2.5}.get(name)
            bench.add(
                Row(
                    f"server CPU per {name}",
                    "ms",
                    figures["mcp"][0],
                    None,
                    n,
                    figures["floor"][0],
                    "APIHandler, same bytes",
                    "ratio" if target_ratio else "info",
                    target_ratio or 0,
                    f"<= {target_ratio}x floor" if target_ratio else "-",
                    {
                        "answer_bytes": len(answer),
                        "json_body": answer.lstrip().startswith(b"{"),
                        "wall_ms_per_call": figures["mcp"][2],
                        "floor_wall_ms_per_call": figures["floor"][2],
                        "client_cpu_ms_per_call": figures["mcp"][1],
                        "floor_client_cpu_ms_per_call": figures["floor"][1],
                        "gate_metered_ms_per_call": metered,
                    },
                )
            )
