"""The policy a person sets is enforced by the server: off, read-only, ask (with approval through the
API: approved, denied, timed out) and full; it survives a restart; stop ends everything agents do."""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation
from traitlets.config import Config

from jupyter_mcp_ext.people.policy import Policy

from ..support.mcp_client import STATELESS, connect, fails, ok, text
from ..support.panel import PanelAPI

APPROVAL_TIMEOUT = 6.0


@pytest.fixture
def policy_file(tmp_path):
    return tmp_path / "state" / "mcp-policy.json"


@pytest.fixture
def jp_server_config(jp_server_config: Config, policy_file) -> Config:
    jp_server_config.MCPExtensionApp.approval_timeout = APPROVAL_TIMEOUT
    jp_server_config.MCPExtensionApp.policy_file = str(policy_file)
    return jp_server_config


async def waiting(panel: PanelAPI) -> dict:
    """The first call waiting for approval, once there is one."""

    async def probe():
        return (await panel.get("approvals"))["approvals"]

    return (await panel.until(probe))[0]


async def test_the_default_is_full_and_a_mode_is_kept_across_restarts(panel, policy_file):
    assert await panel.get("policy") == {"mode": "full"}
    assert not policy_file.exists()  # installing the extension writes nothing until a person decides
    assert await panel.post("policy", {"mode": "ask"}) == {"mode": "ask"}
    assert json.loads(policy_file.read_text()) == {"mode": "ask"}
    assert Policy(policy_file).mode == "ask"  # what the next server start reads
    response = await panel.http.post(panel.base + "policy", json={"mode": "sometimes"})
    assert response.status_code == 400 and "full, ask, read-only, off" in response.text
    assert await panel.get("policy") == {"mode": "ask"}


async def test_off_refuses_every_tool(server_url, jp_auth_header, make_notebook, jp_root_dir, panel):
    path = make_notebook("off.ipynb", cells=["x = 1"])
    before = (jp_root_dir / path).read_bytes()
    await panel.post("policy", {"mode": "off"})
    async with connect(server_url, jp_auth_header) as agent:
        assert "paused by the user" in await fails(agent, "get_notebook", path=path)
        assert "paused by the user" in await fails(agent, "insert_cells", path=path, cells=[{"source": "y"}])
        assert "paused by the user" in await fails(agent, "list_files")
    assert (jp_root_dir / path).read_bytes() == before
    (entry,) = await panel.journal()
    assert entry["tool"] == "insert_cells" and entry["outcome"] == "denied" and entry["changes"] == []
    await panel.post("policy", {"mode": "full"})
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "insert_cells", path=path, cells=[{"source": "y"}])


async def test_read_only_lets_reads_through_and_refuses_changes(
    server_url, jp_auth_header, make_notebook, panel
):
    path = make_notebook("ro.ipynb", cells=["x = 1"])
    await panel.post("policy", {"mode": "read-only"})
    async with connect(server_url, jp_auth_header) as agent:
        (cell,) = (await ok(agent, "get_notebook", path=path))["cells"]
        await ok(agent, "read_cells", path=path)
        for tool, args in [
            ("update_cell", {"cell_id": cell["id"], "source": "x = 2"}),
            ("execute_cells", {"cell_ids": [cell["id"]]}),
            ("delete_cells", {"cell_ids": [cell["id"]]}),
        ]:
            assert "read-only" in await fails(agent, tool, path=path, **args)
        assert "read-only" in await fails(agent, "write_file", path="a.txt", content="x")
        assert (await ok(agent, "read_cells", path=path))["cells"][0]["source"] == "x = 1"


