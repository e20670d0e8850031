"""The final guard's measuring and cutting (tools/bounds.py), without a server: exact sizes, and a cut
that keeps what fits as it is (a 500-cell outline is cut on every get_notebook of a big notebook)."""

from __future__ import annotations

import json

from jupyter_mcp_ext.tools.bounds import bound_result, json_bytes, shrink
from jupyter_mcp_ext.tools.toolkit import ToolResult


def compact(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def counted(value: object) -> int:
    """What json_bytes counts: compact JSON, and one byte more per non-empty list or object (a
    separator after the last item: it errs on the safe side)."""
    if isinstance(value, dict):
        return compact(value) + bool(value) + sum(counted(v) - compact(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return compact(value) + bool(value) + sum(counted(v) - compact(v) for v in value)
    return compact(value)


def test_json_bytes_is_the_compact_json_size_of_any_value():
    values = [
        "plain",
        "é ü 漢字 🎉",
        'quotes " and \\ backslash, \n newline, \t tab, \x01 control, \u2028 separator',
        0,
        -12345678901234567890,
        3.25,
        -0.0,
        True,
        False,
        None,
        [],
        {},
        ("a", 1, None),
        {"k": [1, {"n": "é\n"}, [True, False]], "": "", "ü": {"x": None}},
        {1: "int key", 2.5: "float key"},
        [{"id": f"c{n}", "index": n, "outputs": "stdout: 60 lines", "count": None} for n in range(50)],
    ]
    for value in values:
        assert json_bytes(value) == counted(value), value
    assert json_bytes(values) == counted(values)


def test_json_bytes_stops_early_on_a_huge_value():
    huge = {"a": "x" * 10_000_000, "b": ["y" * 10] * 1_000_000}
    assert json_bytes(huge, stop_above=1000) > 1000


def test_what_fits_is_kept_as_the_same_object_and_only_the_overflow_is_cut():
    rows = [
        {"id": f"c{n:04}", "index": n, "first_line": f"# cell {n}", "outputs": "stdout: 1 line"}
        for n in range(500)
    ]
    data = {"path": "big.ipynb", "kernel": "python3", "cells": rows}
    cut, size = shrink(data, 20_000)
    assert size == counted(cut) <= 20_000
    assert cut["path"] == "big.ipynb" and cut["kernel"] == "python3"
    kept = cut["cells"]
    assert 0 < len(kept) < len(rows)
    assert all(a is b for a, b in zip(kept, rows, strict=False))  # not copies: measured once, kept
    assert counted({**data, "cells": rows[: len(kept) + 1]}) > 20_000  # as many as fit

    whole = {"path": "small.ipynb", "cells": rows[:3]}
    assert shrink(whole, 64_000) == (whole, counted(whole))


def test_a_first_item_too_big_is_cut_rather_than_dropped_and_later_ones_go():
    rows = [{"id": "c0", "source": "x" * 5000}, {"id": "c1", "source": "short"}]
    cut, size = shrink(rows, 1000)
    assert size == counted(cut) <= 1000
    assert len(cut) == 1 and cut[0]["id"] == "c0" and cut[0]["source"].endswith("…")


def test_the_outline_of_500_cells_is_cut_to_the_limit_with_its_note():
    rows = [
        {
            "id": f"{n:08x}-1234-4567-89ab-0123456789ab",
            "index": n,
            "type": "code",
            "execution_count": n + 1,
            "first_line": f"# cell {n}",
            "lines": 32,
            "outputs": "stdout: 60 lines",
        }
        for n in range(500)
    ]
    result = ToolResult(
        "outline", {"path": "big.ipynb", "kernel": "python3", "language": "python", "cells": rows}
    )
    cut = bound_result(result, 64_000)
    assert compact(cut.data) <= 64_000 and "result cut" in cut.data["cut"]
    assert cut.data["cells"] == rows[: len(cut.data["cells"])]
