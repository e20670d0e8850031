"""Long runs as MCP tasks: the tasks extension (``io.modelcontextprotocol/tasks``) of protocol
2026-07-28, and the experimental tasks of 2025-11-25.

A client that declares the extension on its ``tools/call`` (2026), or asks with ``params.task``
(2025-11-25), gets for the tools that may (``ToolSpec.task``) a task handle at once instead of the
result: the call goes on in the background, waiting for its run however long it takes, and
``tasks/get`` reports it (``working`` with the run's latest output as the status message, then the
tool's result: inline in 2026, from ``tasks/result`` in 2025-11-25). ``tasks/cancel`` cancels the
call, which interrupts its run as ``interrupt_on_cancel`` does. A run the kernel's restart or
shutdown ended is a ``failed`` task that says so. A task is seen only by the agent that started it
(its credential and client name): to anyone else it does not exist, exactly as an unknown id.
Clients that negotiate no tasks get today's answer (the result on time, then ``get_execution``).

The SDK (mcp 2.3) has the 2026 form through its extension surface: ``Server.add_request_handler``
for ``tasks/*``, ``Server.extensions`` for the capability, and a ``resultType: "task"`` result its
sieve lets through. For 2025-11-25 it has the types only: ``server.py`` answers a task-augmented
``tools/call`` in a middleware (the sieve would refuse a task handle there) and adds the
``tasks`` capability to the handshake.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.mcpserver import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..agents.directory import sessionless_key
from ..tools.authz import handler_of

log = logging.getLogger(__name__)

EXTENSION = "io.modelcontextprotocol/tasks"
LEGACY = "2025-11-25"  # the version whose core has the experimental tasks
RELATED = "io.modelcontextprotocol/related-task"
KEEP_MS = 3_600_000  # a finished task is kept this long after it ends, then forgotten
POLL_MS = 1_000
MAX_TASKS = 1_000  # kept in all (the oldest finished go first)
MAX_WORKING = 100  # working at once, per credential (or user): client names are the client's to pick

Status = Literal["working", "input_required", "completed", "failed", "cancelled"]


class _TaskFields(types.Result):
    task_id: str
    status: Status
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int
    poll_interval_ms: int | None = None


class CreateTaskResult(_TaskFields):
    """The answer to a ``tools/call`` that became a task."""

    result_type: Literal["task"] = "task"


class DetailedTask(_TaskFields):
    """``tasks/get``: the task, with the tool's result when completed or the error when failed."""

    result_type: Literal["complete"] = "complete"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskParams(types.RequestParams):
    task_id: str


class UpdateTaskParams(TaskParams):
    input_responses: dict[str, Any] | None = None


@dataclass(eq=False)
class Task:
    id: str
    owner: str  # the agent that may see it: its principal and client name
    principal: str  # the credential (or the person's token or login): what the cap counts, and the owner
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    ended: float | None = None
    status: Status = "working"
    message: str | None = "The call is running."
    result: types.CallToolResult | None = None
    error: dict[str, Any] | None = None
    job: asyncio.Task[None] | None = None
    legacy: bool = False  # created by a 2025-11-25 client
    session: Any = None  # that client's MCP session, told when the task ends (then let go)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    async def progress(self, message: str) -> None:
        """The tool's progress (``TaskHooks``): the run's latest output, as the status message."""
        if self.status == "working":
            self.message, self.updated = message, time.time()

    def view(self, model: type[_TaskFields]) -> Any:
        ttl = int(((self.ended or time.time()) - self.created) * 1000) + KEEP_MS
        extra: dict[str, Any] = {}
        if model is DetailedTask and self.status == "completed" and self.result is not None:
            extra["result"] = self.result.model_dump(by_alias=True, mode="json", exclude_none=True)
        if model is DetailedTask and self.status == "failed":
            extra["error"] = self.error
        return model(
            task_id=self.id,
            status=self.status,
            status_message=self.message,
            created_at=_iso(self.created),
            last_updated_at=_iso(self.updated),
            ttl_ms=ttl,
            poll_interval_ms=None if self.ended else POLL_MS,
            **extra,
        )

    def legacy_view(self) -> types.Task:
        """The task as 2025-11-25 has it (``ttl``, ``pollInterval``; no result inline)."""
        return types.Task(
            task_id=self.id,
            status=self.status,
            status_message=self.message,
            created_at=_iso(self.created),
            last_updated_at=_iso(self.updated),
            ttl=int(((self.ended or time.time()) - self.created) * 1000) + KEEP_MS,
            poll_interval=None if self.ended else POLL_MS,
        )


