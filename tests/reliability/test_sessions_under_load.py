"""Sixteen agent sessions making mixed calls against a real server process: every call answers, the
latency percentiles are reported, and the server's memory comes back within 10% of where it was once
the sessions close.

The measured phase lasts ``SOAK_SECONDS`` (default 30; e.g. 600 for a night). 30 s is some two
thousand calls on a 2-core machine (2194 at load 7), each kind some hundred times, all sixteen sessions
open at once throughout and closed at the end: what a minute exercised, at half the wait. A longer run
finds slower leaks; 30 s finds one of some 10 KB a call. The warm-up is not shortened: the server's
memory keeps growing for its first two thousand calls or so (a warm-up of 800 left 9% growth of the
10% allowed).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import nbformat
import pytest
from mcp.client import Client

from benchmarks.server import JupyterServer

from ..mcp_client import connect, ok
from ..server_main import LAUNCHER
from . import figures

SESSIONS = 16
NOTEBOOKS = 4
SECONDS = float(os.environ.get("SOAK_SECONDS", "30"))
# The server keeps some things on purpose, each bounded: the last 200 finished runs (get_execution),
# the journal's last JOURNAL_SIZE edits (review and revert). The warm-up fills them (a tenth of the
# calls run code, three tenths edit), so growth after it is what a leak would show.
WARM_UP_CALLS = 2500
JOURNAL_SIZE = 200
MEMORY_SLACK = 0.10


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


@pytest.fixture
def server() -> Iterator[JupyterServer]:
    # The journal keeps the last journal_size agent edits on purpose (for review and revert): with a
    # bound the warm-up already fills, growth after it is what a leak would show.
    server = JupyterServer({"MCPExtensionApp": {"journal_size": JOURNAL_SIZE}}, launcher=LAUNCHER)
    for i in range(NOTEBOOKS):
        notebook = nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_code_cell(f"x = {j}\nprint(x)") for j in range(20)],
            metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        )
        nbformat.write(notebook, server.root / f"load{i}.ipynb")
    (server.root / "notes.txt").write_text("a line\n" * 200)
    server.start()
    try:
        yield server
    finally:
        server.stop(gracefully=False)


async def mixed_calls(agent: Client, k: int, done: Callable[[], bool], latencies: list[float]) -> None:
    """One agent's loop: mostly reads, some edits, a little code, and files."""
    path = f"load{k % NOTEBOOKS}.ipynb"
    cells = (await ok(agent, "get_notebook", path=path))["cells"]
    own = cells[k // NOTEBOOKS]["id"]
    n = 0
    while not done():
        step = n % 10
        start = time.monotonic()
        if step in (0, 5):
            await ok(agent, "get_notebook", path=path)
        elif step in (1, 6):
            await ok(agent, "read_cells", path=path, cell_ids=[own])
        elif step == 2:
            await ok(agent, "update_cell", path=path, cell_id=own, source=f"x = {k}_{n}\nprint(x)")
        elif step == 3:
            new = (await ok(agent, "insert_cells", path=path, cells=[{"source": f"# scratch {k} {n}"}]))[
                "cell_ids"
            ]
            await ok(agent, "delete_cells", path=path, cell_ids=new)
        elif step == 4:
            await ok(agent, "search_notebook", path=path, pattern="print")
        elif step == 7:
            await ok(agent, "execute_code", path=path, code=f"{k} + {n}")
        elif step == 8:
            await ok(agent, "list_notebooks")
        else:
            await ok(agent, "read_file", path="notes.txt", limit=20)
        latencies.append(time.monotonic() - start)
        n += 1


async def run_sessions(
    server: JupyterServer, seconds: float, latencies: list[float], calls: int | None = None
) -> None:
    """Sixteen sessions calling for ``seconds``, or until ``latencies`` holds ``calls`` calls."""
    until = time.monotonic() + seconds

    def done() -> bool:
        return time.monotonic() >= until or (calls is not None and len(latencies) >= calls)

    async def one(k: int) -> None:
        async with connect(server.url, server.headers) as agent:
            await mixed_calls(agent, k, done, latencies)

    await asyncio.gather(*(one(k) for k in range(SESSIONS)))


@pytest.mark.timeout(360 + SECONDS)
async def test_sixteen_sessions_of_mixed_calls_report_p99_and_give_memory_back(server):
    # Imports, kernels, rooms, and the bounded stores full: what stays anyway.
    await run_sessions(server, 120, [], calls=WARM_UP_CALLS)
    await asyncio.sleep(2)
    before = rss_bytes(server.process.pid)
    latencies: list[float] = []
    await run_sessions(server, SECONDS, latencies)
    during = rss_bytes(server.process.pid)
    after = during
    for _ in range(30):  # sessions closed (DELETE): give the server a moment to drop them
        await asyncio.sleep(0.5)
        after = rss_bytes(server.process.pid)
        if after <= before * (1 + MEMORY_SLACK):
            break
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[int(len(latencies) * 0.99)]
    figures.worst("16-session p99 latency (s)", p99)
    figures.note(
        f"{SESSIONS} sessions x {SECONDS:.0f} s: {len(latencies)} calls ({len(latencies) / SECONDS:.0f}/s), "
        f"p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms; server RSS "
        f"{before / 2**20:.0f} MB before, {during / 2**20:.0f} MB at the end, {after / 2**20:.0f} MB after close"
    )
    assert latencies, "no call completed"
    assert after <= before * (1 + MEMORY_SLACK), (
        f"server memory {after / 2**20:.0f} MB after the sessions closed, {before / 2**20:.0f} MB before"
    )
