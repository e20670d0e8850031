"""What a shared document can hold, checked before any edit so a refused write changes nothing."""

from __future__ import annotations

import json
import math
from typing import Any

from ..errors import ToolError

_INT_RANGE = range(-(2**63), 2**63)


def check_storable(value: Any, what: str = "metadata", where: str = "") -> None:
    """Refuse values the shared document cannot hold or save, before any edit: integers past 64
    bits, and NaN or Infinity (JSON has neither; one in a notebook makes every later save fail)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ToolError(
                f"The {what} holds {json.dumps(value)} at '{where or '.'}', not a finite number: JSON and "
                "notebooks cannot store it. Use null, a string such as 'inf', or a finite number."
            )
    elif isinstance(value, int):
        if value not in _INT_RANGE:
            raise ToolError(
                f"The {what} holds the integer {value}, too large to store; write it as a string."
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            check_storable(item, what, f"{where}.{key}" if where else str(key))
    elif isinstance(value, (list, tuple)):
        for n, item in enumerate(value):
            check_storable(item, what, f"{where}[{n}]")


def nonfinite_at(value: Any, where: str = "") -> str | None:
    """Where the first NaN or Infinity in ``value`` is (``cells[0].metadata.n``), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "."
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = nonfinite_at(
            item, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}".lstrip(".")
        )
        if found is not None:
            return found
    return None


def storable(value: Any) -> Any:
    """A kernel's output made safe to store: integers past 64 bits become floats."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value not in _INT_RANGE:
        return float(value)
    if isinstance(value, dict):
        return {k: storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable(v) for v in value]
    return value


def check_source_size(text: str, limit: int) -> None:
    if len(text) > limit:
        raise ToolError(
            f"Source of {len(text):,} characters is over this server's limit of {limit:,}. "
            "Split it over several cells, or keep large data in a file the notebook reads."
        )
