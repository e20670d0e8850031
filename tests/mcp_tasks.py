"""The client's side of the tasks extension, built on the official SDK's extension surface: a
``ResultClaim`` for ``resultType: "task"`` whose resolver polls ``tasks/get``, as a host would."""

from __future__ import annotations

from typing import Literal

import anyio
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
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
