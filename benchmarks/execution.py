"""Execution scenarios: ``1+1`` through the tools against jupyter_client on the same kernel, and a
cell printing 100 MB (the call's time against the kernel's own, and the server's memory)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import psutil
from jupyter_client.asynchronous import AsyncKernelClient
from mcp.client import Client

from tests.support.server import JupyterServer

from .bench import Bench
from .client import call
from .report import MB, Row, ms, pct

FLOOD_CODE = "for _ in range(100):\n    print('x' * (1024 * 1024 - 1))"  # 100 MB on stdout


async def bound_kernel(bench: Bench, client: Client, path: str) -> str:
    """The id of the notebook's kernel, bound (started) by the extension as an agent's first run does."""
    await call(client, "execute_code", path=path, code="0")
    async with httpx.AsyncClient(headers=bench.server.headers) as http:
        sessions = (await http.get(f"{bench.server.url}api/sessions")).json()
    return next(s["kernel"]["id"] for s in sessions if s["path"] == path)


async def kernel_client(server: JupyterServer, kernel_id: str) -> AsyncKernelClient:
    """A jupyter_client client of the kernel, ready: the floor's own way to run code."""
    kc = AsyncKernelClient(connection_file=str(server.connection_file(kernel_id)))
    kc.load_connection_file()
    kc.start_channels()
    try:
        await kc.wait_for_ready(timeout=60)
    except BaseException:
        kc.stop_channels()
        raise
    return kc


async def round_trip(bench: Bench, client: Client) -> None:
    """``1+1`` through insert_and_execute and execute_code, in turns with jupyter_client's own
    ``execute_interactive`` on the same kernel (the floor)."""
    bench.log("execution")
    path = "exec.ipynb"
    kc = await kernel_client(bench.server, await bound_kernel(bench, client, path))

    async def direct() -> None:
        reply = await kc.execute_interactive("1+1", output_hook=lambda _msg: None, timeout=60)
        assert reply["content"]["status"] == "ok"

    async def insert_and_execute() -> float:
        start = time.perf_counter()
        out = await call(client, "insert_and_execute", path=path, source="1+1")
        took = time.perf_counter() - start
        assert out["status"] == "ok", out
        await call(client, "delete_cells", path=path, cell_ids=[out["cell_id"]])  # untimed
        return took

    async def execute_code() -> None:
        out = await call(client, "execute_code", path=path, code="1+1")
        assert out["status"] == "ok", out

    floor_name = "execute_interactive 1+1"
    ops = {floor_name: direct, "insert_and_execute 1+1": insert_and_execute, "execute_code 1+1": execute_code}
    try:
        times = await bench.rounds("execution", ops, bench.s.floor_reps)
    finally:
        kc.stop_channels()
    floor = ms(times[floor_name])
    bench.raw[floor_name] = floor
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
    for name in ("insert_and_execute 1+1", "execute_code 1+1"):
        bench.add(
            bench.latency_row(name, times[name], floor50, "execute_interactive", "ratio", 1.5, "<= 1.5x")
        )


class PeakRSS:
    """The server's peak RSS over a ``with`` block, sampled every 5 ms in a thread."""

    def __init__(self, proc: psutil.Process):
        self.proc = proc
        self.before = self.peak = 0  # read when the block starts
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.proc.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.005)

    def __enter__(self) -> PeakRSS:
        self.before = self.peak = self.proc.memory_info().rss
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth_mb(self) -> float:
        return (self.peak - self.before) / MB


async def flood(bench: Bench, client: Client) -> None:
    """A cell printing 100 MB: the call's time against the kernel's own, and the server's RSS.

    The floor run goes first, on a kernel the server started for a REST session, so that its RSS
    growth is the server's own (jupyter_server's activity watcher) with no MCP link to the kernel.
    """
    s = bench.s
    bench.log("flood")
    path = "flood.ipynb"
    async with httpx.AsyncClient(headers=bench.server.headers) as http:
        created = await http.post(
            f"{bench.server.url}api/sessions",
            json={"path": path, "type": "notebook", "name": path, "kernel": {"name": "python3"}},
        )
    created.raise_for_status()
    kc = await kernel_client(bench.server, created.json()["kernel"]["id"])
    received = [0]

    def count(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream":
            received[0] += len(msg["content"]["text"])

    try:
        floor = []
        with PeakRSS(bench.proc) as server_only:
            for _ in range(s.flood_reps):
                start = time.perf_counter()
                await kc.execute_interactive(FLOOD_CODE, output_hook=count, timeout=300)
                floor.append(time.perf_counter() - start)
            await asyncio.sleep(1.5)  # until the server's watcher has read it all
    finally:
        kc.stop_channels()
    if received[0] < 100 * MB * s.flood_reps * 0.99:
        raise RuntimeError(f"the flood printed only {received[0]} bytes")
    await call(client, "execute_code", path=path, code="0")  # the extension links to the kernel
    calls = []
    name = "cell printing 100 MB: call time"
    with PeakRSS(bench.proc) as rss, bench.phase(name, s.flood_reps):
        for _ in range(s.flood_reps):
            start = time.perf_counter()
            out = await call(client, "insert_and_execute", path=path, source=FLOOD_CODE, timeout=300)
            calls.append(time.perf_counter() - start)
            assert out["status"] == "ok", out
            await call(client, "delete_cells", path=path, cell_ids=[out["cell_id"]])
    floor_ms = ms(floor)
    bench.raw["flood: kernel's own time"] = floor_ms
    bench.add(bench.latency_row(name, calls, pct(floor_ms, 0.5), "kernel's own time", "ratio", 2.0, "<= 2x"))
    bench.rows.append(
        Row(
            "cell printing 100 MB, no MCP call: server RSS growth (peak)",
            "MB",
            server_only.growth_mb,
            None,
            s.flood_reps,
            0.0,
            "-",
            "info",
            0,
            "-",
            {"rss_before_mb": server_only.before / MB, "rss_peak_mb": server_only.peak / MB},
        )
    )
    # Growth from the RSS before any flood: the memory the floor run freed may still be held by the
    # allocator, and reusing it would hide part of what the MCP run needs.
    growth = (rss.peak - server_only.before) / MB
    bench.add(
        Row(
            "cell printing 100 MB: server RSS growth (peak)",
            "MB",
            growth,
            None,
            s.flood_reps,
            server_only.before / MB,
            "server RSS before any flood",
            "max",
            150.0,
            "<= 150 MB",
            {
                "rss_before_mcp_run_mb": rss.before / MB,
                "rss_peak_mb": rss.peak / MB,
                "rss_after_mb": bench.proc.memory_info().rss / MB,
            },
        )
    )
