"""Long runs as MCP tasks (the tasks extension of protocol 2026-07-28), driven by the official SDK's
client: a run outlives its request, tasks/get follows it, tasks/cancel interrupts it, the kernel's end
ends it, and one agent never sees another's task. Clients that do not declare tasks are unchanged."""

from __future__ import annotations

import time

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY, CallToolResult, Implementation
from traitlets.config import Config

from jupyter_mcp_ext.protocol.tasks import EXTENSION, CreateTaskResult

from ..auth.test_agent_tokens import mint
from ..support.mcp_client import HANDSHAKE, STATELESS, connect, ok, text
from ..support.mcp_tasks import Tasks, cancel_task, get_task, until_ended, update_task

SLEEP = "import time\nfor i in range({n}):\n    print('tick', i, flush=True)\n    time.sleep(0.5)\n'slept'"
# Runs until the test creates the file ``{go}``: alive for exactly as long as the test needs it.
UNTIL = (
    "import os, time\nwhile not os.path.exists({go!r}):\n    print('tick', flush=True)\n    time.sleep(0.05)\n"
    "'let go'"
)


APPROVAL_TIMEOUT = 8.0  # a call waiting for approval reports every quarter of it (2 s, not 5 s)


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    jp_server_config.MCPExtensionApp.approval_timeout = APPROVAL_TIMEOUT
    return jp_server_config


def tasks_client(server_url, headers, **options):
    return connect(server_url, headers, mode=STATELESS, extensions=[Tasks()], **options)


async def start(client, tool: str, **arguments) -> CreateTaskResult:
    created = await client.session.call_tool(tool, arguments, allow_claimed=True)
    assert isinstance(created, CreateTaskResult), created
    return created


async def until_message(client, task_id: str, needle: str, timeout: float = 30) -> str:
    with anyio.fail_after(timeout):
        while needle not in ((task := await get_task(client.session, task_id)).status_message or ""):
            assert task.status == "working", task
            await anyio.sleep(0.1)
    return task.status_message or ""


async def test_a_run_becomes_a_task_that_outlives_its_request(server_url, jp_auth_header, make_notebook):
    path = make_notebook("t.ipynb", cells=["x = 1"])
    async with tasks_client(server_url, jp_auth_header) as client:
        assert EXTENSION in (client.server_capabilities.extensions or {})  # server/discover says so
        began = time.monotonic()
        created = await start(client, "execute_code", path=path, code=SLEEP.format(n=6))
        assert created.status == "working" and created.poll_interval_ms and created.ttl_ms > 0
        assert time.monotonic() - began < 3  # the handle came at once; the run takes 3 s
        # The status message follows the run, as progress does for a plain call.
        assert "stdout" in await until_message(client, created.task_id, "stdout")
    # The client went away; the same agent (credential and client name) finds its task later.
    async with tasks_client(server_url, jp_auth_header) as again:
        ended = await until_ended(again.session, created.task_id)
        assert ended.status == "completed" and ended.result is not None
        result = CallToolResult.model_validate(ended.result)
        assert not result.is_error and result.structured_content["status"] == "ok"
        assert "tick 5" in text(result) and "'slept'" in text(result)
        # The SDK's claim resolver follows a task to its result: a host sees an ordinary result.
        inserted = await again.call_tool("insert_and_execute", {"path": path, "source": "41 + 1"})
        assert inserted.structured_content["status"] == "ok" and "42" in text(inserted)
        ran = await again.call_tool("execute_cells", {"path": path, "all": True})
        assert [c["status"] for c in ran.structured_content["cells"]] == ["ok", "ok"]


