"""A benchmark run's state: the server under test, the settings, the rows, the server's CPU per phase."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.support.server import JupyterServer

from .report import Row, ms, pct


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


def spy(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """py-spy recording ``pid`` into ``out`` (raw folded stacks) until it is stopped."""
    py_spy = str(Path(sys.executable).parent / "py-spy")
    command = [
        py_spy,
        "record",
        "--pid",
        str(pid),
        "--rate",
        "500",
        "--nonblocking",
        "--format",
        "raw",
        "-o",
        str(out),
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


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
            self._spy = spy(self.bench.server.pid, self.raw_file)
            time.sleep(0.5)  # py-spy attaches
        self._cpu = self.bench.server_cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        cpu = self.bench.server_cpu() - self._cpu
        self.bench.cpu_ms[self.name] = cpu * 1000 / max(1, self.calls)
        if self._spy is not None:
            self._spy.send_signal(signal.SIGINT)
            self._spy.wait(timeout=30)


def cpu_seconds(proc: psutil.Process) -> float:
    """A process's CPU time so far, every thread's, user and system."""
    times = proc.cpu_times()
    return times.user + times.system


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
        return cpu_seconds(self.proc)

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

    async def rounds(
        self, group: str, ops: dict[str, Callable[[], Awaitable[float | None]]], reps: int, block: int = 10
    ) -> dict[str, list[float]]:
        """Wall times of each op, taken in turns: ``block`` calls of each per round, in a shuffled order.

        Scenarios and their floors are measured side by side, so that the machine's drift (these
        VMs are noisy) falls on both alike. Within a block an op's background work (the
        collaboration store's write of an edit) lands on its own next call, as it does when an agent
        repeats a call, rather than on a floor. An op that cleans up after itself (untimed) returns
        the seconds of its timed part. The server's CPU time is summed per op around its own calls.
        """
        names = list(ops)
        for _ in range(self.s.warmup):
            for name in names:
                await ops[name]()
        times: dict[str, list[float]] = {name: [] for name in names}
        cpu = dict.fromkeys(names, 0.0)
        rounds = max(1, reps // block)
        order = random.Random(len(names))  # the same shuffles every run: comparable runs
        with self.phase(group, rounds * block * len(names)):
            for _ in range(rounds):
                # Shuffled, not rotated: a rotation keeps each op's neighbours, so the background
                # work of one op's last call would always land on the same other op.
                for name in order.sample(names, len(names)):
                    before = self.server_cpu()
                    for _ in range(block):
                        start = time.perf_counter()
                        took = await ops[name]()
                        times[name].append(time.perf_counter() - start if took is None else took)
                    cpu[name] += self.server_cpu() - before
        for name in names:
            self.cpu_ms[name] = cpu[name] * 1000 / (rounds * block)
        return times
