"""CI: assert that a benchmark run (``--json FILE``) ran every scenario and produced figures.

The targets are not asserted (CI machines are noisy); a missing scenario, a missing or non-finite
figure, or a scenario that reported errors fails.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

SCENARIOS = (
    "MCP ping (floor)",
    "read_cells, 20-cell",
    "insert_cells, 20-cell",
    "update_cell, 20-cell",
    "read_cells, 500-cell",
    "insert_cells, 500-cell",
    "update_cell, 500-cell",
    "get_notebook outline, 500-cell",
    "edit visible to a 2nd Yjs client",
    "jupyter_client execute_interactive 1+1 (floor)",
    "insert_and_execute 1+1",
    "execute_code 1+1",
    "cell printing 100 MB: call time",
    "cell printing 100 MB, no MCP call: server RSS growth (peak)",
    "cell printing 100 MB: server RSS growth (peak)",
    "8 sessions concurrently: throughput",
    "8 sessions: one server thread's ceiling (1 / CPU per call)",
    "server CPU per ping",
    "server CPU per read_cells",
    "server CPU per insert_cells",
    "person's keystroke p95, 4 agents flat out",
    "person's REST p95, 4 agents flat out",
    "person's keystroke p95, 4 agents, gate off",
    "person's REST p95, 4 agents, gate off",
    "person's keystroke p95, 4 agents, gate at half the share",
    "person's REST p95, 4 agents, gate at half the share",
    "person's keystroke p95, during a 100 MB print",
    "person's REST p95, during a 100 MB print",
    "4 agents flat out under the gate: throughput",
    "4 agents' calls/s, a person typing, against nobody there",
    "person's keystroke p95, typing among 4 agents (issue 21)",
    "machine's floor: 4 agents' calls/s on another server, a person typing here, against nobody there",
    "machine's floor: person's keystroke p95, 4 agents on another server",
    "4 agents' calls/s, a person typing, against the machine's floor",
    "person's keystroke p95 among 4 agents, against the machine's floor",
)


def problems(report: dict) -> list[str]:
    rows = {row["scenario"]: row for row in report.get("rows", [])}
    found = []
    for name in SCENARIOS:
        row = rows.get(name)
        if row is None:
            found.append(f"{name}: missing")
            continue
        figures = [row["p50"], row["n"]] + ([] if row["kind"] == "info" else [row["floor"], row["versus"]])
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in figures):
            found.append(f"{name}: no figures ({figures})")
        elif row["n"] < 1 or (row["kind"] != "info" and row["floor"] <= 0):
            found.append(f"{name}: empty measurement (n={row['n']}, floor={row['floor']})")
        if row.get("extra", {}).get("errors"):
            found.append(f"{name}: {row['extra']['errors']} errors")
    return found


def main() -> int:
    report = json.loads(Path(sys.argv[1]).read_text())
    found = problems(report)
    for problem in found:
        print(f"benchmark check: {problem}", file=sys.stderr)
    print(f"benchmark check: {len(SCENARIOS) - len(found)} of {len(SCENARIOS)} scenarios produced figures")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
