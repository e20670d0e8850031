"""MCP prompts: a few ways to start well on a notebook, each with the notebook's outline embedded.

The outline is exactly what ``get_notebook`` returns, so the cell ids in the prompt are the ones the
tools take, and the agent can act without first calling get_notebook.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError

from ..errors import ToolError
from .notebooks import GetNotebook, get_notebook
from .resources import require
from .toolkit import ToolContext

if TYPE_CHECKING:
    from ..services import Services


@dataclass(frozen=True)
class _Prompt:
    name: str
    title: str
    description: str
    task: str


PROMPTS = [
    _Prompt(
        "explain_notebook",
        "Explain a notebook",
        "Explain what a notebook does, section by section.",
        "Explain what this notebook does for someone about to work on it: its purpose, the data it reads "
        "and writes, the steps in order (cite cell ids), and anything fragile or surprising. Read cells "
        "with read_cells where the outline is not enough. Change nothing.",
    ),
    _Prompt(
        "fix_failing_cell",
        "Fix the first failing cell",
        "Find the first cell whose output is an error and fix it.",
        "Find the first cell whose outputs show an error (read_cells with its id shows the traceback). "
        "Work out the cause, which may be in an earlier cell, then fix it with the smallest edit "
        "(update_cell with old_string/new_string). If you can run code (execute_cells), re-run the "
        "fixed cell and the ones depending on it and check that the error is gone. Say what you changed.",
    ),
    _Prompt(
        "clean_run",
        "Make it run top to bottom",
        "Turn a notebook into one that runs cleanly from top to bottom.",
        "Make this notebook run cleanly from a fresh kernel, top to bottom: imports and settings first, "
        "no cell depending on state made by a later cell or by deleted code, no leftover debugging cells, "
        "hard-coded absolute paths replaced by relative ones. Keep what the notebook computes the same. "
        "Prefer moving and editing cells (move_cell, update_cell) over rewriting them; for a large "
        "restructuring, get_notebook(format='py:percent') and write_notebook_text keep unchanged cells' "
        "ids and outputs. If you can run code, restart the kernel and run all cells to prove it.",
    ),
]
_BY_NAME = {p.name: p for p in PROMPTS}


class NotebookPrompts:
    """The prompt handlers the MCP server is built with."""

    def __init__(self, services: Services):
        self.services = services
        self._listing = types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=p.name,
                    title=p.title,
                    description=p.description,
                    arguments=[
                        types.PromptArgument(name="path", description="the notebook's path", required=True)
                    ],
                )
                for p in PROMPTS
            ]
        )

    async def list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return self._listing

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        prompt = _BY_NAME.get(params.name)
        if prompt is None:
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"Unknown prompt '{params.name}'; prompts/list names them."
            )
        path = (params.arguments or {}).get("path")
        if not path:
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"{prompt.name} needs the argument 'path' (a notebook)."
            )
        handler = await require(ctx, "read", f"prompt {prompt.name}")
        try:
            outline = await get_notebook.run(ToolContext(self.services, handler, ctx), GetNotebook(path=path))
        except ToolError as err:
            raise MCPError(code=types.INVALID_PARAMS, message=str(err)) from None
        text = f"{prompt.task}\n\nThe notebook's outline (get_notebook), with the cell ids the tools take:\n\n{outline.text}"
        return types.GetPromptResult(
            description=f"{prompt.description} ({outline.data['path']})",
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )
