"""``python -m benchmarks.idle_cost``: what the extension costs a server that no agent uses, and what
agents leave behind once they have gone.

Starts ``jupyter server`` with the extension and without it (``jpserver_extensions`` turned off in
the throwaway config: collaboration stays on in both), interleaved, several times; for each start,
the time until ``/api/status`` answers and the resident memory a few seconds later (idle). Then, in
the same run:

- with the extension, the runtime's one-time load: what ``GET <base>/api/mcp/info`` (the JupyterLab
  panel's first request on loading) leaves, the runtime being built on the first request to one of
  the extension's paths (``routes.LazyRoutes``). It holds the MCP SDK's modules, which Python cannot
  unload: the first agent pays it, or the first person who opens JupyterLab with the panel;
- with the extension, after agent 1, 2, 3 came and left, one after another (each lists the tools,
  reads a notebook of its own, edits 10 cells, reads again, and ends its session), the resident
  memory once the collaboration layer's room clean-up had its time;
- without it, after a person's first notebook read (``GET /api/contents``): Jupyter's own one-time
  cost (nbformat compiles its validator), which the first agent's first read pays as well.

The target (issue 36) is what an agent's visit leaves beyond that one-time load: agent 1 over the
runtime's load within 10 MB, and each later agent over the one before about nothing (its residue).
Every server here runs with ``YDocExtension.document_cleanup_delay`` shortened to ``CLEANUP`` s (a
tab's room too): rooms an agent used close as a closed tab's do, without a minute's wait per agent.
Figures are medians of each round's own differences (the same server before and after).
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

import httpx
import psutil

from tests.support.server import JupyterServer

from .client import call, cell_ids, mcp_client, write_notebook

SETTLE = 3.0  # seconds after the server answers before its memory is read (as a person would find it)
CLEANUP = 2.0  # the collaboration layer's document_cleanup_delay on these servers (default 60 s)
AGENTS = 3


def rss_mb(server: JupyterServer) -> float:
    return psutil.Process(server.pid).memory_info().rss / 1e6


def start(kind: str, against: Path | None) -> tuple[JupyterServer, float]:
    """``kind``: "with" (this checkout), "without" (the extension off), "against" (a baseline's package)."""
    config: dict[str, dict[str, object]] = {"YDocExtension": {"document_cleanup_delay": CLEANUP}}
    if kind == "without":
        config["ServerApp"] = {"jpserver_extensions": {"jupyter_mcp_ext": False}}
    server = JupyterServer(config, prefix="jupyter-mcp-idle-")
    if kind == "against" and against is not None:
        server.python_path = [str(against)]
    began = time.perf_counter()
    server.start()
    return server, time.perf_counter() - began


def load_runtime(server: JupyterServer) -> None:
    """What the JupyterLab panel asks first on loading; it builds the runtime, no agent involved."""
    httpx.get(f"{server.url}api/mcp/info", headers=server.headers, timeout=60).raise_for_status()


async def agent_visit(server: JupyterServer, name: str) -> None:
    """An agent connects, lists, reads and edits a notebook of its own, then leaves (ends its session)."""
    ids = cell_ids(write_notebook(server.root, name, 20))
    async with mcp_client(server) as client:
        await client.list_tools()
        await call(client, "read_cells", path=name)
        for i, cell in enumerate(ids[:10]):
            await call(client, "update_cell", path=name, cell_id=cell, source=f"x = {i}")
        await call(client, "read_cells", path=name)


def baseline(rev: str) -> Path:
    """The package as it was at ``rev``, in a folder of its own (put ahead of this checkout)."""
    folder = Path(tempfile.mkdtemp(prefix="jupyter-mcp-baseline-"))
    archive = subprocess.run(["git", "archive", rev, "jupyter_mcp_ext"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def first_notebook(server: JupyterServer) -> float:
    """RSS after a person's first notebook read (``/api/contents``), on a server without the extension:
    Jupyter's own one-time cost (nbformat compiles its validator), which an agent's first read pays too."""
    write_notebook(server.root, "person.ipynb", 20)
    httpx.get(f"{server.url}api/contents/person.ipynb", headers=server.headers, timeout=60).raise_for_status()
    time.sleep(SETTLE)
    return rss_mb(server)


def visits(server: JupyterServer, agents: int) -> list[float]:
    """RSS after the runtime's load, then after each agent left."""
    load_runtime(server)
    time.sleep(SETTLE)
    found = [rss_mb(server)]
    for n in range(1, agents + 1):
        asyncio.run(agent_visit(server, f"visit-{n}.ipynb"))
        time.sleep(CLEANUP + SETTLE)
        found.append(rss_mb(server))
    return found


def run(rounds: int, against: str | None = None, agents: int = AGENTS) -> dict[str, object]:
    kinds = ["with", "without"] + (["against"] if against else [])
    old = baseline(against) if against else None
    ready: dict[str, list[float]] = {k: [] for k in kinds}
    idle: dict[str, list[float]] = {k: [] for k in kinds}
    after: dict[str, list[list[float]]] = {k: [] for k in kinds if k != "without"}  # runtime, agent 1..n
    read: list[float] = []  # without the extension, after a person's first notebook
    try:
        for _ in range(rounds):
            for kind in kinds:  # interleaved: the machine's drift falls on each alike
                server, took = start(kind, old)
                try:
                    time.sleep(SETTLE)
                    ready[kind].append(took)
                    idle[kind].append(rss_mb(server))
                    if kind in after:
                        after[kind].append(visits(server, agents))
                    else:
                        read.append(first_notebook(server))
                finally:
                    server.stop()
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    med = statistics.median
    figures: dict[str, object] = {
        "rounds": rounds,
        "against": against,
        "all": {"ready": ready, "idle": idle, "after": after, "first_notebook": read},
    }
    for kind in kinds:
        row: dict[str, object] = {
            "ready_s": med(ready[kind]),
            "idle_mb": med(idle[kind]),
            "ready_added_s": med(ready[kind]) - med(ready["without"]),
            "idle_added_mb": med(idle[kind]) - med(idle["without"]),
        }
        if kind in after:
            series = [[i, *rest] for i, rest in zip(idle[kind], after[kind], strict=True)]
            row["runtime_load_mb"] = med(s[1] - s[0] for s in series)
            # agent n over what was there before it came: the runtime's load for agent 1
            row["agent_left_mb"] = [med(s[n + 1] - s[n] for s in series) for n in range(1, agents + 1)]
            row["after_agents_over_idle_mb"] = med(s[-1] - s[0] for s in series)
            row["after_agent_1_over_idle_mb"] = med(s[2] - s[0] for s in series)
        if kind == "without":
            row["first_notebook_mb"] = med(r - i for r, i in zip(read, idle[kind], strict=True))
        figures[kind] = row
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--agents", type=int, default=AGENTS, help="agents that come and go, one after another"
    )
    parser.add_argument("--against", help="also a baseline's package (a git revision), e.g. main")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    figures = run(args.rounds, args.against, args.agents)
    print(
        f"medians of {args.rounds} starts each, interleaved; 'added' is over the server without the extension"
    )
    for kind in ("with", "against", "without"):
        row = figures.get(kind)
        if not isinstance(row, dict):
            continue
        name = {"with": "this checkout", "against": f"at {args.against}", "without": "extension off"}[kind]
        print(
            f"{name:>18}: ready {row['ready_s']:.2f} s ({row['ready_added_s']:+.2f} s; target +0.2), "
            f"idle {row['idle_mb']:.1f} MB ({row['idle_added_mb']:+.1f} MB; target +15)"
        )
        if "runtime_load_mb" in row:
            left = row["agent_left_mb"]
            later = ", ".join(f"agent {n}: {mb:+.1f}" for n, mb in enumerate(left[1:], start=2))
            print(
                f"{'':>18}  runtime's one-time load (/api/mcp/info) {row['runtime_load_mb']:+.1f} MB; "
                f"after agent 1 left {left[0]:+.1f} MB over that (target +10); residue {later}; "
                f"all told {row['after_agents_over_idle_mb']:+.1f} MB over idle"
            )
        if "first_notebook_mb" in row:
            print(
                f"{'':>18}  a person's first notebook read (Jupyter's own) {row['first_notebook_mb']:+.1f} MB"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1, default=str)


if __name__ == "__main__":
    main()
