"""``python -m benchmarks.idle_cost``: what the extension costs a server that no agent uses.

Starts ``jupyter server`` with the extension and without it (``jpserver_extensions`` turned off in
the throwaway config: collaboration stays on in both), interleaved, several times; for each start,
the time until ``/api/status`` answers and the resident memory a few seconds later. Then, on the
servers with the extension, an agent connects, reads and edits a notebook, and leaves: the memory
after it left, against the idle figure of the same server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

from tests.support.server import JupyterServer

from .client import call, cell_ids, mcp_client, write_notebook

SETTLE = 3.0  # seconds after the server answers before its memory is read (as a person would find it)


def rss_mb(server: JupyterServer) -> float:
    return psutil.Process(server.pid).memory_info().rss / 1e6


def start(kind: str, against: Path | None) -> tuple[JupyterServer, float]:
    """``kind``: "with" (this checkout), "without" (the extension off), "against" (a baseline's package)."""
    config = {"ServerApp": {"jpserver_extensions": {"jupyter_mcp_ext": False}}} if kind == "without" else {}
    server = JupyterServer(config, prefix="jupyter-mcp-idle-")
    if kind == "against" and against is not None:
        server.python_path = [str(against)]
    began = time.perf_counter()
    server.start()
    return server, time.perf_counter() - began


async def agent_visit(server: JupyterServer) -> None:
    """An agent connects, lists, reads and edits a notebook, then leaves."""
    ids = cell_ids(write_notebook(server.root, "visit.ipynb", 20))
    async with mcp_client(server) as client:
        await client.list_tools()
        for i, cell in enumerate(ids[:10]):
            await call(client, "update_cell", path="visit.ipynb", cell_id=cell, source=f"x = {i}")
        await call(client, "read_cells", path="visit.ipynb")


def baseline(rev: str) -> Path:
    """The package as it was at ``rev``, in a folder of its own (put ahead of this checkout)."""
    folder = Path(tempfile.mkdtemp(prefix="jupyter-mcp-baseline-"))
    archive = subprocess.run(["git", "archive", rev, "jupyter_mcp_ext"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def run(rounds: int, against: str | None = None) -> dict[str, object]:
    kinds = ["with", "without"] + (["against"] if against else [])
    old = baseline(against) if against else None
    ready: dict[str, list[float]] = {k: [] for k in kinds}
    idle: dict[str, list[float]] = {k: [] for k in kinds}
    after: dict[str, list[float]] = {k: [] for k in kinds if k != "without"}
    try:
        for _ in range(rounds):
            for kind in kinds:  # interleaved: the machine's drift falls on each alike
                server, took = start(kind, old)
                try:
                    time.sleep(SETTLE)
                    ready[kind].append(took)
                    idle[kind].append(rss_mb(server))
                    if kind in after:
                        asyncio.run(agent_visit(server))
                        time.sleep(SETTLE)
                        after[kind].append(rss_mb(server))
                finally:
                    server.stop()
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    med = statistics.median
    figures: dict[str, object] = {"rounds": rounds, "against": against, "all": {"ready": ready, "idle": idle}}
    for kind in kinds:
        figures[kind] = {
            "ready_s": med(ready[kind]),
            "idle_mb": med(idle[kind]),
            "ready_added_s": med(ready[kind]) - med(ready["without"]),
            "idle_added_mb": med(idle[kind]) - med(idle["without"]),
        }
        if kind in after:
            figures[kind]["after_agent_mb"] = med(after[kind])  # type: ignore[index]
            figures[kind]["after_agent_over_idle_mb"] = med(after[kind]) - med(idle[kind])  # type: ignore[index]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", help="also a baseline's package (a git revision), e.g. main")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    figures = run(args.rounds, args.against)
    print(
        f"medians of {args.rounds} starts each, interleaved; 'added' is over the server without the extension"
    )
    for kind in ("with", "against", "without"):
        row = figures.get(kind)
        if not isinstance(row, dict):
            continue
        name = {"with": "this checkout", "against": f"at {args.against}", "without": "extension off"}[kind]
        line = (
            f"{name:>18}: ready {row['ready_s']:.2f} s ({row['ready_added_s']:+.2f} s; target +0.2), "
            f"idle {row['idle_mb']:.1f} MB ({row['idle_added_mb']:+.1f} MB; target +15)"
        )
        if "after_agent_mb" in row:
            line += f", after an agent left {row['after_agent_mb']:.1f} MB ({row['after_agent_over_idle_mb']:+.1f})"
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1, default=str)


if __name__ == "__main__":
    main()
