"""The benchmark run: scenarios, their floors, the table and the JSON.

Every figure is wall-clock time seen by an MCP client of the official SDK over HTTP (handshake-era
session, so that ``ping`` exists), from just before ``call_tool`` to its result. Each scenario is
warmed up first; its floor is measured in the same run, on the same server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

from tests.support.server import bench_server

from . import concurrency, echo, editing, execution, person
from .bench import Bench, Settings
from .client import mcp_client, write_notebook
from .report import MB, machine, table


async def run_all(bench: Bench, only_person: bool = False, only_agents: bool = False) -> None:
    if only_agents:
        await person.person(bench, flood=False)
        return
    if not only_person:
        await run_issue5(bench)
    await person.server_cpu(bench)
    await person.person(bench)
    bench.log("keystroke echo, with and without the extension")
    for row in await echo.measure(5 if bench.s.quick else 20):
        bench.add(row)


async def run_issue5(bench: Bench) -> None:
    root = bench.server.root
    small = write_notebook(root, "small.ipynb", 20)
    big = write_notebook(root, "big.ipynb", 500, big=True)
    bench.log(f"big.ipynb: {big.stat().st_size / MB:.2f} MB, 500 cells")
    write_notebook(root, "exec.ipynb", 1)
    write_notebook(root, "flood.ipynb", 1)
    for i in range(8):
        write_notebook(root, f"conc-{i}.ipynb", 20)
    write_notebook(root, "solo.ipynb", 20)

    async with mcp_client(bench.server) as client:
        await editing.edits(bench, client, small, big)
        await editing.visibility(bench, client, small)
        await execution.round_trip(bench, client)
        await execution.flood(bench, client)
    await concurrency.sessions(bench)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="few repetitions (CI)")
    parser.add_argument("--json", type=Path, help="also write the table as JSON")
    parser.add_argument(
        "--profile", type=Path, help="record the server with py-spy during each scenario into this folder"
    )
    parser.add_argument(
        "--without-ystore",
        action="store_true",
        help="diagnostic: collaboration's update store keeps nothing, to show its share of an edit",
    )
    parser.add_argument(
        "--ystore-class",
        default="",
        help="collaboration's update store class (YDocExtension.ystore_class) for the server under test",
    )
    parser.add_argument(
        "--only-person", action="store_true", help="only what the person feels and server CPU per call"
    )
    parser.add_argument(
        "--only-agents",
        action="store_true",
        help="only the person's latencies and the agents' calls/s under four agents (no 100 MB print)",
    )
    args = parser.parse_args(argv)
    settings = Settings(quick=args.quick)

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    started = time.monotonic()
    server = bench_server(without_ystore=args.without_ystore, ystore_class=args.ystore_class)
    try:
        server.start()
        log(f"jupyter server pid {server.pid} at {server.url} (root {server.root})")
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
        bench = Bench(server, settings, log, args.profile)
        asyncio.run(run_all(bench, args.only_person, args.only_agents))
    finally:
        server.stop()
    elapsed = time.monotonic() - started
    info = {**machine(), "quick": settings.quick, "elapsed_s": round(elapsed, 1)}
    print(
        f"\n{info['nproc']} CPUs ({info['cpu']}), Python {info['python']}, "
        f"load {info['load_average'][0]:.1f}; {'quick' if settings.quick else 'full'} run in {elapsed:.0f} s\n"
    )
    if args.ystore_class:
        print(f"Collaboration's update store: {args.ystore_class}.\n")
    if args.without_ystore:
        print("Diagnostic run: jupyter-collaboration's update store replaced by one that keeps nothing.\n")
    print(table(bench.rows))
    met = sum(r.met for r in bench.rows if r.kind != "info")
    total = sum(r.kind != "info" for r in bench.rows)
    print(f"\n{met} of {total} targets met.")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"machine": info, "rows": [r.as_json() for r in bench.rows], "samples_ms": bench.raw},
                indent=1,
            )
        )
    return 0
