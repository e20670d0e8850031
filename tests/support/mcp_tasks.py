"""The client's side of the tasks extension, built on the official SDK's extension surface: a
``ResultClaim`` for ``resultType: "task"`` whose resolver polls ``tasks/get``, as a host would."""

from __future__ import annotations

from typing import Literal

import anyio
import mcp_types as types
from mcp.client.extension import ClaimContext, ClientExtension, NotificationBinding, ResultClaim
from mcp.client.session import ClientSession
from mcp_types import CallToolResult, EmptyResult, Request

from jupyter_mcp_ext.protocol.tasks import EXTENSION, CreateTaskResult, DetailedTask, TaskParams

TERMINAL = ("completed", "failed", "cancelled")


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"  # the spec's Mcp-Name routing header


class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param = "taskId"


class UpdateTask(Request[TaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: TaskParams
    name_param = "taskId"


async def get_task(session: ClientSession, task_id: str) -> DetailedTask:
    return await session.send_request(GetTask(params=TaskParams(task_id=task_id)), DetailedTask)


async def cancel_task(session: ClientSession, task_id: str) -> EmptyResult:
    return await session.send_request(CancelTask(params=TaskParams(task_id=task_id)), EmptyResult)


async def update_task(session: ClientSession, task_id: str) -> EmptyResult:
    return await session.send_request(UpdateTask(params=TaskParams(task_id=task_id)), EmptyResult)


async def until_ended(session: ClientSession, task_id: str, timeout: float = 60) -> DetailedTask:
    with anyio.fail_after(timeout):
        while (task := await get_task(session, task_id)).status not in TERMINAL:
            await anyio.sleep(min((task.poll_interval_ms or 1000) / 1000, 0.2))
    return task


class Tasks(ClientExtension):
    """Declares the extension; a task answer is followed to its end and its result returned."""

    identifier = EXTENSION

    def claims(self) -> tuple[ResultClaim[CreateTaskResult]]:
        return (ResultClaim(result_type="task", model=CreateTaskResult, resolve=self._follow),)

    async def _follow(self, created: CreateTaskResult, ctx: ClaimContext) -> CallToolResult:
        task = await until_ended(ctx.session, created.task_id)
        assert task.status == "completed", task
        return CallToolResult.model_validate(task.result)


# -- 2025-11-25: the experimental tasks of the core protocol ----------------------------------------


async def start_legacy(client, tool: str, **arguments) -> types.CreateTaskResult:
    """A task-augmented ``tools/call``. The SDK's client cannot take a task handle there: it validates
    every 2025-11-25 ``tools/call`` result as a ``CallToolResult`` (mcp/client/session.py:591 against
    mcp_types/methods.py:289), so this one call goes through its session's dispatcher, unvalidated."""
    params = {"name": tool, "arguments": arguments, "task": {"ttl": 60_000}}
    raw = await client.session._dispatcher.send_raw_request("tools/call", params, None)
    return types.CreateTaskResult.model_validate(raw)


async def legacy_get(client, task_id: str) -> types.GetTaskResult:
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.GetTaskResult)


async def legacy_result(client, task_id: str) -> CallToolResult:
    request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
    return await client.session.send_request(request, CallToolResult)


async def legacy_cancel(client, task_id: str) -> types.CancelTaskResult:
    request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.CancelTaskResult)


class StatusWatcher(ClientExtension):
    """Receives ``notifications/tasks/status`` through the SDK's notification bindings (the SDK's
    own tables leave that notification out of 2025-11-25)."""

    identifier = "io.github.jupyter-mcp-ext/test-task-status"

    def __init__(self) -> None:
        self.seen: list[types.TaskStatusNotificationParams] = []

    def notifications(self) -> tuple[NotificationBinding[types.TaskStatusNotificationParams]]:
        return (
            NotificationBinding(
                method="notifications/tasks/status",
                params_type=types.TaskStatusNotificationParams,
                handler=self._seen,
            ),
        )

    async def _seen(self, params: types.TaskStatusNotificationParams) -> None:
        self.seen.append(params)
