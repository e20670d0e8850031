"""What agents see: the toolkit that declares tools, the tools grouped by what they act on, resources and prompts.

``ALL`` is the order ``tools/list`` shows them in.
"""

from __future__ import annotations

from . import cells, execution, files, kernels, notebooks
from .toolkit import ToolSpec

ALL: list[ToolSpec] = [*notebooks.TOOLS, *cells.TOOLS, *execution.TOOLS, *kernels.TOOLS, *files.TOOLS]
