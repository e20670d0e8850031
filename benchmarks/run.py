"""The benchmark run: scenarios, their floors, the table and the JSON.

Every figure is wall-clock time seen by an MCP client of the official SDK over HTTP (handshake-era
session, so that ``ping`` exists), from just before ``call_tool`` to its result. Each scenario is
warmed up first; its floor is measured in the same run, on the same server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import platform
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import nbformat
import psutil
from jupyter_client.asynchronous import AsyncKernelClient
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from .server import JupyterServer

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from tests.yclient import YPeer  # noqa: E402  (the tests' JupyterLab-like Yjs client, reused as is)

MB = 1024 * 1024
FLOOD_CODE = "for _ in range(100):\n    print('x' * (1024 * 1024 - 1))"  # 100 MB on stdout


@dataclass
class Settings:
    quick: bool

    @property
    def warmup(self) -> int:
        return 3 if self.quick else 10

    @property
    def reps(self) -> int:  # sub-second tool calls
        return 12 if self.quick else 60

    @property
    def floor_reps(self) -> int:
        return 20 if self.quick else 100

    @property
    def flood_reps(self) -> int:
        return 1 if self.quick else 3

    @property
    def session_calls(self) -> int:  # per session in the concurrency scenario
        return 15 if self.quick else 100


@dataclass
class Row:
    scenario: str
    unit: str  # "ms", "calls/s", "MB"
    p50: float
    p95: float | None
    n: int
    floor: float
    floor_name: str
    kind: str  # "diff" (p50 - floor <= target), "ratio" (p50 / floor <= target), "min_ratio" (>=), "max"
    target: float
    target_text: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def versus(self) -> float:
        if self.kind == "diff":
            return self.p50 - self.floor
        if self.kind == "max":
            return self.p50
        return self.p50 / self.floor if self.floor else float("inf")

    @property
    def met(self) -> bool:
        if self.kind == "min_ratio":
            return self.versus >= self.target and not self.extra.get("errors")
        return self.versus <= self.target

    def versus_text(self) -> str:
        if self.kind == "diff":
            return f"{self.versus:+.2f} ms"
        if self.kind == "max":
            return f"{self.versus:.1f} MB"
        return f"{self.versus:.2f}x"

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "versus": self.versus, "met": self.met}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    k = (len(ordered) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def ms(seconds: list[float]) -> list[float]:
    return [s * 1000 for s in seconds]


# -- notebooks ---------------------------------------------------------------------------


def write_notebook(root: Path, name: str, cells: int, *, big: bool = False) -> Path:
    """A notebook on disk; ``big`` cells are ~2.6 kB each (500 of them make ~1.3 MB)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
        "language_info": {"name": "python"},
    }
    for i in range(cells):
        if big:
            body = "\n".join(f"value_{i}_{j} = compute({j}, 'some argument text here')" for j in range(30))
            cell = nbformat.v4.new_code_cell(f"# cell {i}\n{body}\nmarker_{i} = 0")
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"line {i}\n" * 60)]
            cell.execution_count = i + 1
        else:
            cell = nbformat.v4.new_code_cell(f"# cell {i}\nx_{i} = {i} * 2\nmarker_{i} = 0")
        nb.cells.append(cell)
    path = root / name
    path.write_text(nbformat.writes(nb), encoding="utf-8")
    return path


def cell_ids(path: Path) -> list[str]:
    return [c["id"] for c in json.loads(path.read_text())["cells"]]


# -- the client --------------------------------------------------------------------------


@asynccontextmanager
async def mcp_client(server: JupyterServer) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers=server.headers, timeout=httpx2.Timeout(60, read=120))
    transport = streamable_http_client(f"{server.url}mcp", http_client=http)
    async with http, Client(transport, mode="legacy") as client:
        yield client


class ToolFailed(RuntimeError):
    pass


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        text = " ".join(b.text for b in result.content if b.type == "text")
        raise ToolFailed(f"{tool}: {text}")
    return result.structured_content or {}


