"""A/B of the server's CPU per call: a baseline commit beside today's code, in one run (issue 21).

``python -m benchmarks.ab [--against COMMIT] [--rounds 20] [--block 20] [--ops ping,read,insert,update]``

Two servers (the commit's ``jupyter_mcp_ext``, ``baseline.py``, and this checkout's), a small notebook
on each, called from a raw HTTP client in blocks of ``--block`` calls, the blocks of every server and
call taken in a shuffled order each round, so the machine's drift falls on both alike. Per block: the
server's main-thread CPU time (``/proc/<pid>/task/<pid>/schedstat``, nanoseconds: psutil's CPU times
count in 10 ms ticks, 0.5 ms a call over a block of 20) and all its threads', and the wall p50. It
prints each server's median over the blocks with the interquartile range, and the median of the rounds'
paired differences (today minus the baseline) with theirs. ``insert`` is an insert and its delete.
Linux only.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import psutil

from tests.support.server import JupyterServer, bench_server

from .baseline import baseline_server
from .client import cell_ids, write_notebook
from .scaling import Notebook, Session

GATE_WARMUP = 31.0  # seconds: the start-up poll of /api/status counts as a person for 30 s (the gate)


def _ran(path: Path) -> float:
    """Seconds a thread has run, from its schedstat."""
    try:
        return int(path.read_text().split()[0]) / 1e9
    except OSError:  # a thread that has just ended
        return 0.0


def main_thread(pid: int) -> float:
    return _ran(Path(f"/proc/{pid}/task/{pid}/schedstat"))


def all_threads(pid: int) -> float:
    return sum(_ran(task / "schedstat") for task in Path(f"/proc/{pid}/task").iterdir())


Sample = tuple[float, float, float]  # main-thread CPU ms/call, all threads' CPU ms/call, wall p50 ms


async def measure(
    servers: dict[str, JupyterServer], ops: list[str], rounds: int, block: int, cells: int
) -> dict[tuple[str, str], list[Sample]]:
    calls: dict[str, tuple[int, dict[str, Callable[[], Awaitable[None]]]]] = {}
    sessions = []
    for label, server in servers.items():
        headers = {**server.headers, "Accept": "application/json, text/event-stream"}
        session = Session(server, httpx.AsyncClient(headers=headers, timeout=60))
        await session.open()
        sessions.append(session)
        path = write_notebook(server.root, "ab.ipynb", cells)
        nb = Notebook(session, path.name, cell_ids(path))

        async def pair(nb: Notebook = nb) -> None:
            await nb.insert()
            await nb.delete()

        calls[label] = (
            server.pid,
            {"ping": nb.ping, "read": nb.read, "insert": pair, "update": nb.update, "move": nb.move},
        )
    for _pid, by_op in calls.values():  # rooms open, caches filled
        for op in ops:
            for _ in range(20):
                await by_op[op]()
    await asyncio.sleep(GATE_WARMUP)
    found: dict[tuple[str, str], list[Sample]] = {}
    order = random.Random(3)
    for _ in range(rounds):
        for label, op in order.sample([(lab, op) for lab in calls for op in ops], len(calls) * len(ops)):
            pid, by_op = calls[label]
            main0, all0, times = main_thread(pid), all_threads(pid), []
            for _ in range(block):
                start = time.perf_counter()
                await by_op[op]()
                times.append(time.perf_counter() - start)
            main1, all1 = main_thread(pid), all_threads(pid)
            sample = (
                1000 * (main1 - main0) / block,
                1000 * (all1 - all0) / block,
                1000 * statistics.median(times),
            )
            found.setdefault((label, op), []).append(sample)
    for session in sessions:
        await session.http.aclose()
    return found


def _iqr(values: list[float]) -> str:
    q = statistics.quantiles(values, n=4)
    return f"{q[0]:.2f}-{q[2]:.2f}"


def table(found: dict[tuple[str, str], list[Sample]], ops: list[str], base: str) -> str:
    lines = [
        f"| call | main CPU {base} (IQR) | main CPU now (IQR) | now - {base}, paired (IQR) | all threads {base} | all threads now | p50 {base} | p50 now |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for op in ops:
        b, n = found[("base", op)], found[("now", op)]
        diffs = [y[0] - x[0] for x, y in zip(b, n, strict=True)]
        med = [statistics.median(s[k] for s in rows) for rows in (b, n) for k in range(3)]
        lines.append(
            f"| {op} | {med[0]:.3f} ({_iqr([s[0] for s in b])}) | {med[3]:.3f} ({_iqr([s[0] for s in n])}) | "
            f"{statistics.median(diffs):+.3f} ({_iqr(diffs)}) | {med[1]:.2f} | {med[4]:.2f} | {med[2]:.2f} | {med[5]:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__)
    parser.add_argument(
        "--against", default="HEAD", help="the baseline commit (default HEAD: uncommitted changes)"
    )
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--block", type=int, default=20, help="calls per block")
    parser.add_argument("--ops", default="ping,read,insert,update", help="of ping,read,insert,update,move")
    parser.add_argument("--cells", type=int, default=20, help="cells in each server's notebook")
    args = parser.parse_args(argv)
    ops = [o for o in args.ops.split(",") if o]
    servers = {"base": baseline_server(args.against), "now": bench_server()}
    try:
        for server in servers.values():
            server.start()
        found = asyncio.run(measure(servers, ops, args.rounds, args.block, args.cells))
    finally:
        for server in servers.values():
            server.stop()
    print(
        f"{args.rounds} rounds of {args.block} calls, {args.cells}-cell notebook, load "
        f"{psutil.getloadavg()[0]:.1f}; ms per call, medians over blocks (insert: an insert and its delete)\n"
    )
    print(table(found, ops, args.against))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
