"""The experimental tasks of protocol 2025-11-25, driven by the official SDK's handshake client:
``params.task`` on the runs, ``tasks/get``, ``tasks/result``, ``tasks/cancel`` and the status
notification. The same board serves them as the 2026 extension (``test_tasks.py``)."""

from __future__ import annotations

import time

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, Implementation

from jupyter_mcp_ext.protocol.tasks import RELATED

from ..auth.test_agent_tokens import mint
from ..support.mcp_client import HANDSHAKE, connect, ok, text
from ..support.mcp_tasks import StatusWatcher, legacy_cancel, legacy_get, legacy_result, start_legacy
from .test_tasks import SLEEP


async def until_status(client, task_id: str, needle: str, timeout: float = 30) -> str:
    with anyio.fail_after(timeout):
        while needle not in ((task := await legacy_get(client, task_id)).status_message or ""):
            assert task.status == "working", task
            await anyio.sleep(0.1)
    return task.status_message or ""


async def test_a_run_becomes_a_task_with_its_result_and_a_status_notification(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("t.ipynb", cells=["x = 1"])
    watcher = StatusWatcher()
    async with connect(server_url, jp_auth_header, mode=HANDSHAKE, extensions=[watcher]) as client:
        assert client.protocol_version == "2025-11-25"
        tasks = client.server_capabilities.tasks
        assert tasks is not None and tasks.requests.tools.call is not None and tasks.cancel is not None
        listed = {t.name: t for t in (await client.list_tools()).tools}
        runs = {n for n, t in listed.items() if t.execution and t.execution.task_support == "optional"}
        assert runs == {"execute_cells", "insert_and_execute", "execute_code"}
        began = time.monotonic()
        created = await start_legacy(client, "execute_code", path=path, code=SLEEP.format(n=6))
        assert created.task.status == "working" and time.monotonic() - began < 3
        assert "stdout" in await until_status(client, created.task.task_id, "stdout")
        result = await legacy_result(client, created.task.task_id)  # waits for the end
        assert result.structured_content["status"] == "ok" and "tick 5" in text(result)
        assert result.meta[RELATED] == {"taskId": created.task.task_id}
        ended = await legacy_get(client, created.task.task_id)
        assert ended.status == "completed" and ended.poll_interval is None
        with anyio.fail_after(10):
            while not watcher.seen:
                await anyio.sleep(0.1)
        assert [(n.task_id, n.status) for n in watcher.seen] == [(created.task.task_id, "completed")]
        with pytest.raises(MCPError) as late:  # 2025-11-25: a finished task cannot be cancelled
            await legacy_cancel(client, created.task.task_id)
        assert late.value.code == INVALID_PARAMS and "already ended (completed)" in late.value.message
        # Without params.task, the same call answers as it always has.
        plain = await ok(client, "execute_code", path=path, code="1 + 1")
        assert plain["status"] == "ok"


async def test_cancel_interrupts_and_a_tool_error_or_a_restart_fails_the_task(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("c.ipynb", cells=["x = 1"])
    async with connect(server_url, jp_auth_header, mode=HANDSHAKE) as client:
        created = await start_legacy(client, "execute_code", path=path, code=SLEEP.format(n=600))
        await until_status(client, created.task.task_id, "stdout")
        cancelled = await legacy_cancel(client, created.task.task_id)
        assert cancelled.status == "cancelled"
        with pytest.raises(MCPError) as none:
            await legacy_result(client, created.task.task_id)
        assert none.value.code == INVALID_PARAMS and "no result" in none.value.message
        after = await ok(client, "execute_code", path=path, code="'free'", timeout=30)
        assert after["status"] == "ok"  # the kernel was interrupted, not left looping
        bad = await start_legacy(client, "execute_code", path="missing.ipynb", code="1")
        refused = await legacy_result(client, bad.task.task_id)
        assert refused.is_error and (await legacy_get(client, bad.task.task_id)).status == "failed"
        long = await start_legacy(client, "insert_and_execute", path=path, source=SLEEP.format(n=120))
        await until_status(client, long.task.task_id, "stdout")
        await ok(client, "restart_kernel", path=path)
        died = await legacy_result(client, long.task.task_id)
        assert died.structured_content["status"] == "died" and "tick 0" in text(died)
        ended = await legacy_get(client, long.task.task_id)
        assert ended.status == "failed" and "restarted" in (ended.status_message or "")


async def test_another_agents_task_looks_unknown(server_url, panel, make_notebook):
    path = make_notebook("o.ipynb", cells=["x = 1"])
    _, alice = await mint(panel, "Alice's bot")
    _, bob = await mint(panel, "Bob's bot")
    info = Implementation(name="same-client", version="1")
    async with (
        connect(server_url, alice, mode=HANDSHAKE, client_info=info) as a,
        connect(server_url, bob, mode=HANDSHAKE, client_info=info) as b,
    ):
        created = await start_legacy(a, "execute_code", path=path, code=SLEEP.format(n=10))
        task_id = created.task.task_id
        unknown = "x" * len(task_id)
        for call in (legacy_get, legacy_cancel, legacy_result):
            with pytest.raises(MCPError) as theirs:
                await call(b, task_id)
            with pytest.raises(MCPError) as nobody:
                await call(b, unknown)
            assert theirs.value.code == nobody.value.code == INVALID_PARAMS
            assert theirs.value.message.replace(task_id, unknown) == nobody.value.message
        result = await legacy_result(a, task_id)
        assert result.structured_content["status"] == "ok"
