"""Editing scenarios: read, insert and update on a 20-cell and a 500-cell notebook, the outline, and
how soon a second Yjs client (a JupyterLab tab) sees an edit."""

from __future__ import annotations

import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp.client import Client

from .bench import Bench
from .client import Editor, call, cell_ids
from .report import Row, ms, pct
from .yjs import YPeer


async def edits(bench: Bench, client: Client, small: Path, big: Path) -> None:
    """Read, insert and update on both notebooks, the outline, and ping, measured in turns."""
    bench.log("editing")
    eds = {
        "20-cell": Editor(client, small.name, cell_ids(small)),
        "500-cell": Editor(client, big.name, cell_ids(big)),
    }

    async def ping() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ping is gone from the 2026 protocol; this session is older
            await client.send_ping()

    async def outline() -> None:
        await call(client, "get_notebook", path=big.name)

    ops: dict[str, Callable[[], Awaitable[float | None]]] = {"MCP ping": ping}
    for label, ed in eds.items():
        ops |= {
            f"read_cells, {label}": ed.read,
            f"insert_cells, {label}": ed.insert_then_delete,
            f"update_cell, {label}": ed.update,
        }
    ops["get_notebook outline, 500-cell"] = outline
    times = await bench.rounds("editing", ops, bench.s.floor_reps)
    ping_ms = ms(times["MCP ping"])
    bench.raw["MCP ping"] = ping_ms
    ping50 = pct(ping_ms, 0.5)
    bench.rows.append(
        Row(
            "MCP ping (floor)",
            "ms",
            ping50,
            pct(ping_ms, 0.95),
            len(ping_ms),
            0.0,
            "-",
            "info",
            0,
            "-",
            {"server_cpu_ms_per_call": bench.cpu_ms["MCP ping"]},
        )
    )
    tools = (("read_cells", 1.0), ("insert_cells", 2.0), ("update_cell", 2.0))
    small50 = {}
    for tool, limit in tools:
        name = f"{tool}, 20-cell"
        row = bench.latency_row(name, times[name], ping50, "MCP ping", "diff", limit, f"<= +{limit:g} ms")
        small50[tool] = row.p50
        bench.add(row)
    for tool, _ in tools:
        name = f"{tool}, 500-cell"
        bench.add(
            bench.latency_row(name, times[name], small50[tool], f"{tool}, 20-cell", "ratio", 2.0, "<= 2x")
        )
    read_big = pct(ms(times["read_cells, 500-cell"]), 0.5)
    name = "get_notebook outline, 500-cell"
    bench.add(bench.latency_row(name, times[name], read_big, "read_cells, 500-cell", "ratio", 10.0, "<= 10x"))


async def visibility(bench: Bench, client: Client, small: Path) -> None:
    """From the call's start to the second Yjs client's observer seeing the edit."""
    s = bench.s
    bench.log("visibility")
    ids = cell_ids(small)
    target = ids[3]
    async with YPeer(bench.server.url, bench.server.headers, small.name) as peer:
        changes: list[float] = []  # when the peer's document changed (the observer fired)

        def observe(_event: Any) -> None:
            changes.append(time.perf_counter())

        def source_of_target(notebook: Any) -> str:
            return next(str(c["source"]) for c in notebook.ycells if c.get("id") == target)

        sub = peer.ydoc.observe(observe)
        calls, visible = [], []
        try:
            flip = False
            for k in range(s.warmup + s.reps):
                old, new = ("marker_", "MARKER_") if not flip else ("MARKER_", "marker_")
                flip = not flip
                changes.clear()
                start = time.perf_counter()
                await call(
                    client, "update_cell", path=small.name, cell_id=target, old_string=old, new_string=new
                )
                done = time.perf_counter()
                await peer.wait_for(lambda nb, new=new: new in source_of_target(nb), timeout=10)
                if k >= s.warmup:
                    calls.append(done - start)
                    visible.append(changes[0] - start)
        finally:
            peer.ydoc.unobserve(sub)
    call_ms = ms(calls)
    bench.raw["update_cell call (visibility)"] = call_ms
    row = bench.latency_row(
        "edit visible to a 2nd Yjs client",
        visible,
        pct(call_ms, 0.5),
        "the call's duration",
        "diff",
        5.0,
        "<= +5 ms",
    )
    row.extra["excess_ms_p95"] = pct([v - c for v, c in zip(ms(visible), call_ms, strict=True)], 0.95)
    bench.add(row)
