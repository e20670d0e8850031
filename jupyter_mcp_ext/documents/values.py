"""What a shared document can hold, checked before any edit so a refused write changes nothing."""

from __future__ import annotations

from typing import Any

from ..errors import ToolError

_INT_RANGE = range(-(2**63), 2**63)


def check_storable(value: Any, what: str = "metadata") -> None:
    """Refuse values the shared document cannot hold (integers past 64 bits), before any edit."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
        return
    if isinstance(value, int):
        if value not in _INT_RANGE:
            raise ToolError(
                f"The {what} holds the integer {value}, too large to store; write it as a string."
            )
    elif isinstance(value, dict):
        for item in value.values():
            check_storable(item, what)
    elif isinstance(value, (list, tuple)):
        for item in value:
            check_storable(item, what)


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
