"""What the person feels while agents work (issue 14), and what a call costs the server.

A person is two Yjs clients in one notebook (a keystroke in one, timed until the other's observer
sees it) and a file browser (``GET /api/contents``), taken in turns. Their latencies are measured
idle, while four agents call flat out from a process of their own (in turns of each kind:
``agent_turns.py``, the machine's floor among them), and while an agent's cell prints 100 MB; the
rows give the ratios to idle in the same run.

Server CPU per call is measured with a raw HTTP client (no SDK client: its own CPU, about 2.8 ms
a call, would hide the server's) for ``ping``, ``read_cells`` and ``insert_cells``, beside a floor:
an authenticated ``APIHandler`` inside the same server answering the same bytes (``floor.py``).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx

from .agent_turns import agent_turns, issue21_rows, issue36_rows
from .bench import Bench
from .client import call, cell_ids, mcp_client, raw_initialize, write_notebook
from .report import Row, pct
from .typist import for_seconds, ratio_row, sample
from .yjs import YPeer

AGENTS = 4
VERSION = "2025-11-25"


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
        await sample(peer, tab, http, url, for_seconds(1.0))  # warm-up
        idle = await sample(peer, tab, http, url, for_seconds(seconds))
        # One agents' run, its seconds taken in turns with the gate at the server's setting and off
        # (the server as it was): the machine's drift falls on both alike.
        setting = (await http.get(f"{url}bench/gate")).json()
        modes, agents = await agent_turns(bench, peer, tab, http, paths, seconds, setting)
        printing: dict[str, list[float]] = {}
        async with mcp_client(server) as client:
            # The agent's cell prints 100 MB into its notebook (5 MB of it kept there).
            code = "for _ in range(100):\n    print('x' * (1024 * 1024 - 1))"
            if flood:
                printed = asyncio.create_task(
                    call(client, "insert_and_execute", path="person-flood.ipynb", source=code, timeout=300)
                )
                printing = await sample(peer, tab, http, url, printed.done)
                await printed
    for what, label, target in (("keystroke", "keystroke", 1.5), ("rest", "REST", 2.0)):
        ratio_row(bench, f"person's {label} p95, 4 agents flat out", idle[what], modes["on"][what], target)
        ratio_row(bench, f"person's {label} p95, 4 agents, gate off", idle[what], modes["off"][what], None)
        ratio_row(
            bench,
            f"person's {label} p95, 4 agents, gate at half the share",
            idle[what],
            modes["half"][what],
            None,
        )
    if printing:
        ratio_row(
            bench,
            "person's keystroke p95, during a 100 MB print",
            idle["keystroke"],
            printing["keystroke"],
            1.5,
        )
        ratio_row(bench, "person's REST p95, during a 100 MB print", idle["rest"], printing["rest"], None)
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
    issue21_rows(bench, idle["keystroke"], modes)
    issue36_rows(bench, modes)
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
