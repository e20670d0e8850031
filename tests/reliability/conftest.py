"""The reliability suite: bounded (minutes, loopback only) tries at breaking the server."""

from __future__ import annotations

from typing import Any

from .figures import FIGURES, LINES


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not FIGURES and not LINES:
        return
    terminalreporter.section("reliability figures")
    for name in sorted(FIGURES):
        value = FIGURES[name]
        terminalreporter.write_line(
            f"{name}: {value:.3f}" if isinstance(value, float) else f"{name}: {value}"
        )
    for line in LINES:
        terminalreporter.write_line(line)
