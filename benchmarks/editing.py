"""Editing scenarios: read, insert and update on a 20-cell and a 500-cell notebook, the outline, and
how soon a second Yjs client (a JupyterLab tab) sees an edit."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

from mcp.client import Client

from .bench import Bench
from .client import Editor, call, cell_ids, timed
from .report import Row, ms, pct
from .yjs import YPeer


async def edits(bench: Bench, client: Client, small: Path, big: Path) -> None:
    s = bench.s
    bench.log("editing")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ping is gone from the 2026 protocol; this session is older
        ping = ms(
            await timed(client.send_ping, s.floor_reps, s.warmup, bench.phase("MCP ping", s.floor_reps))
        )
    bench.raw["MCP ping"] = ping
    ping50 = pct(ping, 0.5)
    bench.rows.append(
        Row(
            "MCP ping (floor)",
            "ms",
            ping50,
            pct(ping, 0.95),
            len(ping),
            0.0,
            "-",
            "info",
            0,
            "-",
            {"server_cpu_ms_per_call": bench.cpu_ms["MCP ping"]},
        )
    )
    small_rows: dict[str, Row] = {}
    for label, path, in_big in (("20-cell", small, False), ("500-cell", big, True)):
        ed = Editor(client, path.name, cell_ids(path))
        read = await timed(ed.read, s.reps, s.warmup, bench.phase(f"read_cells, {label}", s.reps))
        insert = await ed.timed_insert(s.reps, s.warmup, bench.phase(f"insert_cells, {label}", s.reps))
        update = await timed(ed.update, s.reps, s.warmup, bench.phase(f"update_cell, {label}", s.reps))
        measured = (
            ("read_cells", read, 1.0),
            ("insert_cells", insert, 2.0),
            ("update_cell", update, 2.0),
        )
        for tool, values, limit in measured:
            name = f"{tool}, {label}"
            if in_big:
                base = small_rows[tool].p50
                row = bench.latency_row(name, values, base, f"{tool}, 20-cell", "ratio", 2.0, "<= 2x")
            else:
                row = bench.latency_row(name, values, ping50, "MCP ping", "diff", limit, f"<= +{limit:g} ms")
                small_rows[tool] = row
            bench.add(row)
        if in_big:
            read_big = pct(ms(read), 0.5)
            name = "get_notebook outline, 500-cell"
            outline = await timed(
                lambda: call(client, "get_notebook", path="big.ipynb"),
                s.reps,
                s.warmup,
                bench.phase(name, s.reps),
            )
            bench.add(
                bench.latency_row(name, outline, read_big, "read_cells, 500-cell", "ratio", 10.0, "<= 10x")
            )


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
