"""The person at work, as the benchmarks time it: a keystroke and a file-browser listing in turns,
and each latency's p95 against the same person's when the server is idle."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx

from .bench import Bench
from .report import Row, ms, pct

PACE = 0.04  # seconds from one keystroke to the next: 25 keys and 25 folder listings a second


async def sample(
    peer: Any, tab: Any, http: httpx.AsyncClient, url: str, until: Callable[[], bool]
) -> dict[str, list[float]]:
    """A keystroke and a REST call in turns, a pair begun every ``PACE`` seconds (back to back when
    a pair takes longer), until ``until()`` is true. A fixed pace, so that a server that answers
    sooner is not given more of the person's work to do in the same second."""
    keys: list[float] = []
    rest: list[float] = []
    due = time.perf_counter()
    while not until():
        due += PACE
        before = len(tab.sources()[0])
        start = time.perf_counter()
        peer.insert_text(0, 0, "k")
        await tab.wait_for(lambda nb, before=before: len(tab.sources()[0]) > before, timeout=60)
        keys.append(time.perf_counter() - start)
        start = time.perf_counter()
        (await http.get(f"{url}api/contents", params={"content": "1"})).raise_for_status()
        rest.append(time.perf_counter() - start)
        due = max(due, time.perf_counter())
        await asyncio.sleep(due - time.perf_counter())
    return {"keystroke": ms(keys), "rest": ms(rest)}


def for_seconds(seconds: float) -> Callable[[], bool]:
    end = time.monotonic() + seconds
    return lambda: time.monotonic() >= end


def ratio_row(
    bench: Bench, name: str, idle: list[float], busy: list[float], target: float | None, against: str = "idle"
) -> None:
    """``busy`` p95 against ``idle`` p95 (both in ms, from the same run; ``against`` names what
    ``idle`` was: the person alone, or another floor); p50s in extra."""
    bench.raw[name] = busy
    p95_idle, p95_busy = pct(idle, 0.95), pct(busy, 0.95)
    bench.add(
        Row(
            name,
            "ms",
            p95_busy,
            None,
            len(busy),
            p95_idle,
            f"{against} p95",
            "ratio" if target is not None else "info",
            target or 0,
            f"<= {target}x {against}" if target is not None else "-",
            {
                "p50_ms": statistics.median(busy),
                f"{against}_p50_ms": statistics.median(idle),
                f"p50_vs_{against}": statistics.median(busy) / statistics.median(idle),
            },
        )
    )