async def timed(fn: Callable[[], Awaitable[Any]], reps: int, warmup: int, phase: Any = None) -> list[float]:
    """Wall time of ``fn`` over ``reps`` calls after ``warmup`` untimed ones (inside ``phase``)."""
    for _ in range(warmup):
        await fn()
    out = []
    with phase if phase is not None else contextlib.nullcontext():
        for _ in range(reps):
            start = time.perf_counter()
            await fn()
            out.append(time.perf_counter() - start)
    return out


class Editor:
    """The three editing calls on one notebook, each keeping the notebook as it was."""

    def __init__(self, client: Client, path: str, ids: list[str]):
        self.client, self.path, self.ids = client, path, ids
        self.target = ids[len(ids) // 2]
        self.flip = False

    async def read(self) -> None:
        await call(self.client, "read_cells", path=self.path, cell_ids=[self.target])

    async def insert(self) -> str:
        out = await call(
            self.client,
            "insert_cells",
            path=self.path,
            cells=[{"cell_type": "code", "source": "y = 1"}],
            after=self.target,
        )
        return out["cell_ids"][0]

    async def update(self) -> None:
        old, new = ("marker_", "MARKER_") if not self.flip else ("MARKER_", "marker_")
        self.flip = not self.flip
        await call(
            self.client, "update_cell", path=self.path, cell_id=self.target, old_string=old, new_string=new
        )

    async def timed_insert(self, reps: int, warmup: int, phase: Any) -> list[float]:
        """Insert timed; the inserted cell is deleted (untimed), so the notebook keeps its size."""
        out = []
        for _ in range(warmup):
            await call(self.client, "delete_cells", path=self.path, cell_ids=[await self.insert()])
        with phase:
            for _ in range(reps):
                start = time.perf_counter()
                new_id = await self.insert()
                out.append(time.perf_counter() - start)
                await call(self.client, "delete_cells", path=self.path, cell_ids=[new_id])
        return out


# -- the scenarios -----------------------------------------------------------------------


class Phase:
    """The timed part of a scenario: the server's CPU time over it, and a py-spy profile on request."""

    def __init__(self, bench: Bench, name: str, calls: int):
        self.bench, self.name, self.calls = bench, name, calls
        self._spy: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Phase:
        out = self.bench.profile_dir
        if out is not None:
            slug = "".join(c if c.isalnum() else "-" for c in self.name).strip("-")
            self.raw_file = out / f"{slug}.txt"
            self._spy = subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "py-spy"),
                    "record",
                    "--pid",
                    str(self.bench.server.pid),
                    "--rate",
                    "500",
                    "--nonblocking",
                    "--format",
                    "raw",
                    "-o",
                    str(self.raw_file),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(0.5)  # py-spy attaches
        self._cpu = self.bench.server_cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        cpu = self.bench.server_cpu() - self._cpu
        self.bench.cpu_ms[self.name] = cpu * 1000 / max(1, self.calls)
        if self._spy is not None:
            self._spy.send_signal(signal.SIGINT)
            self._spy.wait(timeout=30)


