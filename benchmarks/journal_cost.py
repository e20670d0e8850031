"""``python -m benchmarks.journal_cost``: what keeping the journal in a file adds to an edit's server time.

Two servers of this checkout side by side, one with the journal file (the default, SQLite written in
batches by a thread) and one with ``journal_file = None`` (memory only); the same ``update_cell``
calls from a raw HTTP client go to each in shuffled blocks (``scaling.measure``), so the machine's
drift falls on both alike. Server CPU per call is the server process's CPU time (every thread, the
journal's writer too) over the block. Issue 20's bound: the file adds at most 10%.
"""

from __future__ import annotations

import argparse
import asyncio

import httpx

from tests.support.server import JupyterServer

from .client import cell_ids, write_notebook
from .scaling import Notebook, Session, measure

SIZES = (20, 500)


async def run(servers: dict[str, JupyterServer], rounds: int) -> dict[tuple[str, int], tuple[float, float]]:
    sessions: dict[str, Session] = {}
    notebooks: dict[tuple[str, int], Notebook] = {}
    for label, server in servers.items():
        headers = {**server.headers, "Accept": "application/json, text/event-stream"}
        sessions[label] = Session(server, httpx.AsyncClient(headers=headers, timeout=60))
        await sessions[label].open()
        for n in SIZES:
            path = write_notebook(server.root, f"cells-{n}.ipynb", n)
            notebooks[(label, n)] = Notebook(sessions[label], path.name, cell_ids(path))
    try:
        await measure(sessions, notebooks, 1, 5, ("update",))  # warm-up: rooms open
        times, cpu = await measure(sessions, notebooks, rounds, 20, ("update",))
    finally:
        for s in sessions.values():
            await s.http.aclose()
    out = {}
    for (label, n, _), samples in times.items():
        ordered = sorted(samples)
        out[(label, n)] = (ordered[len(ordered) // 2] * 1000, cpu[(label, n, "update")] * 1000 / len(samples))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="blocks of 20 calls per server and size")
    rounds = parser.parse_args().rounds
    servers = {
        "file": JupyterServer(prefix="jupyter-mcp-journal-file-"),
        "memory": JupyterServer(
            {"MCPExtensionApp": {"journal_file": None}}, prefix="jupyter-mcp-journal-mem-"
        ),
    }
    try:
        for server in servers.values():
            server.start()
        figures = asyncio.run(run(servers, rounds))
        kept = list((servers["file"].tmp / "data" / "jupyter_mcp_ext").glob("journal-*.sqlite"))
    finally:
        for server in servers.values():
            server.stop()
    assert kept, "the file server kept no journal file: the comparison would be of two memory journals"
    print(f"update_cell, {rounds} rounds of 20 calls per server and notebook; ms per call")
    for n in SIZES:
        (file_p50, file_cpu), (mem_p50, mem_cpu) = figures[("file", n)], figures[("memory", n)]
        print(
            f"  {n:>4} cells: server CPU {file_cpu:.2f} with the file, {mem_cpu:.2f} without "
            f"({file_cpu / mem_cpu - 1:+.1%}); p50 {file_p50:.2f} vs {mem_p50:.2f} ({file_p50 / mem_p50 - 1:+.1%})"
        )


if __name__ == "__main__":
    main()
