"""The figures the suite reports (inputs tried, faults injected, edits verified after each kill, the
event loop's worst lag), gathered across its tests and printed once at the end of the run."""

from __future__ import annotations

import asyncio
import gc
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

FIGURES: dict[str, Any] = defaultdict(int)
LINES: list[str] = []


def count(name: str, n: int = 1) -> None:
    FIGURES[name] += n


def worst(name: str, value: float) -> None:
    FIGURES[name] = max(FIGURES.get(name, 0.0), value)


def note(line: str) -> None:
    """A line for the closing summary (also printed at once, for ``-s`` runs)."""
    LINES.append(line)
    print(line)


class Watchdog:
    """A task in the server's event loop that measures how late its own wake-ups are: the loop's lag.

    Under pytest-jupyter the server runs in the test's loop, so a task there sees what every tab,
    kernel message and save would see. ``lag`` is the worst lateness since the last ``reset``, counted
    only as far as the loop's thread was busy on the CPU meanwhile: on a shared machine the process
    may wait for a core, which no code of the server can cause or avoid (``wall`` keeps that too).
    ``gc_pause`` is the longest garbage-collector pause since ``reset``: the server shares the test's
    process, whose heap (pytest, hypothesis) makes a full collection cost more than in a server alone.
    """

    TICK = 0.01

    def __init__(self) -> None:
        self.lag = 0.0
        self.worst = 0.0
        self.wall = 0.0
        self.gc_pause = 0.0
        self._gc_started = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            start, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(self.TICK)
            late = time.perf_counter() - start - self.TICK
            busy = min(late, time.thread_time() - cpu)
            self.lag = max(self.lag, busy)
            self.worst = max(self.worst, busy)
            self.wall = max(self.wall, late)

    def reset(self) -> None:
        self.lag = 0.0
        self.gc_pause = 0.0

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        elif self._gc_started:
            self.gc_pause = max(self.gc_pause, time.perf_counter() - self._gc_started)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Watchdog]:
        self._task = asyncio.create_task(self._run(), name="reliability watchdog")
        gc.callbacks.append(self._on_gc)
        try:
            yield self
        finally:
            gc.callbacks.remove(self._on_gc)
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task
