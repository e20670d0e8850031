"""Tools that run code in the notebook's kernel and report what it produced."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from typing import Any

from jupyter_core.utils import ensure_async
from pydantic import Field

from ..agents.directory import principal_of
from ..documents import cells as nb
from ..documents import storable
from ..errors import ToolError
from ..kernels.runs import Run
from . import outputs
from .toolkit import Args, ToolContext, ToolResult, ToolSpec, arr, obj, tool

RUN_RESULT = obj(
    execution_id="string", status="string", cells=arr("object"), error=["object", "null"], truncated="object"
)
TIMEOUT = Field(None, description="seconds to wait (default 120); the cell keeps running after")


class ExecuteCells(Args):
    path: str
    cell_ids: list[str] | None = None
    all: bool = False
    timeout: float | None = TIMEOUT
    stop_on_error: bool = True
    interrupt_on_cancel: bool = False


@tool(
    "execute_cells",
    ExecuteCells,
    RUN_RESULT,
    resource="kernels",
    action="execute",
    also=(("contents", "write"),),
    task=True,
)
async def execute_cells(ctx: ToolContext, args: ExecuteCells) -> ToolResult:
    """Run cells (by id, or all=true) in order in the notebook's kernel; outputs stream live into the
    notebook. Cancelling interrupts only if interrupt_on_cancel."""
    if not args.cell_ids and not args.all:
        raise ToolError("Say which cells: cell_ids=[...] or all=true.")
    path, doc = await ctx.open_notebook(args.path)
    indices = range(len(doc.ycells)) if args.all else nb.find_all(doc, args.cell_ids or [])
    cells = nb.sources(doc, indices, code_only=True)
    ctx.confirm_shown("execute_cells", cells)  # what runs is these strings: no later read
    if not cells:
        raise ToolError("None of those cells is a code cell; only code cells run.")
    run = await _start(ctx, path, doc, [*cells], args.stop_on_error)
    return await _finish(ctx, run, args.timeout, args.interrupt_on_cancel)


class InsertAndExecute(Args):
    path: str
    source: str
    before: str | None = Field(None, description="cell id")
    after: str | None = Field(None, description="cell id")
    index: int | None = None
    timeout: float | None = TIMEOUT
    interrupt_on_cancel: bool = False


@tool(
    "insert_and_execute",
    InsertAndExecute,
    obj(cell_id="string", **RUN_RESULT["properties"]),
    resource="kernels",
    action="execute",
    also=(("contents", "write"),),
    task=True,
)
async def insert_and_execute(ctx: ToolContext, args: InsertAndExecute) -> ToolResult:
    """Insert a code cell (default: at the end) and run it; returns its id and outputs. Cancelling
    interrupts only if interrupt_on_cancel."""
    storable.check_source_size(args.source, ctx.services.limits.max_source_chars)
    path, doc = await ctx.open_notebook(args.path)
    at = nb.position(doc, before=args.before, after=args.after, index=args.index)
    (cell_id,) = nb.insert(doc, at, [{"cell_type": "code", "source": args.source}])
    run = await _start(ctx, path, doc, [(cell_id, args.source)], True)
    result = await _finish(ctx, run, args.timeout, args.interrupt_on_cancel)
    result.data = {"cell_id": cell_id, **result.data}
    result.text = f"cell {cell_id} at index {at}\n{result.text}"
    return result


class ExecuteCode(Args):
    path: str
    code: str
    timeout: float | None = TIMEOUT
    interrupt_on_cancel: bool = False


@tool("execute_code", ExecuteCode, RUN_RESULT, resource="kernels", action="execute", task=True)
async def execute_code(ctx: ToolContext, args: ExecuteCode) -> ToolResult:
    """Run code in the notebook's kernel without adding a cell (scratch: nothing is saved).
    Cancelling interrupts only if interrupt_on_cancel."""
    path, doc = await ctx.open_notebook(args.path)
    run = await _start(ctx, path, doc, [(None, args.code)], True)
    return await _finish(ctx, run, args.timeout, args.interrupt_on_cancel)


class GetExecution(Args):
    execution_id: str
    wait: float = Field(0, description="seconds to wait for it to end")


@tool("get_execution", GetExecution, RUN_RESULT, resource="kernels", action="execute")
async def get_execution(ctx: ToolContext, args: GetExecution) -> ToolResult:
    """State and outputs so far of a run that outlived its call."""
    run = ctx.services.execution.get(args.execution_id, owner_of(ctx))
    return await _finish(ctx, run, args.wait, False, started_here=False)


async def _start(
    ctx: ToolContext, path: str, doc: Any, cells: list[tuple[str | None, str]], stop: bool
) -> Run:
    kernel_name, _ = nb.kernel_info(doc)

    async def may_start() -> None:
        # Starting the notebook's kernel is what Jupyter's own API guards with these permissions.
        await ctx.require("sessions", "write", "starting a kernel")
        await ctx.require("kernels", "write", "starting a kernel")

    kernel_id = await ctx.services.kernels.bind(path, kernel_name, before_start=may_start)
    return await ctx.services.execution.start(path, kernel_id, cells, stop_on_error=stop, owner=owner_of(ctx))


def owner_of(ctx: ToolContext) -> str | None:
    """Who calls: a run belongs to the agent credential that started it (the person's own token or
    login for theirs), never to a user name several agents share or a name a client picks."""
    return principal_of(ctx.request, ctx.handler) if ctx.handler is not None else None


async def _finish(
    ctx: ToolContext, run: Run, timeout: float | None, interrupt_on_cancel: bool, *, started_here: bool = True
) -> ToolResult:
    """Wait for the run up to the timeout, reporting outputs as progress, then shape the result."""
    limits = ctx.services.limits
    wait = limits.default_timeout if timeout is None else max(0.0, min(timeout, limits.max_timeout))
    if ctx.task is not None:
        # A task waits for the run's end, however long; cancelling it (tasks/cancel) interrupts the run.
        wait, interrupt_on_cancel = math.inf, True
    changed = asyncio.Event()

    def listener(_cell: Any) -> None:
        changed.set()

    run.listeners.append(listener)
    deadline = time.monotonic() + wait
    reported = 0
    try:
        if started_here:
            # The run's id comes first, so a client that drops mid-call can find it with get_execution.
            await _progress(ctx, 0, f"execution {run.id} started")
        while not run.done.is_set() and (left := deadline - time.monotonic()) > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(None if left == math.inf else left):
                    done = asyncio.ensure_future(run.done.wait())
                    update = asyncio.ensure_future(changed.wait())
                    try:
                        await asyncio.wait({done, update}, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        done.cancel()
                        update.cancel()
            if changed.is_set():
                changed.clear()
                reported += 1
                await _progress(ctx, reported, f"execution {run.id}: {_last_line(run)}")
                # At most ~10 progress notifications a second, without delaying the end of the run.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(run.done.wait(), min(0.1, max(0.0, deadline - time.monotonic())))
    except asyncio.CancelledError:
        if interrupt_on_cancel and not run.done.is_set():
            # Stop this run only: its cells still waiting are dropped, and the kernel is interrupted
            # only if what it runs now is this run's (not a person's or another agent's cell).
            for cell in run.cells:
                if cell.status == "queued":
                    cell.status = "skipped"
            if ctx.services.execution.running_on(run.kernel_id) in run.cells:
                with contextlib.suppress(Exception):
                    await ensure_async(ctx.services.kernels.kernels.interrupt_kernel(run.kernel_id))
        raise
    finally:
        run.listeners.remove(listener)
    result = shape(run, ctx.services.limits, queued_note=started_here)
    if ctx.view:
        result.view = run_view(run)
    return result


async def _progress(ctx: ToolContext, progress: float, message: str) -> None:
    """On the request's stream as progress, or, for a task, as its status (its request has ended)."""
    if ctx.task is not None:
        await ctx.task.progress(message)
    else:
        await ctx.request.session.report_progress(progress, message=message)