Call = Callable[[Task], Awaitable[types.CallToolResult]]


class TaskBoard:
    """The tasks of this server, by id, each with the agent that may see it."""

    def __init__(self) -> None:
        self.tasks: OrderedDict[str, Task] = OrderedDict()

    def wanted(self, ctx: ServerRequestContext[Any], may: bool, params: types.CallToolRequestParams) -> bool:
        """This call becomes a task: a tool that may (``may``), called by a client that declared tasks
        (2026) or asked for one (2025-11-25's ``params.task``)."""
        if not may:
            return False
        if ctx.protocol_version == LEGACY:
            return params.task is not None
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return False
        capabilities = ctx.session.client_capabilities
        return bool(capabilities and capabilities.extensions and EXTENSION in capabilities.extensions)

    def start(
        self, ctx: ServerRequestContext[Any], call: Call
    ) -> CreateTaskResult | types.CreateTaskResult | types.CallToolResult:
        principal, owner = sessionless_key(ctx, handler_of(ctx))
        working = sum(t.principal == principal and t.status == "working" for t in self.tasks.values())
        if working >= MAX_WORKING:
            return types.CallToolResult(
                content=[
                    types.TextContent(
                        type="text",
                        text=f"This user or credential already has {MAX_WORKING} runs going as tasks; wait for some to "
                        "end (tasks/get) or cancel them (tasks/cancel), then call again.",
                    )
                ],
                is_error=True,
            )
        task = Task(id=secrets.token_urlsafe(16), owner=owner, principal=principal)
        if ctx.protocol_version == LEGACY:
            task.legacy, task.session = True, ctx.session
        self.tasks[task.id] = task
        self._forget_old()
        task.job = asyncio.create_task(self._run(task, call), name=f"jupyter-mcp-ext task {task.id}")
        if task.legacy:
            return types.CreateTaskResult(task=task.legacy_view())
        return task.view(CreateTaskResult)

    async def _run(self, task: Task, call: Call) -> None:
        try:
            await self._follow(task, call)
        finally:
            task.done.set()
            session, task.session = task.session, None
            if session is not None:  # 2025-11-25: the client is told, on its session's stream
                with contextlib.suppress(Exception):
                    params = types.TaskStatusNotificationParams(**task.legacy_view().model_dump())
                    await session.send_notification(types.TaskStatusNotification(params=params))

    async def _follow(self, task: Task, call: Call) -> None:
        try:
            result = await call(task)
        except asyncio.CancelledError:  # tasks/cancel, a person's Stop, or the server stopping
            self._end(task, "cancelled", "Cancelled on the server (a person's Stop, or the server stopped).")
            return
        except Exception:  # the call handles tool failures; anything else is the server's
            log.exception("Task %s failed", task.id)
            self._end(task, "failed", "The call failed on the server (see the Jupyter server log).")
            task.error = {"code": types.INTERNAL_ERROR, "message": task.message}
            return
        data = result.structured_content or {}
        died = data.get("status") == "died" if isinstance(data, dict) else False
        if died:
            why = (data.get("error") or {}).get("evalue") or "The kernel stopped while this run was running."
            message = f"{why} The run ended there (execution {data.get('execution_id')})."
            self._end(task, "failed", message)
            task.result = result  # 2025-11-25's tasks/result gives it
            task.error = {
                "code": types.INTERNAL_ERROR,
                "message": message,
                "data": result.model_dump(by_alias=True, mode="json", exclude_none=True),
            }
        else:
            task.result = result
            # 2025-11-25 counts a tool error as failed; 2026 keeps "failed" for protocol errors.
            failed = result.is_error and task.legacy
            status: Status = "failed" if failed else "completed"
            self._end(task, status, _first_line(result) if result.is_error else "Done.")

    def _end(self, task: Task, status: Status, message: str) -> None:
        if task.status == "working":
            task.status, task.message = status, message
        task.ended = task.updated = time.time()
        self.tasks.move_to_end(task.id)

    def _forget_old(self) -> None:
        now = time.time()
        for task in [t for t in self.tasks.values() if t.ended and now - t.ended > KEEP_MS / 1000]:
            del self.tasks[task.id]
        finished = [t for t in self.tasks.values() if t.ended]
        for task in finished[: max(0, len(self.tasks) - MAX_TASKS)]:
            del self.tasks[task.id]

    def _find(self, ctx: ServerRequestContext[Any], task_id: str) -> Task:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            require_client_extension(ctx, EXTENSION)
        self._forget_old()
        task = self.tasks.get(task_id)
        # Another agent's task does not exist for this one: the credential (or the person's token or
        # login) must be the same, and the client's name too.
        if task is None or (task.principal, task.owner) != sessionless_key(ctx, handler_of(ctx)):
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"No task '{task_id[:64]}' (a finished task is kept for an hour, then forgotten).",
            )
        return task

    async def get(
        self, ctx: ServerRequestContext[Any], params: TaskParams
    ) -> DetailedTask | types.GetTaskResult:
        task = self._find(ctx, params.task_id)
        if ctx.protocol_version == LEGACY:
            return types.GetTaskResult(**task.legacy_view().model_dump())
        return task.view(DetailedTask)

    async def result(self, ctx: ServerRequestContext[Any], params: TaskParams) -> types.CallToolResult:
        """2025-11-25's ``tasks/result``: waits for the end, then answers as the call would have."""
        if ctx.protocol_version != LEGACY:  # the 2026 extension gives the result in tasks/get
            raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data="tasks/result")
        task = self._find(ctx, params.task_id)
        await task.done.wait()
        if task.status == "cancelled" or task.result is None:
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"Task '{task.id}' has no result: {task.message}"
            )
        meta = {**(task.result.meta or {}), RELATED: {"taskId": task.id}}
        return task.result.model_copy(update={"meta": meta})

    async def update(self, ctx: ServerRequestContext[Any], params: UpdateTaskParams) -> types.EmptyResult:
        self._find(ctx, params.task_id)  # these tasks never ask for input: responses are ignored
        return types.EmptyResult()

    async def cancel(
        self, ctx: ServerRequestContext[Any], params: TaskParams
    ) -> types.EmptyResult | types.CancelTaskResult:
        """Cancel the call, which interrupts its run; a finished task stays as it ended (and 2025-11-25
        says so with an error)."""
        task = self._find(ctx, params.task_id)
        if ctx.protocol_version == LEGACY and task.status != "working":
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Task '{task.id}' already ended ({task.status}); nothing to cancel.",
            )
        if task.status == "working" and task.job is not None:
            task.status, task.updated = "cancelled", time.time()
            task.message = "Cancelled: the run was interrupted (its cells still queued were skipped)."
            task.job.cancel()
            await asyncio.wait({task.job}, timeout=5)  # the interrupt is sent before the ack
        if ctx.protocol_version == LEGACY:
            return types.CancelTaskResult(**task.legacy_view().model_dump())
        return types.EmptyResult()

    async def stop(self) -> None:
        for task in list(self.tasks.values()):
            if task.job is not None and not task.job.done():
                task.job.cancel()
                with contextlib.suppress(BaseException):
                    await task.job


def _first_line(result: types.CallToolResult) -> str:
    """A tool error's reason, as the status message (a task's result says it whole)."""
    text = next((b.text for b in result.content if isinstance(b, types.TextContent)), "")
    return "The tool returned an error: " + text.split("\n", 1)[0][:200]


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).isoformat().replace("+00:00", "Z")
