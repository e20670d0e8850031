"""A run at the kernel's pace: ``execute_code`` and ``insert_and_execute`` against jupyter_client's own
``execute_interactive`` on the same kernel, with the server's CPU per run, in one run.

``python -m benchmarks.runs [--rounds 20] [--block 10] [--code 1+1] [--against COMMIT] [--profile DIR]``

One server (and, with ``--against``, a second one running the commit's ``jupyter_mcp_ext``: before and
after in one run), a one-cell notebook on each whose kernel the extension started, and a jupyter_client
client of that kernel. Each round takes a block of ``--block`` calls of every (server, call) in a
shuffled order, so the machine's drift falls on all alike. Per block: the wall time of each call, and
the server's CPU time over the block, all threads and the main thread's (``schedstat``, nanoseconds).
``insert_and_execute``'s cells are deleted after the block, outside its time and CPU. It prints each
call's p50 and p95, the p50 over the floor's (the target), the median of the rounds' own ratios, and
the server's CPU per run (median over the blocks) and this process's (the client's). Beside them, an
MCP ``ping`` on the same session: the transport's own round trip, which every call pays before any
tool runs. Linux only.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
from jupyter_client.asynchronous import AsyncKernelClient
from mcp.client import Client

from tests.support.server import JupyterServer, bench_server

from .ab import GATE_WARMUP, all_threads, main_thread
from .baseline import baseline_server
from .bench import spy
from .client import call, mcp_client, write_notebook
from .execution import kernel_client
from .report import pct, spread

FLOOR = "execute_interactive"
PING = "ping"  # the MCP protocol's own round trip (no tool): what the transport alone costs
TARGETS = {"execute_code": 1.3, "insert_and_execute": 1.5}


@dataclass
class Samples:
    wall: list[float] = field(default_factory=list)  # ms per call
    cpu: list[float] = field(default_factory=list)  # server ms per call, all threads, one per block
    main: list[float] = field(default_factory=list)  # the same, main thread
    client: list[float] = field(default_factory=list)  # this process's CPU ms per call, one per block
    block_p50: list[float] = field(default_factory=list)


class Target:
    """One server under test: its MCP client, the notebook's kernel and the three calls."""

    def __init__(self, server: JupyterServer, client: Client, code: str):
        self.server, self.client, self.code = server, client, code
        self.path = "runs.ipynb"
        self.kc: AsyncKernelClient | None = None
        self.made: list[str] = []

    async def open(self) -> None:
        write_notebook(self.server.root, self.path, 1)
        await call(self.client, "execute_code", path=self.path, code="0")  # the extension starts it
        async with httpx.AsyncClient(headers=self.server.headers) as http:
            sessions = (await http.get(f"{self.server.url}api/sessions")).json()
        kernel = next(s["kernel"]["id"] for s in sessions if s["path"] == self.path)
        self.kc = await kernel_client(self.server, kernel)

    def ops(self) -> dict[str, Callable[[], Awaitable[None]]]:
        return {
            FLOOR: self.direct,
            PING: self.ping,
            "execute_code": self.execute_code,
            "insert_and_execute": self.insert,
        }

    async def ping(self) -> None:
        await self.client.send_ping()

    async def direct(self) -> None:
        reply = await self.kc.execute_interactive(self.code, output_hook=lambda _msg: None, timeout=60)
        assert reply["content"]["status"] == "ok", reply

    async def execute_code(self) -> None:
        out = await call(self.client, "execute_code", path=self.path, code=self.code)
        assert out["status"] == "ok", out

    async def insert(self) -> None:
        out = await call(self.client, "insert_and_execute", path=self.path, source=self.code)
        assert out["status"] == "ok", out
        self.made.append(out["cell_id"])

    async def tidy(self) -> None:
        """Delete the cells a block of ``insert_and_execute`` made (untimed)."""
        if self.made:
            await call(self.client, "delete_cells", path=self.path, cell_ids=self.made)
            self.made = []

    def close(self) -> None:
        if self.kc is not None:
            self.kc.stop_channels()


