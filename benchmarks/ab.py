"""A/B of what the person and agents get: a baseline commit beside today's code, in one run (issues
21 and 36: nothing else slower, each figure within 5% of the baseline's).

``python -m benchmarks.ab [--against COMMIT] [--groups calls,keystroke,print] [--rounds 20] [--block 20]
[--ops ping,read,insert,update] [--turn 3] [--agents 2] [--print-rounds 3]``

Each group runs on a pair of servers (the commit's ``jupyter_mcp_ext``, ``baseline.py``, and this
checkout's), and every group's blocks, on both servers, are taken in one shuffled order each round,
so the machine's drift falls on both alike. All servers start at once, and the blocks begin once the
gate's start-up window is over (``GATE_WARMUP``).

- ``calls``: a small notebook called from a raw HTTP client in blocks of ``--block`` calls. Per
  block: the server's main-thread CPU time (``/proc/<pid>/task/<pid>/schedstat``, nanoseconds:
  psutil's CPU times count in 10 ms ticks, 0.5 ms a call over a block of 20) and all its threads',
  and the wall p50. ``insert`` is an insert and its delete.
- ``keystroke``: a person's keystroke echo with no agent, and with ``--agents`` agents working flat
  out on the same server in turns of ``--turn`` seconds (``ab_person.py``).
- ``print``: the server's RSS growth while a cell prints 100 MB, ``--print-rounds`` fresh servers a
  side (``ab_person.py``).

It prints the calls' table (each server's median over the blocks with the interquartile range, and
the median of the rounds' paired differences, today minus the baseline), then one row per figure:
the baseline's, today's, their ratio and whether it is within the 5%. Linux only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from tests.support.server import JupyterServer, bench_server

from .ab_person import Compared, Person, Printer, keystroke_rows, print_rows
from .baseline import baseline_server
from .client import cell_ids, write_notebook
from .report import spread
from .scaling import Notebook, Session

GATE_WARMUP = 31.0  # seconds: the start-up poll of /api/status counts as a person for 30 s (the gate)
GROUPS = ("calls", "keystroke", "print")
TARGET = 1.05  # issue 36: within 5% of the baseline


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


Block = Callable[[], Awaitable[None]]


async def _calls(
    servers: dict[str, JupyterServer],
    ops: list[str],
    block: int,
    cells: int,
    stack: contextlib.AsyncExitStack,
    found: dict[tuple[str, str], list[Sample]],
) -> dict[str, Block]:
    """The calls' blocks, one per server and call, each adding a sample to ``found``; rooms opened and
    caches filled first."""
    blocks: dict[str, Block] = {}
    for label, server in servers.items():
        headers = {**server.headers, "Accept": "application/json, text/event-stream"}
        session = Session(
            server, await stack.enter_async_context(httpx.AsyncClient(headers=headers, timeout=60))
        )
        await session.open()
        path = write_notebook(server.root, "ab.ipynb", cells)
        nb = Notebook(session, path.name, cell_ids(path))

        async def pair(nb: Notebook = nb) -> None:
            await nb.insert()
            await nb.delete()

        by_op = {"ping": nb.ping, "read": nb.read, "insert": pair, "update": nb.update, "move": nb.move}
        for op in ops:
            for _ in range(20):
                await by_op[op]()

            async def run(
                pid: int = server.pid, call: Block = by_op[op], key: tuple[str, str] = (label, op)
            ) -> None:
                main0, all0, times = main_thread(pid), all_threads(pid), []
                for _ in range(block):
                    start = time.perf_counter()
                    await call()
                    times.append(time.perf_counter() - start)
                main1, all1 = main_thread(pid), all_threads(pid)
                found.setdefault(key, []).append(
                    (
                        1000 * (main1 - main0) / block,
                        1000 * (all1 - all0) / block,
                        1000 * statistics.median(times),
                    )
                )

            blocks[f"{op} on {label}"] = run
    return blocks


@dataclass
class Found:
    """What one run measured, per group (empty for a group not run)."""

    calls: dict[tuple[str, str], list[Sample]] = field(default_factory=dict)
    quiet: dict[str, Person] = field(default_factory=dict)  # the person alone, no agent ever connected
    busy: dict[str, Person] = field(default_factory=dict)  # the person beside agents
    printers: dict[str, list[Printer]] = field(default_factory=dict)


async def measure(pairs: Pairs, args: argparse.Namespace, ops: list[str], started: float) -> Found:
    """Every group's blocks, taken in one shuffled order each round, after the gate's start-up window."""
    found = Found()
    async with contextlib.AsyncExitStack() as stack:
        blocks: dict[str, Block] = {}
        if "calls" in pairs.groups:
            blocks.update(await _calls(pairs.calls, ops, args.block, args.cells, stack, found.calls))
        for label, server in pairs.quiet.items():
            person = found.quiet[label] = Person(server, 0, args.turn)
            await person.open(stack)
            blocks[f"keystrokes on {label}"] = person.idle_block
        for label, server in pairs.busy.items():
            person = found.busy[label] = Person(server, args.agents, args.turn)
            await person.open(stack)
            blocks[f"agents' turn on {label}"] = person.agents_turn
        for label, servers in pairs.prints.items():
            found.printers[label] = [Printer(server) for server in servers]
            for printer in found.printers[label]:
                await printer.open(stack)
        # Once per print server, spread over the rounds; the baseline's and today's in the same round.
        prints = {
            round_ * args.rounds // max(1, args.print_rounds): {
                f"print {round_} on {label}": printers[round_].block
                for label, printers in found.printers.items()
            }
            for round_ in range(args.print_rounds if found.printers else 0)
        }
        await asyncio.sleep(max(0.0, started + GATE_WARMUP - time.monotonic()))
        order = random.Random(3)
        for round_ in range(args.rounds):
            now = {**blocks, **prints.get(round_, {})}
            for name in order.sample(sorted(now), len(now)):
                await now[name]()
    return found


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
            f"| {op} | {med[0]:.3f} ({spread([s[0] for s in b])}) | {med[3]:.3f} ({spread([s[0] for s in n])}) | "
            f"{statistics.median(diffs):+.3f} ({spread(diffs)}) | {med[1]:.2f} | {med[4]:.2f} | {med[2]:.2f} | {med[5]:.2f} |"
        )
    return "\n".join(lines)


def calls_rows(found: dict[tuple[str, str], list[Sample]], ops: list[str]) -> list[Compared]:
    """Each call's main-thread CPU per call, the figure the calls' target is set on."""
    rows = []
    for op in ops:
        b, n = ([s[0] for s in found[(side, op)]] for side in ("base", "now"))
        rows.append(
            Compared(
                f"{op}: server CPU per call",
                "ms",
                statistics.median(b),
                statistics.median(n),
                spread(b),
                spread(n),
            )
        )
    return rows


def summary(rows: list[Compared], base: str) -> str:
    """One row per figure: the baseline's and today's (each with its spread), the ratio, the target."""
    lines = [
        f"| figure | {base} (spread) | now (spread) | now / {base} | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        target, met = (
            ("-", "-")
            if row.target is None
            else (f"<= {row.target:.2f}x", "yes" if row.ratio <= row.target else "no")
        )
        lines.append(
            f"| {row.name} | {row.before:.2f} {row.unit} ({row.before_spread}) | {row.now:.2f} {row.unit} "
            f"({row.now_spread}) | {row.ratio:.3f} | {target} | {met} |"
        )
    return "\n".join(lines)


@dataclass
class Pairs:
    """The servers of each group, by side (``base``, ``now``); a group not run has none."""

    groups: list[str]
    calls: dict[str, JupyterServer] = field(default_factory=dict)
    quiet: dict[str, JupyterServer] = field(default_factory=dict)  # the keystroke, no agent
    busy: dict[str, JupyterServer] = field(default_factory=dict)  # the keystroke, agents at work
    prints: dict[str, list[JupyterServer]] = field(default_factory=dict)

    @classmethod
    def make(cls, groups: list[str], against: str, print_rounds: int) -> Pairs:
        def pair() -> dict[str, JupyterServer]:
            return {"base": baseline_server(against), "now": bench_server()}

        pairs = cls(groups)
        if "calls" in groups:
            pairs.calls = pair()
        if "keystroke" in groups:
            pairs.quiet, pairs.busy = pair(), pair()
        if "print" in groups:
            made = [pair() for _ in range(print_rounds)]
            pairs.prints = {side: [p[side] for p in made] for side in ("base", "now")}
        return pairs

    def all(self) -> list[JupyterServer]:
        found = [*self.calls.values(), *self.quiet.values(), *self.busy.values()]
        return found + [server for servers in self.prints.values() for server in servers]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ab",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--against", default="HEAD", help="the baseline commit (default HEAD: uncommitted changes)"
    )
    parser.add_argument("--groups", default=",".join(GROUPS), help=f"of {','.join(GROUPS)}")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--block", type=int, default=20, help="calls per block")
    parser.add_argument("--ops", default="ping,read,insert,update", help="of ping,read,insert,update,move")
    parser.add_argument("--cells", type=int, default=20, help="cells in each server's notebook")
    parser.add_argument("--agents", type=int, default=2, help="agents working beside the person")
    parser.add_argument(
        "--turn", type=float, default=3.0, help="seconds of the person typing per agents' turn"
    )
    parser.add_argument(
        "--print-rounds", type=int, default=3, help="100 MB prints a side, each on a fresh server"
    )
    args = parser.parse_args(argv)
    ops = [o for o in args.ops.split(",") if o]
    groups = [g for g in args.groups.split(",") if g]
    if unknown := set(groups) - set(GROUPS):
        parser.error(f"unknown groups: {', '.join(sorted(unknown))}")
    args.print_rounds = min(args.print_rounds, args.rounds)
    pairs = Pairs.make(groups, args.against, args.print_rounds)
    load = [psutil.getloadavg()[0]]
    try:
        # At once: a server's start is mostly imports. The gate's window runs from the last poll of
        # each one's start (its first answer), so from when they have all started.
        with ThreadPoolExecutor(len(pairs.all())) as pool:
            list(pool.map(JupyterServer.start, pairs.all()))
        started = time.monotonic()
        found = asyncio.run(measure(pairs, args, ops, started))
        load.append(psutil.getloadavg()[0])
    finally:
        for server in pairs.all():
            server.stop()
    print(
        f"{args.rounds} rounds, load {load[0]:.1f} at the start, {load[-1]:.1f} at the end (1-minute average)"
    )
    rows: list[Compared] = []
    if found.calls:
        print(
            f"\ncalls: blocks of {args.block}, {args.cells}-cell notebook; ms per call, medians over blocks "
            "(insert: an insert and its delete)\n"
        )
        print(table(found.calls, ops, args.against))
        rows += calls_rows(found.calls, ops)
    if found.quiet:
        rows += keystroke_rows(found.quiet, found.busy)
    if found.printers:
        rows += print_rows(found.printers)
    print(
        f"\nnow against {args.against}; spread: the interquartile range over blocks (keystroke: of the "
        "blocks' own p50 or p95), or the samples when under four\n"
    )
    print(summary(rows, args.against))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
