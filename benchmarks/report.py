"""The table: one row per scenario, its floor and target, printed as Markdown and kept as JSON."""

from __future__ import annotations

import platform
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

MB = 1024 * 1024


@dataclass
class Row:
    scenario: str
    unit: str  # "ms", "calls/s", "MB"
    p50: float
    p95: float | None
    n: int
    floor: float
    floor_name: str
    kind: str  # "diff" (p50 - floor <= target), "ratio" (p50 / floor <= target), "min_ratio" (>=), "max",
    # "min" (p50 >= target), "info" (no target; beside its floor if it has one)
    target: float
    target_text: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def versus(self) -> float:
        if self.kind == "diff":
            return self.p50 - self.floor
        if self.kind in ("max", "min"):
            return self.p50
        return self.p50 / self.floor if self.floor else float("inf")

    @property
    def met(self) -> bool:
        if self.kind in ("min_ratio", "min"):
            return self.versus >= self.target and not self.extra.get("errors")
        return self.versus <= self.target

    def versus_text(self) -> str:
        if self.kind == "diff":
            return f"{self.versus:+.2f} ms"
        if self.kind == "max":
            return f"{self.versus:.1f} MB"
        if self.kind == "min":
            return f"{self.versus:.1f} {self.unit}"
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


def spread(values: list[float], unit: str = "") -> str:
    """The interquartile range of a few figures, or the figures themselves when there are under four."""
    if len(values) < 4:
        return ", ".join(f"{v:.2f}{unit}" for v in values)
    q = statistics.quantiles(values, n=4)
    return f"{q[0]:.2f}-{q[2]:.2f}{unit}"


def ms(seconds: list[float]) -> list[float]:
    return [s * 1000 for s in seconds]


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

        if r.kind == "info" and r.floor_name in ("", "-"):
            cells = [r.scenario, fmt(r.p50), fmt(r.p95), "-", "-", "-", "-"]
        elif r.kind in ("info", "min"):  # a figure beside its floor without a target, or a bare minimum
            floor = "-" if r.kind == "min" else f"{fmt(r.floor)} ({r.floor_name})"
            met = "-" if r.kind == "info" else ("yes" if r.met else "**no**")
            cells = [r.scenario, fmt(r.p50), fmt(r.p95), floor, r.versus_text(), r.target_text, met]
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