async def test_cancel_interrupts_the_run_and_a_finished_task_stays_as_it_ended(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("c.ipynb", cells=["import time"])
    async with tasks_client(server_url, jp_auth_header) as client:
        created = await start(client, "execute_code", path=path, code=SLEEP.format(n=600))
        await until_message(client, created.task_id, "stdout")
        await cancel_task(client.session, created.task_id)
        task = await get_task(client.session, created.task_id)
        assert task.status == "cancelled" and "interrupted" in (task.status_message or "")
        assert task.result is None
    async with connect(server_url, jp_auth_header, mode=STATELESS) as plain:
        # The kernel was interrupted: the next run does not wait behind a 300 s loop.
        after = await ok(plain, "execute_code", path=path, code="'free'", timeout=30)
        assert after["status"] == "ok"
    async with tasks_client(server_url, jp_auth_header) as client:
        done = await start(client, "execute_code", path=path, code="1 + 1")
        ended = await until_ended(client.session, done.task_id)
        assert ended.status == "completed"
        await cancel_task(client.session, done.task_id)  # too late: acknowledged, nothing changes
        again = await get_task(client.session, done.task_id)
        assert again.status == "completed" and again.result == ended.result
        await update_task(client.session, done.task_id)  # no input is ever asked: acknowledged


async def test_a_kernel_restart_ends_the_task_failed_saying_so(server_url, jp_auth_header, make_notebook):
    path = make_notebook("r.ipynb", cells=["x = 1"])
    async with tasks_client(server_url, jp_auth_header) as client:
        created = await start(client, "insert_and_execute", path=path, source=SLEEP.format(n=120))
        await until_message(client, created.task_id, "stdout")
        await ok(client, "restart_kernel", path=path)
        ended = await until_ended(client.session, created.task_id)
    assert ended.status == "failed" and "restarted" in (ended.status_message or "")
    assert ended.error is not None and "restarted" in ended.error["message"]
    # What the run printed before the restart is still there for the agent.
    assert "tick 0" in str(ended.error["data"])


async def test_another_agents_task_looks_exactly_like_an_unknown_one(
    server_url, panel, make_notebook, tmp_path
):
    path = make_notebook("o.ipynb", cells=["x = 1"])
    go = tmp_path / "go"
    _, alice = await mint(panel, "Alice's bot")
    _, bob = await mint(panel, "Bob's bot")
    info = Implementation(name="same-client", version="1")
    async with (
        tasks_client(server_url, alice, client_info=info) as a,
        tasks_client(server_url, bob, client_info=info) as b,
    ):
        created = await start(a, "execute_code", path=path, code=UNTIL.format(go=str(go)))
        unknown = "x" * len(created.task_id)
        for call in (get_task, cancel_task, update_task):
            with pytest.raises(MCPError) as theirs:
                await call(b.session, created.task_id)
            with pytest.raises(MCPError) as nobody:
                await call(b.session, unknown)
            assert theirs.value.code == nobody.value.code == INVALID_PARAMS
            assert theirs.value.message.replace(created.task_id, unknown) == nobody.value.message
        # Bob's cancel did nothing: Alice's run, still going, goes on to its end once let go.
        assert (await get_task(a.session, created.task_id)).status == "working"
        go.touch()
        ended = await until_ended(a.session, created.task_id)
        assert ended.status == "completed" and "'let go'" in str(ended.result)


@pytest.mark.parametrize("mode", [HANDSHAKE, STATELESS])
async def test_clients_without_tasks_keep_todays_answer(server_url, jp_auth_header, make_notebook, mode):
    path = make_notebook("p.ipynb", cells=["x = 1"])
    async with connect(server_url, jp_auth_header, mode=mode) as client:
        result = await client.call_tool(
            "execute_code", {"path": path, "code": SLEEP.format(n=3), "timeout": 0.5}
        )
        assert result.structured_content["status"] == "running" and "get_execution" in text(result)
        done = await ok(
            client, "get_execution", execution_id=result.structured_content["execution_id"], wait=30
        )
        assert done["status"] == "ok"
        if mode == STATELESS:
            with pytest.raises(MCPError) as refused:  # tasks/* asks for the extension first
                await get_task(client.session, "anything")
            assert refused.value.code == MISSING_REQUIRED_CLIENT_CAPABILITY


async def test_only_runs_become_tasks(server_url, jp_auth_header, make_notebook):
    path = make_notebook("q.ipynb", cells=["x = 1"])
    async with tasks_client(server_url, jp_auth_header) as client:
        read = await client.session.call_tool("get_notebook", {"path": path}, allow_claimed=True)
        assert isinstance(read, CallToolResult) and not read.is_error
        # Bad arguments are refused at once, not as a task.
        bad = await client.session.call_tool("execute_code", {"path": path}, allow_claimed=True)
        assert isinstance(bad, CallToolResult) and bad.is_error and "code" in text(bad)


async def test_a_persons_stop_ends_the_agents_tasks(server_url, jp_auth_header, make_notebook, panel):
    path = make_notebook("s.ipynb", cells=["x = 1"])
    async with tasks_client(server_url, jp_auth_header) as client:
        created = await start(client, "execute_code", path=path, code=SLEEP.format(n=600))
        await until_message(client, created.task_id, "stdout")
        stopped = await panel.post("stop")
        assert stopped["cancelled"] == 1 and stopped["interrupted"] == 1
    async with tasks_client(server_url, jp_auth_header) as again:  # connecting again, as after a Stop
        ended = await until_ended(again.session, created.task_id, timeout=10)
    # The run was interrupted and the call answered as a stopped call does: a tool error, not a hang.
    assert ended.status == "completed" and "stopped by the user" in (ended.status_message or "")
    assert ended.result is not None and ended.result["isError"]


async def test_a_task_waiting_for_a_persons_approval_says_so(server_url, panel, make_notebook):
    path = make_notebook("a.ipynb", cells=["x = 1"])
    _, bearer = await mint(panel, "Asker", "ask")
    async with tasks_client(server_url, bearer) as client:
        created = await start(client, "execute_code", path=path, code="print(6 * 7)")
        (approval,) = await panel.until(lambda: pending(panel))
        assert "approve" in await until_message(client, created.task_id, "waiting for a person to approve")
        await panel.post(f"approvals/{approval['id']}", {"decision": "approve"})
        ended = await until_ended(client.session, created.task_id)
    assert ended.status == "completed" and "42" in str(ended.result)


async def pending(panel) -> list:
    return (await panel.get("approvals"))["approvals"]
