"""Argument shapes shared by several tools."""

from __future__ import annotations

from typing import Any, Literal

from ..documents.storable import check_source_size, check_storable
from ..limits import Limits
from .toolkit import Args


class NewCell(Args):
    cell_type: Literal["code", "markdown", "raw"] = "code"
    source: str = ""
    metadata: dict[str, Any] | None = None


def check_new_cells(cells: list[NewCell], limits: Limits) -> None:
    for cell in cells:
        check_source_size(cell.source, limits.max_source_chars)
        check_storable(cell.metadata)
    check_source_size("".join(c.source for c in cells), limits.max_source_chars)
