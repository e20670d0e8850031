"""The tools, grouped by what they act on. ``ALL`` is the order ``tools/list`` shows them in."""

from __future__ import annotations

from ..toolkit import ToolSpec
from . import cells, execution, files, kernels, notebooks

ALL: list[ToolSpec] = [*notebooks.TOOLS, *cells.TOOLS, *execution.TOOLS, *kernels.TOOLS, *files.TOOLS]
