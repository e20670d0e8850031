"""Execution scenarios: ``1+1`` through the tools against jupyter_client on the same kernel, and a
cell printing 100 MB (the call's time against the kernel's own, and the server's memory)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import psutil
from jupyter_client.asynchronous import AsyncKernelClient
from mcp.client import Client

from .bench import Bench, Phase
from .client import call, timed
from .report import Row, ms, pct

MB = 1024 * 1024
FLOOD_CODE = "for _ in range(100):\n    print('x' * (1024 * 1024 - 1))"  # 100 MB on stdout


async def kernel_client(bench: Bench, client: Client, path: str) -> AsyncKernelClient:
    await call(client, "execute_code", path=path, code="0")  # binds (starts) the notebook's kernel
    async with httpx.AsyncClient(headers=bench.server.headers) as http:
        sessions = (await http.get(f"{bench.server.url}api/sessions")).json()
    kernel_id = next(s["kernel"]["id"] for s in sessions if s["path"] == path)
    kc = AsyncKernelClient(connection_file=str(bench.server.connection_file(kernel_id)))
    kc.load_connection_file()
    kc.start_channels()
    await kc.wait_for_ready(timeout=60)
    return kc


async def round_trip(bench: Bench, client: Client) -> None:
    s = bench.s
    bench.log("execution")
    kc = await kernel_client(bench, client, "exec.ipynb")
    try:

        async def direct() -> None:
            reply = await kc.execute_interactive("1+1", output_hook=lambda _msg: None, timeout=60)
            assert reply["content"]["status"] == "ok"

        floor = ms(await timed(direct, s.floor_reps, s.warmup))
    finally:
        kc.stop_channels()
    bench.raw["execute_interactive 1+1"] = floor
    floor50 = pct(floor, 0.5)
    bench.rows.append(
        Row(
            "jupyter_client execute_interactive 1+1 (floor)",
            "ms",
            floor50,
            pct(floor, 0.95),
            len(floor),
            0.0,
            "-",
            "info",
            0,
            "-",
        )
    )

    last_cell = [""]  # the cell the last insert_and_execute added

    async def insert_and_execute() -> None:
        out = await call(client, "insert_and_execute", path="exec.ipynb", source="1+1")
        assert out["status"] == "ok", out
        last_cell[0] = out["cell_id"]

    async def cleanup_after(fn: Callable[[], Awaitable[None]], phase: Phase) -> list[float]:
        """Timed; the cell it added is deleted after each call (untimed)."""
        values = []
        for _ in range(s.warmup):
            await fn()
            await call(client, "delete_cells", path="exec.ipynb", cell_ids=[last_cell[0]])
        with phase:
            for _ in range(s.reps):
                start = time.perf_counter()
                await fn()
                values.append(time.perf_counter() - start)
                await call(client, "delete_cells", path="exec.ipynb", cell_ids=[last_cell[0]])
        return values

    async def execute_code() -> None:
        out = await call(client, "execute_code", path="exec.ipynb", code="1+1")
        assert out["status"] == "ok", out

    for name, values in (
        (
            "insert_and_execute 1+1",
            await cleanup_after(insert_and_execute, bench.phase("insert_and_execute 1+1", s.reps)),
        ),
        (
            "execute_code 1+1",
            await timed(execute_code, s.reps, s.warmup, bench.phase("execute_code 1+1", s.reps)),
        ),
    ):
        bench.add(bench.latency_row(name, values, floor50, "execute_interactive", "ratio", 1.5, "<= 1.5x"))


async def flood(bench: Bench, client: Client) -> None:
    """A cell printing 100 MB: the call's time against the kernel's own, and the server's RSS."""
    s = bench.s
    bench.log("flood")
    kc = await kernel_client(bench, client, "exec.ipynb")
    received = [0]

    def count(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream":
            received[0] += len(msg["content"]["text"])

    try:
        floor = []
        for _ in range(s.flood_reps):
            start = time.perf_counter()
            await kc.execute_interactive(FLOOD_CODE, output_hook=count, timeout=300)
            floor.append(time.perf_counter() - start)
    finally:
        kc.stop_channels()
    if received[0] < 100 * MB * s.flood_reps * 0.99:
        raise RuntimeError(f"the flood printed only {received[0]} bytes")
    await asyncio.sleep(1.5)  # let the floor run's messages drain through the server's reader
    rss_before = bench.proc.memory_info().rss
    peak = [rss_before]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                peak[0] = max(peak[0], bench.proc.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    calls = []
    name = "cell printing 100 MB: call time"
    try:
        with bench.phase(name, s.flood_reps):
            for _ in range(s.flood_reps):
                start = time.perf_counter()
                out = await call(
                    client, "insert_and_execute", path="exec.ipynb", source=FLOOD_CODE, timeout=300
                )
                calls.append(time.perf_counter() - start)
                assert out["status"] == "ok", out
                await call(client, "delete_cells", path="exec.ipynb", cell_ids=[out["cell_id"]])
    finally:
        stop.set()
        sampler.join()
    rss_after = bench.proc.memory_info().rss
    floor_ms = ms(floor)
    bench.raw["flood: kernel's own time"] = floor_ms
    row = bench.latency_row(
        name,
        calls,
        pct(floor_ms, 0.5),
        "kernel's own time",
        "ratio",
        2.0,
        "<= 2x",
    )
    bench.add(row)
    growth = (peak[0] - rss_before) / MB
    bench.add(
        Row(
            "cell printing 100 MB: server RSS growth (peak)",
            "MB",
            growth,
            None,
            s.flood_reps,
            rss_before / MB,
            "server RSS before",
            "max",
            100.0,
            "<= 100 MB",
            {
                "rss_before_mb": rss_before / MB,
                "rss_peak_mb": peak[0] / MB,
                "rss_after_mb": rss_after / MB,
            },
        )
    )
