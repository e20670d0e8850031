"""MCP prompts: a few ways to start well on a notebook, each with the notebook's outline embedded.

The outline is exactly what ``get_notebook`` returns, so the cell ids in the prompt are the ones the
tools take, and the agent can act without first calling get_notebook.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError

from ..errors import ToolError
from . import conformance
from .notebooks import GetNotebook, get_notebook
from .resources import require
from .toolkit import ToolContext

if TYPE_CHECKING:
    from ..services import Services


PATH = types.PromptArgument(name="path", description="the notebook's path", required=True)
CELL_ID = types.PromptArgument(
    name="cell_id", description="the cell to start from (default: the first failing)"
)
KERNEL_NAME = types.PromptArgument(
    name="kernel_name", description="the kernel to run it with (default: its own)"
)


@dataclass(frozen=True)
class _Prompt:
    name: str
    title: str
    description: str
    task: str
    more: tuple[types.PromptArgument, ...] = ()  # optional arguments after the path
    notes: dict[str, str] = field(default_factory=dict)  # argument -> sentence added when it is given

    @property
    def arguments(self) -> list[types.PromptArgument]:
        return [PATH, *self.more]


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
        more=(CELL_ID,),
        notes={"cell_id": "The cell to fix is {value}: start there rather than at the first error."},
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
        more=(KERNEL_NAME,),
        notes={"kernel_name": "Run it with the kernel '{value}' (set_kernel first if it uses another)."},
    ),
]
_BY_NAME = {p.name: p for p in PROMPTS}


class NotebookPrompts:
    """The prompt handlers the MCP server is built with (and the conformance suite's fixture, when on)."""

    def __init__(self, services: Services):
        self.services = services
        self.fixtures = bool(services.settings.get("conformance_tools"))
        prompts = [
            types.Prompt(name=p.name, title=p.title, description=p.description, arguments=p.arguments)
            for p in PROMPTS
        ]
        self._listing = types.ListPromptsResult(
            prompts=prompts + ([conformance.PROMPT] if self.fixtures else [])
        )

    def arguments_of(self, name: str) -> list[str] | None:
        """The argument names of prompt ``name``; None if there is no such prompt."""
        found = [p for p in self._listing.prompts if p.name == name]
        return [a.name for a in found[0].arguments or ()] if found else None

    async def list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return self._listing

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if self.fixtures and params.name == conformance.PROMPT.name:
            return conformance.prompt_result(params.arguments or {})
        prompt = _BY_NAME.get(params.name)
        if prompt is None:
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"Unknown prompt '{params.name}'; prompts/list names them."
            )
        arguments = params.arguments or {}
        path = arguments.get("path")
        if not path:
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"{prompt.name} needs the argument 'path' (a notebook)."
            )
        handler = await require(ctx, "read", f"prompt {prompt.name}")
        call = ToolContext(self.services, handler, ctx)
        try:
            outline = await get_notebook.run(call, GetNotebook(path=path))
            notes = [await self._note(prompt, name, value, outline.data) for name, value in arguments.items()]
        except ToolError as err:
            raise MCPError(code=types.INVALID_PARAMS, message=str(err)) from None
        finally:
            call.release()
        task = " ".join([prompt.task, *filter(None, notes)])
        text = f"{task}\n\nThe notebook's outline (get_notebook), with the cell ids the tools take:\n\n{outline.text}"
        return types.GetPromptResult(
            description=f"{prompt.description} ({outline.data['path']})",
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )

    async def _note(self, prompt: _Prompt, name: str, value: str, outline: dict[str, Any]) -> str | None:
        """The sentence an optional argument adds, once its value is checked (ToolError if wrong)."""
        if name == "path" or not value:
            return None
        if name not in prompt.notes:
            known = ", ".join(a.name for a in prompt.arguments)
            raise ToolError(f"{prompt.name} has no argument '{name}'; its arguments are {known}.")
        if name == "cell_id" and value not in {c["id"] for c in outline.get("cells", ())}:
            raise ToolError(f"No cell '{value}' in {outline['path']}; the outline below lists the ids.")
        if name == "kernel_name":
            await self.services.kernels.check_kernelspec(value)
        return prompt.notes[name].format(value=value)
