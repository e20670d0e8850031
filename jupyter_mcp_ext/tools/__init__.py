"""The tools, grouped by what they act on. ``ALL`` is the order ``tools/list`` shows them in."""

from __future__ import annotations

from ..toolkit import ToolSpec
from . import cells, files, notebooks

ALL: list[ToolSpec] = [*notebooks.TOOLS, *cells.TOOLS, *files.TOOLS]