def shape(run: Run, limits: Any, *, queued_note: bool = True) -> ToolResult:
    budget = outputs.Budget(limits)
    cells, blocks = [], []
    status = run.status
    error = None
    for cell in run.cells:
        rendered, shaped = [], []
        for output in cell.model.outputs:
            text, form = outputs.render(output, budget)
            rendered.append(text)
            shaped.append(form)
        entry: dict[str, Any] = {
            "status": cell.status,
            "execution_count": cell.execution_count,
            "outputs": shaped,
        }
        if cell.cell_id is not None:
            entry["id"] = cell.cell_id
        if cell.note:
            entry["note"] = cell.note
        cells.append(entry)
        if cell.error and error is None:
            error = {
                **cell.error,
                "traceback": outputs.strip_ansi("\n".join(cell.error.get("traceback") or [])),
            }
        label = f"[{cell.execution_count}] " if cell.execution_count is not None else ""
        head = f"--- {label}{cell.cell_id or 'code'}: {cell.status}" + (
            f" ({cell.note})" if cell.note else ""
        )
        blocks.append("\n".join([head, *rendered]))
    elapsed = (run.ended or time.monotonic()) - run.started
    lines = [f"execution {run.id}: {status} after {elapsed:.1f} s", *blocks]
    if status in ("running", "queued"):
        behind = f" (queued behind {run.queued_behind})" if run.queued_behind and queued_note else ""
        lines.append(
            f"Still {status}{behind}: the cell keeps running in the notebook. Call get_execution(execution_id="
            f"'{run.id}', wait=60) to wait for it, or interrupt_kernel(path) to stop it."
        )
    notes = budget.notes()
    if notes:
        lines.append("[" + "; ".join(notes) + "]")
    data = {
        "execution_id": run.id,
        "status": status,
        "cells": cells,
        "error": error,
        "truncated": budget.truncation(),
    }
    return ToolResult("\n".join(lines), data, images=budget.images)


def run_view(run: Run) -> dict[str, Any]:
    """The run's cells for a host's view (``apps/``): the code, its state and all its outputs."""
    cells = [
        {
            "id": cell.cell_id,
            "type": "code",
            "source": cell.code,
            "execution_count": cell.execution_count,
            "status": cell.status,
            "outputs": list(cell.model.outputs),
        }
        for cell in run.cells
    ]
    return {"path": run.path, "execution_id": run.id, "status": run.status, "cells": cells}


def _last_line(run: Run) -> str:
    for cell in reversed(run.cells):
        for output in reversed(cell.model.outputs):
            text = outputs.one_line(output, 80)
            if text:
                return text
    return ""


TOOLS: list[ToolSpec[Any]] = [execute_cells, insert_and_execute, execute_code, get_execution]
