"""Edits beside the baseline, and on a big notebook beside a small one (issue 21), in one run.

``python -m benchmarks.scaling [--quick] [--profile DIR] [--json FILE] [--no-baseline] [--server-per-size]``

Two servers run side by side: today's code and the baseline commit's (``baseline.py``). On each,
a 50-cell and a 2,000-cell notebook get ``ping``, ``read_cells``, ``insert_cells``, ``delete_cells``,
``update_cell`` and ``move_cell`` calls from a raw HTTP client (the SDK client's own CPU would
hide the server's), in blocks of ten taken in a shuffled order over both servers and both notebooks,
so that the machine's drift falls on all alike. Each block's server CPU is read from that server's
process. The table gives p50 wall time and server CPU per call, today over the baseline (target
<= 1.05x) and the 2,000-cell notebook over the 50-cell one (target <= 1.2x).

A server saves a notebook while other blocks run (a second after a burst of edits, or at the save
deadline), and that CPU goes to whichever block of that server runs then: with both notebooks on one
server, the 2,000-cell notebook's saves land on the 50-cell one's blocks too. ``--server-per-size``
gives each notebook a server of its own, so that each server's CPU per call carries its own
notebook's saves (spread over every call on it, reads included).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import psutil

from tests.support.server import JupyterServer, bench_server

from .baseline import BASELINE, baseline_server
from .bench import cpu_seconds, spy
from .client import cell_ids, raw_initialize, write_notebook
from .report import pct

VERSION = "2025-11-25"
SIZES = (50, 2000)
OPS = ("ping", "read", "insert", "delete", "update", "move")


class Session:
    """One MCP session over plain HTTP on one server."""

    def __init__(self, server: JupyterServer, http: httpx.AsyncClient):
        self.server, self.http = server, http
        self.url = f"{server.url}mcp"
        self.headers: dict[str, str] = {}
        self.proc = psutil.Process(server.pid)

    def cpu(self) -> float:
        return cpu_seconds(self.proc)

    async def open(self) -> None:
        opened = await self.http.post(self.url, json=raw_initialize(VERSION))
        self.headers = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": VERSION}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self.http.post(self.url, headers=self.headers, json=note)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}
        answer = await self.http.post(self.url, headers=self.headers, json=body)
        answer.raise_for_status()
        text = answer.text
        if not text.lstrip().startswith("{"):  # an event stream: its last data line is the answer
            text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
        message = json.loads(text)
        result = message.get("result", {})
        if "error" in message or result.get("isError"):
            raise RuntimeError(f"{method} {params}: {message}")
        return result

    async def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = await self.request("tools/call", {"name": name, "arguments": arguments})
        return result.get("structuredContent") or {}


class Notebook:
    """The calls on one notebook of one server, each group leaving the notebook as it was."""

    def __init__(self, session: Session, path: str, ids: list[str]):
        self.s, self.path = session, path
        mid = len(ids) // 2
        self.target, self.neighbour = ids[mid], ids[mid + 1]
        self.flip = self.moved = False
        self.inserted: list[str] = []

    async def ping(self) -> None:
        await self.s.request("ping")

    async def read(self) -> None:
        await self.s.tool("read_cells", path=self.path, cell_ids=[self.target])

    async def insert(self) -> None:
        out = await self.s.tool(
            "insert_cells", path=self.path, cells=[{"source": "y = 1"}], after=self.target
        )
        self.inserted.append(out["cell_ids"][0])

    async def delete(self) -> None:
        await self.s.tool("delete_cells", path=self.path, cell_ids=[self.inserted.pop()])

    async def update(self) -> None:
        old, new = ("marker_", "MARKER_") if not self.flip else ("MARKER_", "marker_")
        self.flip = not self.flip
        await self.s.tool("update_cell", path=self.path, cell_id=self.target, old_string=old, new_string=new)

    async def move(self) -> None:
        where = {"before": self.neighbour} if self.moved else {"after": self.neighbour}
        self.moved = not self.moved
        await self.s.tool("move_cell", path=self.path, cell_id=self.target, **where)


Key = tuple[str, int, str]  # server label, cells, op


async def measure(
    sessions: dict[str, Session],
    notebooks: dict[tuple[str, int], Notebook],
    rounds: int,
    block: int,
    ops: tuple[str, ...],
) -> tuple[dict[Key, list[float]], dict[Key, float]]:
    times: dict[Key, list[float]] = {}
    cpu: dict[Key, float] = {}

    async def run(key: Key, op: Callable[[], Awaitable[None]]) -> None:
        session = notebooks[(key[0], key[1])].s  # the server of that notebook
        before = session.cpu()
        for _ in range(block):
            start = time.perf_counter()
            await op()
            times.setdefault(key, []).append(time.perf_counter() - start)
        cpu[key] = cpu.get(key, 0.0) + session.cpu() - before

    # insert and delete go together (the deletes take the inserted cells away), as do move's pairs.
    groups = [(label, n, group) for (label, n) in notebooks for group in ops if group != "delete"]
    order = random.Random(7)
    for _ in range(rounds):
        for label, n, group in order.sample(groups, len(groups)):
            nb = notebooks[(label, n)]
            await run((label, n, group), getattr(nb, group))
            if group == "insert" and "delete" in ops:
                await run((label, n, "delete"), nb.delete)
            elif group == "insert":
                while nb.inserted:
                    await nb.delete()
    return times, cpu


def table(
    times: dict[Key, list[float]], cpu: dict[Key, float], labels: list[str], ops: tuple[str, ...]
) -> tuple[str, list[dict[str, Any]]]:
    """One line per call and notebook: each server's p50 and CPU per call (ms), today's over each
    baseline's, and each server's 2,000-cell figure over its 50-cell one."""
    rows: list[dict[str, Any]] = []
    for op in ops:
        for n in SIZES:
            row: dict[str, Any] = {"op": op, "cells": n}
            for label in labels:
                samples = times[(label, n, op)]
                row[f"{label}_p50_ms"] = pct(samples, 0.5) * 1000
                row[f"{label}_cpu_ms"] = cpu[(label, n, op)] * 1000 / len(samples)
            rows.append(row)
    bases = [label for label in labels if label != "now"]
    head = ["call", "cells"]
    for label in labels:
        head += [f"p50 {label}", f"CPU {label}"]
    for label in bases:
        head += [f"p50 now/{label}", f"CPU now/{label}"]
    for label in labels:
        head += [f"p50 2000/50 {label}", f"CPU 2000/50 {label}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        small = next(r for r in rows if r["op"] == row["op"] and r["cells"] == SIZES[0])
        cells = [row["op"], str(row["cells"])]
        for label in labels:
            cells += [f"{row[f'{label}_p50_ms']:.2f}", f"{row[f'{label}_cpu_ms']:.2f}"]
        for label in bases:
            row[f"p50_now_over_{label}"] = row["now_p50_ms"] / row[f"{label}_p50_ms"]
            row[f"cpu_now_over_{label}"] = row["now_cpu_ms"] / max(1e-9, row[f"{label}_cpu_ms"])
            cells += [f"{row[f'p50_now_over_{label}']:.2f}x", f"{row[f'cpu_now_over_{label}']:.2f}x"]
        for label in labels:
            if row["cells"] == SIZES[0]:
                cells += ["-", "-"]
                continue
            row[f"p50_size_ratio_{label}"] = row[f"{label}_p50_ms"] / small[f"{label}_p50_ms"]
            row[f"cpu_size_ratio_{label}"] = row[f"{label}_cpu_ms"] / max(1e-9, small[f"{label}_cpu_ms"])
            cells += [f"{row[f'p50_size_ratio_{label}']:.2f}x", f"{row[f'cpu_size_ratio_{label}']:.2f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines), rows


async def run(
    servers: dict[str, dict[int, JupyterServer]],
    rounds: int,
    block: int,
    ops: tuple[str, ...],
    profile: Path | None,
) -> tuple[dict[Key, list[float]], dict[Key, float]]:
    """``servers``: each label's server for each notebook size (one server for both, or one each)."""
    if True:
        sessions: dict[str, Session] = {}  # by label, or label-size with a server per size
        notebooks: dict[tuple[str, int], Notebook] = {}
        for label, by_size in servers.items():
            opened: dict[int, Session] = {}  # id(server) -> its session
            for n in SIZES:
                server = by_size[n]
                session = opened.get(id(server))
                if session is None:
                    headers = {**server.headers, "Accept": "application/json, text/event-stream"}
                    session = Session(server, httpx.AsyncClient(headers=headers, timeout=60))
                    await session.open()
                    opened[id(server)] = session
                    shared = len({id(s) for s in by_size.values()}) == 1
                    sessions[label if shared else f"{label}-{n}"] = session
                path = write_notebook(server.root, f"cells-{n}.ipynb", n)
                notebooks[(label, n)] = Notebook(session, path.name, cell_ids(path))
        await measure(sessions, notebooks, 1, 3, ops)  # warm-up: rooms open, caches filled
        spies = []
        if profile is not None:
            profile.mkdir(parents=True, exist_ok=True)
            spies = [spy(s.server.pid, profile / f"scaling-{label}.txt") for label, s in sessions.items()]
            time.sleep(0.5)
        try:
            return await measure(sessions, notebooks, rounds, block, ops)
        finally:
            for p in spies:
                p.send_signal(signal.SIGINT)
                p.wait(timeout=30)
            for s in sessions.values():
                await s.http.aclose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scaling", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="few rounds")
    parser.add_argument("--rounds", type=int, help="rounds of blocks of ten (default 10, quick 3)")
    parser.add_argument("--ops", default=",".join(OPS), help=f"comma-separated, of {','.join(OPS)}")
    parser.add_argument("--no-baseline", action="store_true", help=f"today's code only, without {BASELINE}")
    parser.add_argument(
        "--against",
        default=BASELINE,
        help=f"baseline commits, comma-separated (default {BASELINE}; HEAD: an A/B of uncommitted changes)",
    )
    parser.add_argument("--profile", type=Path, help="py-spy raw profiles of each server into this folder")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    parser.add_argument(
        "--server-per-size",
        action="store_true",
        help="a server per notebook, so that each one's CPU carries its own notebook's saves",
    )
    args = parser.parse_args(argv)
    ops = tuple(o for o in args.ops.split(",") if o)
    rounds = args.rounds or (3 if args.quick else 10)
    makers: dict[str, Callable[[], JupyterServer]] = {"now": bench_server}
    if not args.no_baseline:
        for commit in args.against.split(","):
            makers[commit] = lambda commit=commit: baseline_server(commit)
    servers: dict[str, dict[int, JupyterServer]] = {}
    for label, make in makers.items():
        one = None if args.server_per_size else make()
        servers[label] = {n: one or make() for n in SIZES}
    distinct = list({id(s): s for by_size in servers.values() for s in by_size.values()}.values())
    try:
        for server in distinct:
            server.start()
        times, cpu = asyncio.run(run(servers, rounds, 10, ops, args.profile))
    finally:
        for server in distinct:
            server.stop()
    text, rows = table(times, cpu, list(servers), ops)
    load = psutil.getloadavg()[0]
    where = "a server per notebook" if args.server_per_size else "both notebooks on one server"
    print(
        f"{rounds} rounds of 10 calls per cell ({where}); load {load:.1f}; ms, server CPU per call\n\n{text}"
    )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "load": load}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