async def measure(
    servers: dict[str, JupyterServer], code: str, rounds: int, block: int, warmup: int, profile: Path | None
) -> dict[tuple[str, str], Samples]:
    started = time.monotonic()
    found: dict[tuple[str, str], Samples] = {}
    async with AsyncExitStack() as stack:
        targets: dict[str, Target] = {}
        for label, server in servers.items():
            client = await stack.enter_async_context(mcp_client(server))
            target = Target(server, client, code)
            stack.callback(target.close)
            await target.open()
            targets[label] = target
        for target in targets.values():  # rooms open, caches filled
            for op in target.ops().values():
                for _ in range(warmup):
                    await op()
            await target.tidy()
        # The start-up poll of /api/status counts as a person for a while: agents are held back then.
        await asyncio.sleep(max(0.0, GATE_WARMUP - (time.monotonic() - started)))
        spies = [spy(s.pid, profile / f"runs-{label}.txt") for label, s in servers.items()] if profile else []
        if spies:
            await asyncio.sleep(0.5)
        order = random.Random(5)
        keys = [(label, op) for label in targets for op in targets[label].ops()]
        try:
            for _ in range(rounds):
                for label, op in order.sample(keys, len(keys)):
                    target, pid = targets[label], servers[label].pid
                    run = target.ops()[op]
                    main0, all0, times = main_thread(pid), all_threads(pid), []
                    client0 = time.process_time()
                    for _ in range(block):
                        start = time.perf_counter()
                        await run()
                        times.append(1000 * (time.perf_counter() - start))
                    main1, all1 = main_thread(pid), all_threads(pid)
                    client1 = time.process_time()
                    await target.tidy()
                    s = found.setdefault((label, op), Samples())
                    s.wall += times
                    s.cpu.append(1000 * (all1 - all0) / block)
                    s.main.append(1000 * (main1 - main0) / block)
                    s.client.append(1000 * (client1 - client0) / block)
                    s.block_p50.append(statistics.median(times))
        finally:
            for p in spies:
                p.send_signal(2)
                p.wait(timeout=30)
    return found


def table(found: dict[tuple[str, str], Samples], labels: list[str]) -> str:
    lines = [
        "| server | call | p50 | p95 | p50 / floor's | rounds' ratios (IQR) | target | server CPU/run, all threads (IQR) | main thread | client CPU |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for label in labels:
        floor = found[(label, FLOOR)]
        floor50 = pct(floor.wall, 0.5)
        for op in (FLOOR, PING, "execute_code", "insert_and_execute"):
            s = found[(label, op)]
            p50 = pct(s.wall, 0.5)
            cpu = f"{statistics.median(s.cpu):.2f} ms ({spread(s.cpu)})"
            tail = f"{cpu} | {statistics.median(s.main):.2f} ms | {statistics.median(s.client):.2f} ms |"
            ratios = [b / f for b, f in zip(s.block_p50, floor.block_p50, strict=True)]
            head = f"| {label} | {op}"
            if op in TARGETS:
                target = TARGETS[op]
                met = "met" if p50 / floor50 <= target else "**not met**"
                lines.append(
                    f"{head} | {p50:.2f} ms | {pct(s.wall, 0.95):.2f} ms | {p50 / floor50:.2f}x | "
                    f"{statistics.median(ratios):.2f}x ({spread(ratios, 'x')}) | <= {target}x, {met} | {tail}"
                )
                continue
            name = " (floor)" if op == FLOOR else " (MCP, no tool)"
            ratio = f"{p50 / floor50:.2f}x" if op == PING else "-"
            lines.append(
                f"{head}{name} | {p50:.2f} ms | {pct(s.wall, 0.95):.2f} ms | {ratio} | - | - | {tail}"
            )
        ping50 = pct(found[(label, PING)].wall, 0.5)
        notes.append(
            f"{label}: the transport alone (an MCP ping) takes {ping50:.2f} ms, {ping50 / floor50:.2f}x of the "
            f"floor's {floor50:.2f} ms: a call that runs code through it takes at least the floor and a ping, "
            f"{(floor50 + ping50) / floor50:.2f}x."
        )
    return "\n".join(lines) + "\n\n" + "\n".join(notes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.runs", description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--block", type=int, default=10, help="calls per block")
    parser.add_argument("--warmup", type=int, default=10, help="untimed calls of each first")
    parser.add_argument("--code", default="1+1", help="the code each run executes")
    parser.add_argument("--against", help="also a server running this commit's jupyter_mcp_ext")
    parser.add_argument("--profile", type=Path, help="record each server with py-spy into this folder")
    args = parser.parse_args(argv)
    servers = {"now": bench_server()}
    if args.against:
        servers = {args.against: baseline_server(args.against), **servers}
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    try:
        for server in servers.values():
            server.start()
        found = asyncio.run(measure(servers, args.code, args.rounds, args.block, args.warmup, args.profile))
    finally:
        for server in servers.values():
            server.stop()
    print(
        f"{args.rounds} rounds of {args.block} calls of `{args.code}`, load {psutil.getloadavg()[0]:.1f}, "
        f"{psutil.cpu_count()} CPUs; each server's floor is its own kernel's execute_interactive\n"
    )
    print(table(found, list(servers)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
