"""A run belongs to the credential that started it: another agent on the same person's server learns
neither its id nor its output, and the person's own runs (their Jupyter token) stay theirs."""

from __future__ import annotations

import re

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation

from ..auth.test_agent_tokens import mint
from ..protocol.test_tasks import UNTIL
from ..support.mcp_client import HANDSHAKE, connect, fails, ok, text
from ..support.mcp_tasks import legacy_cancel, legacy_get, legacy_result, start_legacy

EXECUTION = re.compile(r"execution ([0-9a-f]{12})")


def client(server_url, headers, name: str):
    return connect(server_url, headers, mode=HANDSHAKE, client_info=Implementation(name=name, version="1"))


async def running_execution(agent, task_id: str) -> str:
    """The run's id, as its task's status message gives it to the agent that started it."""
    with anyio.fail_after(30):
        while not (found := EXECUTION.search((await legacy_get(agent, task_id)).status_message or "")):
            await anyio.sleep(0.1)
    return found.group(1)


async def unknown_execution(agent, execution_id: str) -> None:
    """Refused exactly as an id that never was: nothing says the run exists."""
    theirs = await fails(agent, "get_execution", execution_id=execution_id)
    nobody = await fails(agent, "get_execution", execution_id="0" * len(execution_id))
    assert theirs.replace(execution_id, "0" * len(execution_id)) == nobody
    assert "No execution" in theirs


async def test_another_agent_learns_neither_the_id_nor_the_output_of_a_run(
    server_url, panel, make_notebook, tmp_path
):
    path = make_notebook("shared.ipynb", cells=["x = 1"])
    go = tmp_path / "go"
    _, a_token = await mint(panel, "A", "full")
    _, b_token = await mint(panel, "B", "full")
    _, c_token = await mint(panel, "C", "read-only")
    async with (
        client(server_url, a_token, "Agent A") as a,
        client(server_url, b_token, "Agent B") as b,
        client(server_url, c_token, "Agent C") as c,
    ):
        created = await start_legacy(a, "execute_code", path=path, code=UNTIL.format(go=str(go)))
        task_id = created.task.task_id
        a_run = await running_execution(a, task_id)
        for other in (b, c):
            for call in (legacy_get, legacy_cancel):
                with pytest.raises(MCPError):
                    await call(other, task_id)
        # B's own run waits for A's on the notebook's kernel: it says so, without A's id.
        queued = await b.call_tool("execute_code", {"path": path, "code": "print('b ran')", "timeout": 0.5})
        said = text(queued)
        assert queued.structured_content["status"] == "queued", said
        assert a_run not in said and "another agent" in said
        for other in (b, c):
            await unknown_execution(other, a_run)
        # A still reads its own run, and it goes on to its end once let go.
        assert (await ok(a, "get_execution", execution_id=a_run))["status"] == "running"
        go.touch()
        assert (await legacy_result(a, task_id)).structured_content["status"] == "ok"
        b_run = queued.structured_content["execution_id"]
        assert "b ran" in text(await b.call_tool("get_execution", {"execution_id": b_run, "wait": 30}))
        await unknown_execution(a, b_run)


async def test_the_persons_own_runs_are_the_persons(
    server_url, jp_auth_header, panel, make_notebook, tmp_path
):
    path = make_notebook("mine.ipynb", cells=["x = 1"])
    go = tmp_path / "go"
    _, agent_token = await mint(panel, "Helper", "full")
    async with client(server_url, jp_auth_header, "My own client") as mine:
        started = await mine.call_tool(
            "execute_code", {"path": path, "code": UNTIL.format(go=str(go)), "timeout": 0.5}
        )
        run = started.structured_content["execution_id"]
    async with (
        client(server_url, agent_token, "My own client") as agent,
        client(server_url, jp_auth_header, "Another of my clients") as again,
    ):
        await unknown_execution(agent, run)
        assert (await ok(again, "get_execution", execution_id=run))["status"] == "running"
        go.touch()
        assert (await ok(again, "get_execution", execution_id=run, wait=30))["status"] == "ok"