async def test_ask_lets_edits_through_and_runs_code_once_a_person_approves(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("ask.ipynb")
    await panel.post("policy", {"mode": "ask"})
    async with person_and_agent(path) as (person, agent):
        (cell_id,) = (await ok(agent, "insert_cells", path=path, cells=[{"source": "print(6 * 7)"}]))[
            "cell_ids"
        ]
        assert (await panel.get("approvals"))["approvals"] == []  # an edit does not wait
        call = asyncio.create_task(agent.call_tool("execute_cells", {"path": path, "cell_ids": [cell_id]}))
        approval = await waiting(panel)
        assert approval["tool"] == "execute_cells" and approval["kind"] == "run"
        assert approval["path"] == path and "print(6 * 7)" in approval["code"]
        assert approval["id"].startswith("ap-") and approval["since"].endswith("Z")
        await asyncio.sleep(0.3)
        assert not call.done()
        assert len(person.notebook.ycells[0]["outputs"]) == 0  # nothing ran while it waited
        assert await panel.post(f"approvals/{approval['id']}", {"decision": "approve"}) == {"ok": True}
        result = await call
        assert not result.is_error and "42" in text(result)
        assert (await panel.get("approvals"))["approvals"] == []
        await panel.post(f"approvals/{approval['id']}", {"decision": "approve"}, status=404)


async def test_ask_a_denied_call_does_nothing(server_url, jp_auth_header, make_notebook, jp_root_dir, panel):
    path = make_notebook("deny.ipynb", cells=["x = 1"])
    await panel.post("policy", {"mode": "ask"})
    async with connect(server_url, jp_auth_header) as agent:
        (cell,) = (await ok(agent, "get_notebook", path=path))["cells"]
        call = asyncio.create_task(agent.call_tool("delete_cells", {"path": path, "cell_ids": [cell["id"]]}))
        approval = await waiting(panel)
        assert approval["kind"] == "delete" and "x = 1" in approval["change"]
        await panel.post(f"approvals/{approval['id']}", {"decision": "deny"})
        result = await call
        assert result.is_error and "denied" in text(result)
        assert len((await ok(agent, "get_notebook", path=path))["cells"]) == 1

        write = asyncio.create_task(agent.call_tool("write_file", {"path": "out.txt", "content": "secret"}))
        approval = await waiting(panel)
        assert approval["kind"] == "write" and "secret" in approval["change"]
        await panel.post(f"approvals/{approval['id']}", {"decision": "deny"})
        assert (await write).is_error
    assert not (jp_root_dir / "out.txt").exists()
    assert [e["outcome"] for e in await panel.journal()] == ["denied", "denied"]


async def test_ask_clearing_outputs_waits_for_a_person_since_outputs_cannot_be_taken_back(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("outs.ipynb")
    async with person_and_agent(path) as (person, agent):
        (cell_id,) = (await ok(agent, "insert_cells", path=path, cells=[{"source": "print('result')"}]))[
            "cell_ids"
        ]
        await ok(agent, "execute_cells", path=path, cell_ids=[cell_id])
        await panel.post("policy", {"mode": "ask"})
        call = asyncio.create_task(agent.call_tool("clear_outputs", {"path": path, "cell_ids": [cell_id]}))
        approval = await waiting(panel)
        assert approval["tool"] == "clear_outputs" and approval["kind"] == "delete"
        await panel.post(f"approvals/{approval['id']}", {"decision": "deny"})
        assert (await call).is_error
        assert len(person.notebook.ycells[0]["outputs"]) == 1  # the person's result is still there


async def test_ask_a_call_no_one_answers_reports_progress_then_gives_up(
    server_url, jp_auth_header, make_notebook, panel
):
    path = make_notebook("wait.ipynb")
    await panel.post("policy", {"mode": "ask"})
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async with connect(server_url, jp_auth_header) as agent:
        started = asyncio.get_running_loop().time()
        result = await agent.call_tool(
            "execute_code", {"path": path, "code": "1 + 1"}, progress_callback=on_progress
        )
        waited = asyncio.get_running_loop().time() - started
    assert result.is_error and f"within {APPROVAL_TIMEOUT:g} s" in text(result)
    assert waited >= APPROVAL_TIMEOUT
    assert progress and "waiting for a person to approve execute_code" in progress[0]
    assert (await panel.get("approvals"))["approvals"] == []


async def test_ask_approving_the_rest_of_the_turn(server_url, jp_auth_header, make_notebook, panel):
    path = make_notebook("turn.ipynb")
    await panel.post("policy", {"mode": "ask"})
    async with connect(server_url, jp_auth_header) as agent:
        call = asyncio.create_task(agent.call_tool("execute_code", {"path": path, "code": "1"}))
        approval = await waiting(panel)
        await panel.post(f"approvals/{approval['id']}", {"decision": "approve", "rest_of_turn": True})
        assert not (await call).is_error
        await ok(agent, "execute_code", path=path, code="2")  # the same turn: no new approval


async def test_stop_cancels_calls_interrupts_agent_code_and_ends_sessions(
    server_url, jp_auth_header, make_notebook, panel, person_and_agent
):
    path = make_notebook("stop.ipynb", cells=["import time\ntime.sleep(60)"])
    async with person_and_agent(path) as (person, runner), connect(server_url, jp_auth_header) as asker:
        (cell,) = (await ok(runner, "get_notebook", path=path))["cells"]
        await ok(runner, "execute_code", path=path, code="1")  # the kernel is up
        run = asyncio.create_task(
            runner.call_tool("execute_cells", {"path": path, "cell_ids": [cell["id"]], "timeout": 120})
        )
        await person.wait_for(lambda nb: nb.ycells[0].get("execution_state") == "running")
        await panel.post("policy", {"mode": "ask"})
        ask = asyncio.create_task(asker.call_tool("execute_code", {"path": path, "code": "2"}))
        await waiting(panel)

        stopped = await panel.post("stop")
        assert stopped == {"cancelled": 2, "interrupted": 1, "sessions_ended": 2}
        for call in (run, ask):
            # The call ends at once: an error result, or no answer at all as its session ends with it.
            done, _ = await asyncio.wait({call}, timeout=30)
            assert done, "the call outlived the stop"
            if call.exception() is None:
                assert call.result().is_error and "stopped by the user" in text(call.result())
        await person.wait_for(
            lambda nb: any(o.get("ename") == "KeyboardInterrupt" for o in nb.ycells[0]["outputs"]), timeout=30
        )
        assert (await panel.get("approvals"))["approvals"] == []

        async def no_agents():
            return (await panel.get("sessions"))["sessions"] == []

        await panel.until(no_agents)  # the agents left with their sessions
        with pytest.raises(Exception) as gone:
            await runner.call_tool("list_files", {})
        assert "not found" in str(gone.value).lower() or "404" in str(gone.value), repr(gone.value)
    await panel.post("policy", {"mode": "full"})
    async with connect(server_url, jp_auth_header) as fresh:  # a new session works
        await ok(fresh, "list_files")


async def test_after_stop_a_sessionless_clients_next_call_is_refused_until_it_connects_again(
    server_url, jp_auth_header, panel
):
    info = Implementation(name="stateless-agent", version="1")
    async with connect(server_url, jp_auth_header, STATELESS, client_info=info) as agent:
        await ok(agent, "list_files")
        assert [s["client"]["name"] for s in (await panel.get("sessions"))["sessions"]] == ["stateless-agent"]
        stopped = await panel.post("stop")
        refusals = []
        for _ in range(2):  # not only the first call: every call, as a session's id stays unknown
            try:
                await agent.call_tool("list_files", {})
            except MCPError as err:
                refusals.append(str(err))
        listed = (await panel.get("sessions"))["sessions"]
    assert len(refusals) == 2 and all("Stopped by the user" in r for r in refusals), refusals
    assert stopped["sessions_ended"] == 1 and listed == []  # it left, as a session client does
    async with connect(server_url, jp_auth_header, STATELESS, client_info=info) as again:  # connecting again
        await ok(again, "list_files")