class Bench:
    def __init__(
        self, server: JupyterServer, settings: Settings, log: Callable[[str], None], profile: Path | None
    ):
        self.server = server
        self.s = settings
        self.log = log
        self.profile_dir = profile
        self.rows: list[Row] = []
        self.raw: dict[str, list[float]] = {}
        self.cpu_ms: dict[str, float] = {}  # scenario -> the server's CPU time per call
        self.proc = psutil.Process(server.pid)

    def server_cpu(self) -> float:
        times = self.proc.cpu_times()
        return times.user + times.system

    def phase(self, name: str, calls: int) -> Phase:
        return Phase(self, name, calls)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        self.log(
            f"  {row.scenario}: p50 {row.p50:.2f} {row.unit}, floor {row.floor:.2f} ({row.versus_text()})"
        )

    def latency_row(
        self,
        name: str,
        values: list[float],
        floor: float,
        floor_name: str,
        kind: str,
        target: float,
        text: str,
    ) -> Row:
        values_ms = ms(values)
        self.raw[name] = values_ms
        extra = {"server_cpu_ms_per_call": self.cpu_ms[name]} if name in self.cpu_ms else {}
        return Row(
            name,
            "ms",
            pct(values_ms, 0.5),
            pct(values_ms, 0.95),
            len(values),
            floor,
            floor_name,
            kind,
            target,
            text,
            extra,
        )

    async def run(self) -> None:
        root = self.server.root
        small = write_notebook(root, "small.ipynb", 20)
        big = write_notebook(root, "big.ipynb", 500, big=True)
        self.log(f"big.ipynb: {big.stat().st_size / MB:.2f} MB, 500 cells")
        write_notebook(root, "exec.ipynb", 1)
        for i in range(8):
            write_notebook(root, f"conc-{i}.ipynb", 20)
        write_notebook(root, "solo.ipynb", 20)

        async with mcp_client(self.server) as client:
            await self.editing(client, small, big)
            await self.visibility(client, small)
            await self.execution(client)
            await self.flood(client)
        await self.concurrency()

    async def editing(self, client: Client, small: Path, big: Path) -> None:
        s = self.s
        self.log("editing")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ping is gone from the 2026 protocol; this session is older
            ping = ms(
                await timed(client.send_ping, s.floor_reps, s.warmup, self.phase("MCP ping", s.floor_reps))
            )
        self.raw["MCP ping"] = ping
        ping50 = pct(ping, 0.5)
        self.rows.append(
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
                {"server_cpu_ms_per_call": self.cpu_ms["MCP ping"]},
            )
        )
        small_rows: dict[str, Row] = {}
        for label, path, in_big in (("20-cell", small, False), ("500-cell", big, True)):
            ed = Editor(client, path.name, cell_ids(path))
            read = await timed(ed.read, s.reps, s.warmup, self.phase(f"read_cells, {label}", s.reps))
            insert = await ed.timed_insert(s.reps, s.warmup, self.phase(f"insert_cells, {label}", s.reps))
            update = await timed(ed.update, s.reps, s.warmup, self.phase(f"update_cell, {label}", s.reps))
            measured = (
                ("read_cells", read, 1.0),
                ("insert_cells", insert, 2.0),
                ("update_cell", update, 2.0),
            )
            for tool, values, limit in measured:
                name = f"{tool}, {label}"
                if in_big:
                    base = small_rows[tool].p50
                    row = self.latency_row(name, values, base, f"{tool}, 20-cell", "ratio", 2.0, "<= 2x")
                else:
                    row = self.latency_row(
                        name, values, ping50, "MCP ping", "diff", limit, f"<= +{limit:g} ms"
                    )
                    small_rows[tool] = row
                self.add(row)
            if in_big:
                read_big = pct(ms(read), 0.5)
                name = "get_notebook outline, 500-cell"
                outline = await timed(
                    lambda: call(client, "get_notebook", path="big.ipynb"),
                    s.reps,
                    s.warmup,
                    self.phase(name, s.reps),
                )
                self.add(
                    self.latency_row(name, outline, read_big, "read_cells, 500-cell", "ratio", 10.0, "<= 10x")
                )

    async def visibility(self, client: Client, small: Path) -> None:
        """From the call's start to the second Yjs client's observer seeing the edit."""
        s = self.s
        self.log("visibility")
        ids = cell_ids(small)
        target = ids[3]
        async with YPeer(self.server.url, self.server.headers, small.name) as peer:
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
        self.raw["update_cell call (visibility)"] = call_ms
        row = self.latency_row(
            "edit visible to a 2nd Yjs client",
            visible,
            pct(call_ms, 0.5),
            "the call's duration",
            "diff",
            5.0,
            "<= +5 ms",
        )
        row.extra["excess_ms_p95"] = pct([v - c for v, c in zip(ms(visible), call_ms, strict=True)], 0.95)
        self.add(row)

    async def kernel_client(self, client: Client, path: str) -> AsyncKernelClient:
        await call(client, "execute_code", path=path, code="0")  # binds (starts) the notebook's kernel
        async with httpx.AsyncClient(headers=self.server.headers) as http:
            sessions = (await http.get(f"{self.server.url}api/sessions")).json()
        kernel_id = next(s["kernel"]["id"] for s in sessions if s["path"] == path)
        kc = AsyncKernelClient(connection_file=str(self.server.connection_file(kernel_id)))
        kc.load_connection_file()
        kc.start_channels()
        await kc.wait_for_ready(timeout=60)
        return kc

    async def execution(self, client: Client) -> None:
        s = self.s
        self.log("execution")
        kc = await self.kernel_client(client, "exec.ipynb")
        try:

            async def direct() -> None:
                reply = await kc.execute_interactive("1+1", output_hook=lambda _msg: None, timeout=60)
                assert reply["content"]["status"] == "ok"

            floor = ms(await timed(direct, s.floor_reps, s.warmup))
        finally:
            kc.stop_channels()
        self.raw["execute_interactive 1+1"] = floor
        floor50 = pct(floor, 0.5)
        self.rows.append(
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

        async def insert_and_execute() -> None:
            out = await call(client, "insert_and_execute", path="exec.ipynb", source="1+1")
            assert out["status"] == "ok", out
            self._last_cell = out["cell_id"]

        async def cleanup_after(fn: Callable[[], Awaitable[None]], phase: Phase) -> list[float]:
            """Timed; the cell it added is deleted after each call (untimed)."""
            values = []
            for _ in range(s.warmup):
                await fn()
                await call(client, "delete_cells", path="exec.ipynb", cell_ids=[self._last_cell])
            with phase:
                for _ in range(s.reps):
                    start = time.perf_counter()
                    await fn()
                    values.append(time.perf_counter() - start)
                    await call(client, "delete_cells", path="exec.ipynb", cell_ids=[self._last_cell])
            return values

        async def execute_code() -> None:
            out = await call(client, "execute_code", path="exec.ipynb", code="1+1")
            assert out["status"] == "ok", out

        for name, values in (
            (
                "insert_and_execute 1+1",
                await cleanup_after(insert_and_execute, self.phase("insert_and_execute 1+1", s.reps)),
            ),
            (
                "execute_code 1+1",
                await timed(execute_code, s.reps, s.warmup, self.phase("execute_code 1+1", s.reps)),
            ),
        ):
            self.add(self.latency_row(name, values, floor50, "execute_interactive", "ratio", 1.5, "<= 1.5x"))

    async def flood(self, client: Client) -> None:
        """A cell printing 100 MB: the call's time against the kernel's own, and the server's RSS."""
        s = self.s
        self.log("flood")
        kc = await self.kernel_client(client, "exec.ipynb")
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
        rss_before = self.proc.memory_info().rss
        peak = [rss_before]
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                try:
                    peak[0] = max(peak[0], self.proc.memory_info().rss)
                except psutil.Error:
                    return
                time.sleep(0.005)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        calls = []
        name = "cell printing 100 MB: call time"
        try:
            with self.phase(name, s.flood_reps):
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
        rss_after = self.proc.memory_info().rss
        floor_ms = ms(floor)
        self.raw["flood: kernel's own time"] = floor_ms
        row = self.latency_row(
            name,
            calls,
            pct(floor_ms, 0.5),
            "kernel's own time",
            "ratio",
            2.0,
            "<= 2x",
        )
        self.add(row)
        growth = (peak[0] - rss_before) / MB
        self.add(
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

    async def concurrency(self) -> None:
        """8 sessions on 8 notebooks at once, against one session alone doing the same."""
        s = self.s
        self.log("concurrency")
        n = s.session_calls

        async def session(
            path: str, ready: asyncio.Event | None, go: asyncio.Event | None
        ) -> tuple[float, float, int]:
            async with mcp_client(self.server) as client:
                ed = Editor(client, path, cell_ids(self.server.root / path))
                for _ in range(3):
                    await ed.read()
                    await ed.update()
                if ready is not None and go is not None:
                    ready.set()
                    await go.wait()
                errors = 0
                start = time.perf_counter()
                for k in range(n):
                    try:
                        await (ed.read, ed.insert, ed.update)[k % 3]()
                    except Exception:
                        errors += 1
                return start, time.perf_counter(), errors

        cpu = self.server_cpu()
        solo_start, solo_end, solo_errors = await session("solo.ipynb", None, None)
        solo_cpu = self.server_cpu() - cpu  # includes the session's set-up and warm-up
        solo_rate = n / (solo_end - solo_start)
        go = asyncio.Event()
        readies = [asyncio.Event() for _ in range(8)]
        tasks = [asyncio.create_task(session(f"conc-{i}.ipynb", readies[i], go)) for i in range(8)]
        await asyncio.gather(*(r.wait() for r in readies))
        cpu_client = time.process_time()
        name = "8 sessions concurrently: throughput"
        with self.phase(name, 8 * n):
            go.set()
            results = await asyncio.gather(*tasks, return_exceptions=True)
        client_cpu = time.process_time() - cpu_client
        done = [r for r in results if isinstance(r, tuple)]
        wall = max(r[1] for r in done) - min(r[0] for r in done) if done else float("inf")
        errors = solo_errors + sum(r[2] for r in done) + n * (len(results) - len(done))
        rate = 8 * n / wall
        self.add(
            Row(
                "8 sessions concurrently: throughput",
                "calls/s",
                rate,
                None,
                8 * n,
                8 * solo_rate,
                "8x one session's rate",
                "min_ratio",
                0.8,
                ">= 0.8x, no errors",
                {
                    "errors": errors,
                    "solo_rate": solo_rate,
                    "wall_s": wall,
                    "client_cpu_s": client_cpu,
                    "server_cpu_ms_per_call": self.cpu_ms[name],
                    "solo_server_cpu_ms_per_call": solo_cpu * 1000 / (n + 6),
                },
            )
        )


# -- output ------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": psutil.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "load_average": list(psutil.getloadavg()),
    }


def table(rows: list[Row]) -> str:
    head = ["scenario", "p50", "p95", "floor", "vs floor", "target", "met", "server CPU/call"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:

        def fmt(v: float | None, unit: str = r.unit) -> str:
            if v is None:
                return "-"
            return f"{v:.1f} {unit}" if unit != "ms" else f"{v:.2f} ms"

        if r.kind == "info":
            cells = [r.scenario, fmt(r.p50), fmt(r.p95), "-", "-", "-", "-"]
        else:
            floor_unit = "MB" if r.kind == "max" else r.unit
            cells = [
                r.scenario,
                fmt(r.p50),
                fmt(r.p95),
                f"{fmt(r.floor, floor_unit)} ({r.floor_name})",
                r.versus_text(),
                r.target_text,
                "yes" if r.met else "**no**",
            ]
        if r.extra.get("errors"):
            cells[-1] += f" ({r.extra['errors']} errors)"
        cpu = r.extra.get("server_cpu_ms_per_call")
        cells.append("-" if cpu is None else f"{cpu:.2f} ms")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="few repetitions (CI)")
    parser.add_argument("--json", type=Path, help="also write the table as JSON")
    parser.add_argument(
        "--profile", type=Path, help="record the server with py-spy during each scenario into this folder"
    )
    args = parser.parse_args(argv)
    settings = Settings(quick=args.quick)

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    started = time.monotonic()
    server = JupyterServer()
    try:
        server.start()
        log(f"jupyter server pid {server.pid} at {server.url} (root {server.root})")
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
        bench = Bench(server, settings, log, args.profile)
        asyncio.run(bench.run())
    finally:
        server.stop()
    elapsed = time.monotonic() - started
    info = {**machine(), "quick": settings.quick, "elapsed_s": round(elapsed, 1)}
    print(
        f"\n{info['nproc']} CPUs ({info['cpu']}), Python {info['python']}, "
        f"load {info['load_average'][0]:.1f}; {'quick' if settings.quick else 'full'} run in {elapsed:.0f} s\n"
    )
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
