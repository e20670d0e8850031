"""A person's approval holds against the agent that asked (issue 18): what was approved is what
runs, or nothing does; "the rest of this turn" reaches only the same tool on the same notebook, for
a few calls and a fixed time; what waits is bounded; invisible characters are flagged."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest
from mcp_types import Implementation
from traitlets.config import Config

from ..support.mcp_client import STATELESS, connect, fails, ok, text
from ..support.panel import PanelAPI

TURN_CALLS = 3
TURN_SECONDS = 60.0  # far more than the calls of a turn take on a loaded machine: the count ends it
SHORT_TURN_SECONDS = 5.0  # for the test that waits a turn out: one call in its first fifth


@pytest.fixture
def turn_seconds() -> float:
    """``approval_turn_seconds``; a test that waits the turn out asks for a shorter one."""
    return TURN_SECONDS


MAX_CHARS = 50_000


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path, turn_seconds: float) -> Config:
    app = jp_server_config.MCPExtensionApp
    app.approval_timeout = 30.0
    app.policy_file = str(tmp_path / "state" / "policy.json")
    app.max_pending_approvals = 2
    app.max_approval_chars = MAX_CHARS
    app.approval_turn_calls = TURN_CALLS
    app.approval_turn_seconds = turn_seconds
    return jp_server_config


async def waiting(panel: PanelAPI, tool: str | None = None) -> dict:
    """The first call (of ``tool``) waiting for approval, once there is one."""

    async def probe():
        return [a for a in (await panel.get("approvals"))["approvals"] if tool in (None, a["tool"])]

    return (await panel.until(probe))[0]


async def answer(panel: PanelAPI, approval: dict, decision: str = "approve", **more) -> None:
    await panel.post(f"approvals/{approval['id']}", {"decision": decision, **more})


async def ask(panel: PanelAPI) -> None:
    await panel.post("policy", {"mode": "ask"})


# -- 1. what was approved is what runs ---------------------------------------------------------


async def test_a_cell_edited_while_its_run_waits_is_not_run(server_url, jp_auth_header, make_notebook, panel):
    path = make_notebook("swap.ipynb", cells=["print('harmless')", "x = 1"])
    await ask(panel)
    async with connect(server_url, jp_auth_header) as agent:
        first, second = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        run = asyncio.create_task(
            agent.call_tool("execute_cells", {"path": path, "cell_ids": [first, second]})
        )
        approval = await waiting(panel)
        assert "print('harmless')" in approval["code"]
        # Edits are not gated: the agent swaps the code under the card.
        await ok(agent, "update_cell", path=path, cell_id=first, source="print('swapped in')")
        await answer(panel, approval)
        result = await run
        assert result.is_error, text(result)
        assert "changed after the person was asked" in text(result) and "Call again" in text(result)
        cells = (await ok(agent, "read_cells", path=path))["cells"]
        assert cells[0]["outputs"] == [] and cells[1]["outputs"] == []  # neither cell ran
        assert "changed after the person was asked" in (await panel.entry("execute_cells"))["error"]

        # Asked again, the card shows what is there now, and that runs.
        run = asyncio.create_task(agent.call_tool("execute_cells", {"path": path, "cell_ids": [first]}))
        approval = await waiting(panel)
        assert "print('swapped in')" in approval["code"]
        await answer(panel, approval)
        assert "swapped in" in text(await run)


async def test_a_cell_added_while_a_run_of_all_cells_waits_is_not_run(
    server_url, jp_auth_header, make_notebook, panel
):
    path = make_notebook("all.ipynb", cells=["a = 1"])
    await ask(panel)
    async with connect(server_url, jp_auth_header) as agent:
        run = asyncio.create_task(agent.call_tool("execute_cells", {"path": path, "all": True}))
        approval = await waiting(panel)
        await ok(agent, "insert_cells", path=path, cells=[{"source": "print('unseen')"}])
        await answer(panel, approval)
        result = await run
        assert result.is_error and "changed after the person was asked" in text(result)
        assert all(c["outputs"] == [] for c in (await ok(agent, "read_cells", path=path))["cells"])


async def test_a_run_of_unknown_cells_fails_without_asking_anyone(
    server_url, jp_auth_header, make_notebook, panel
):
    """Else the card would show nothing to run, and cells made with that id later would run unseen."""
    path = make_notebook("none.ipynb", cells=["a = 1"])
    await ask(panel)
    async with connect(server_url, jp_auth_header) as agent:
        assert "nope" in await fails(agent, "execute_cells", path=path, cell_ids=["nope"])
    assert (await panel.get("approvals"))["approvals"] == []


async def test_cells_edited_while_their_deletion_waits_are_kept(
    server_url, jp_auth_header, make_notebook, panel
):
    path = make_notebook("del.ipynb", cells=["old = 1", "keep = 2"])
    await ask(panel)
    async with connect(server_url, jp_auth_header) as agent:
        first = (await ok(agent, "get_notebook", path=path))["cells"][0]["id"]
        delete = asyncio.create_task(agent.call_tool("delete_cells", {"path": path, "cell_ids": [first]}))
        approval = await waiting(panel)
        assert "old = 1" in approval["change"]
        await ok(agent, "update_cell", path=path, cell_id=first, source="precious = 'work'")
        await answer(panel, approval)
        assert "changed after the person was asked" in text(await delete)
        assert len((await ok(agent, "get_notebook", path=path))["cells"]) == 2


async def test_a_notebook_edited_while_its_deletion_waits_is_kept(
    server_url, jp_auth_header, make_notebook, jp_root_dir, panel
):
    path = make_notebook("gone.ipynb", cells=["a = 1"])
    await ask(panel)
    async with connect(server_url, jp_auth_header) as agent:
        (cell,) = (await ok(agent, "get_notebook", path=path))["cells"]
        delete = asyncio.create_task(agent.call_tool("delete_path", {"path": path}))
        approval = await waiting(panel)
        await ok(agent, "update_cell", path=path, cell_id=cell["id"], source="a = 'changed since'")
        await answer(panel, approval)
        result = await delete
        assert result.is_error and "changed after the person was asked" in text(result)
    assert (jp_root_dir / path).exists()


async def test_a_notebook_only_opened_while_its_deletion_waits_is_deleted(
    server_url, jp_auth_header, make_notebook, jp_root_dir, panel
):
    """Its saved cells when shown, its live cells once approved: the same text, so no false alarm."""
    path = make_notebook("closed.ipynb", cells=["a = 1", "b = 2"])
    await ask(panel)
    async with connect(server_url, jp_auth_header) as agent:
        delete = asyncio.create_task(agent.call_tool("delete_path", {"path": path}))
        approval = await waiting(panel)
        await ok(agent, "get_notebook", path=path)  # opens the notebook's live room
        await answer(panel, approval)
        assert not (result := await delete).is_error, text(result)
    assert not (jp_root_dir / path).exists()


async def test_a_file_changed_while_its_overwrite_waits_is_kept(
    server_url, jp_auth_header, jp_root_dir, panel
):
    (jp_root_dir / "notes.txt").write_text("first version\n")
    await ask(panel)
    async with connect(server_url, jp_auth_header) as agent:
        write = asyncio.create_task(
            agent.call_tool("write_file", {"path": "notes.txt", "content": "agent's\n"})
        )
        approval = await waiting(panel)
        (jp_root_dir / "notes.txt").write_text("a person's newer version\n")
        await answer(panel, approval)
        assert "changed after the person was asked" in text(await write)
        assert (jp_root_dir / "notes.txt").read_text() == "a person's newer version\n"

        # Unchanged, the approved write goes through.
        write = asyncio.create_task(
            agent.call_tool("write_file", {"path": "notes.txt", "content": "agent's\n"})
        )
        await answer(panel, await waiting(panel))
        assert not (await write).is_error
    assert (jp_root_dir / "notes.txt").read_text() == "agent's\n"


async def test_code_is_shown_whole_and_a_call_over_the_bound_is_refused(
    server_url, jp_auth_header, make_notebook, panel
):
    path = make_notebook("big.ipynb")
    await ask(panel)
    long = "x = 1\n" * 5_000 + "print('the end')"  # 30,016 characters: more than the card once showed
    async with connect(server_url, jp_auth_header) as agent:
        run = asyncio.create_task(agent.call_tool("execute_code", {"path": path, "code": long}))
        approval = await waiting(panel)
        assert approval["code"] == long  # whole, never cut
        await answer(panel, approval, "deny")
        await run

        huge = "# padding\n" * (MAX_CHARS // 10) + "import os"
        started = time.monotonic()
        message = await fails(agent, "insert_and_execute", path=path, source=huge)
        assert time.monotonic() - started < 10  # refused at once, not after a wait
        assert f"at most {MAX_CHARS:,}" in message and "Nothing was done" in message
        assert (await panel.get("approvals"))["approvals"] == []
        assert (await ok(agent, "get_notebook", path=path))["cells"] == []


# -- 2. "the rest of this turn" ------------------------------------------------------------------


async def test_the_rest_of_a_turn_is_the_same_tool_on_the_same_notebook_for_a_few_calls(
    server_url, jp_auth_header, make_notebook, panel
):
    a = make_notebook("a.ipynb")
    b = make_notebook("b.ipynb")
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "execute_code", path=a, code="0")  # the kernel is up: its start is not in the turn
        await ask(panel)
        first = asyncio.create_task(agent.call_tool("execute_code", {"path": a, "code": "1"}))
        approval = await waiting(panel)
        assert approval["rest_of_turn"] == {"calls": TURN_CALLS, "seconds": TURN_SECONDS}
        await answer(panel, approval, rest_of_turn=True)
        assert not (await first).is_error
        await ok(agent, "execute_code", path=a, code="2")  # the same tool, the same notebook: unasked

        for tool, args in [
            ("execute_code", {"path": b, "code": "import os"}),  # another notebook
            ("restart_kernel", {"path": a}),  # another tool
            ("set_kernel", {"path": a, "kernel_name": "python3"}),
            ("execute_cells", {"path": a, "all": True}),
        ]:
            if tool == "execute_cells":
                await ok(agent, "insert_cells", path=a, cells=[{"source": "3"}])
            other = asyncio.create_task(agent.call_tool(tool, args))
            held = await waiting(panel, tool)
            assert held["path"] == args["path"]
            await answer(panel, held, "deny")
            assert "denied" in text(await other)

        await ok(agent, "execute_code", path=a, code="4")
        await ok(agent, "execute_code", path=a, code="5")  # the third call after the approval
        over = asyncio.create_task(agent.call_tool("execute_code", {"path": a, "code": "6"}))
        await answer(panel, await waiting(panel), "deny")  # a fourth is asked about again
        assert (await over).is_error


@pytest.mark.parametrize("turn_seconds", [SHORT_TURN_SECONDS])
async def test_the_rest_of_a_turn_ends_a_fixed_time_after_the_approval(
    server_url, jp_auth_header, make_notebook, panel, turn_seconds
):
    """It does not slide: an agent that keeps calling does not keep the permission."""
    path = make_notebook("time.ipynb")
    async with connect(server_url, jp_auth_header) as agent:
        # The kernel is up before the approval: a kernel slow to start (a loaded machine) took the
        # whole turn, and the call meant to be inside it was asked about again.
        await ok(agent, "execute_code", path=path, code="0")
        await ask(panel)
        first = asyncio.create_task(agent.call_tool("execute_code", {"path": path, "code": "1"}))
        await answer(panel, await waiting(panel), rest_of_turn=True)
        approved = time.monotonic()
        assert not (await first).is_error
        await asyncio.sleep(turn_seconds / 5)
        await ok(agent, "execute_code", path=path, code="2")  # within the time: unasked
        assert time.monotonic() - approved < turn_seconds, "the machine is too slow for this turn"
        await asyncio.sleep(max(0.0, approved + turn_seconds + 0.5 - time.monotonic()))
        late = asyncio.create_task(agent.call_tool("execute_code", {"path": path, "code": "3"}))
        await answer(panel, await waiting(panel), "deny")
        assert (await late).is_error


# -- 6b. what waits is bounded -------------------------------------------------------------------


async def test_an_agent_may_have_only_a_few_calls_waiting(server_url, jp_auth_header, make_notebook, panel):
    path = make_notebook("many.ipynb")
    await ask(panel)
    async with connect(server_url, jp_auth_header) as agent, connect(server_url, jp_auth_header) as other:
        calls = [
            asyncio.create_task(agent.call_tool("execute_code", {"path": path, "code": f"{n}"}))
            for n in range(2)
        ]

        async def two():
            return len((await panel.get("approvals"))["approvals"]) == 2

        await panel.until(two)
        message = await fails(agent, "execute_code", path=path, code="3")
        assert "2 of your calls already wait" in message and "at most 2" in message
        # Another agent is not held back by this one.
        theirs = asyncio.create_task(other.call_tool("execute_code", {"path": path, "code": "4"}))

        async def three():
            return len((await panel.get("approvals"))["approvals"]) == 3

        await panel.until(three)
        for approval in (await panel.get("approvals"))["approvals"]:
            await answer(panel, approval, "deny")
        for done in await asyncio.gather(*calls, theirs):
            assert done.is_error and "denied" in text(done)


async def test_new_sessions_do_not_lift_the_bound_on_waiting_calls(
    server_url, jp_auth_header, make_notebook, panel
):
    """A new session (or a stateless client under a new name) is a new agent: the agents of one
    credential together may have four times an agent's waiting calls (here 2 x 4)."""
    path = make_notebook("sessions.ipynb")
    await ask(panel)
    async with contextlib.AsyncExitStack() as stack:
        agents = [
            await stack.enter_async_context(
                connect(
                    server_url,
                    jp_auth_header,
                    STATELESS,
                    client_info=Implementation(name=f"a{n}", version="1"),
                )
            )
            for n in range(5)
        ]
        calls = [
            asyncio.create_task(agent.call_tool("execute_code", {"path": path, "code": f"{n}"}))
            for agent in agents[:4]
            for n in range(2)
        ]

        async def eight():
            return len((await panel.get("approvals"))["approvals"]) == 8

        await panel.until(eight)
        message = await fails(agents[4], "execute_code", path=path, code="9")
        assert "8 of the calls made with your credential" in message and "at most 8" in message
        for approval in (await panel.get("approvals"))["approvals"]:
            await answer(panel, approval, "deny")
        await asyncio.gather(*calls)


# -- 7. invisible characters ---------------------------------------------------------------------


async def test_an_approval_with_invisible_characters_says_so(
    server_url, jp_auth_header, make_notebook, panel
):
    path = make_notebook("bidi.ipynb")
    await ask(panel)
    async with connect(server_url, jp_auth_header) as agent:
        for code, hidden in [
            ('m = "\u202e";import os;os.system("id")#"', True),
            ("x = 1\u200b", True),
            ("a = 1\r# hides the line before in a terminal", True),
            ("print('plain')\n\tpass  # tabs and line breaks are fine", False),
            ("print('日本語 and é are visible')", False),
        ]:
            run = asyncio.create_task(agent.call_tool("execute_code", {"path": path, "code": code}))
            approval = await waiting(panel)
            assert approval["hidden_controls"] is hidden, code
            assert approval["code"] == code
            await answer(panel, approval, "deny")
            await run


# -- an interrupt ends a person's code only with their approval -------------------------------------


async def test_an_interrupt_of_the_persons_own_code_waits_for_them_but_an_agents_run_stops_at_once(
    server_url, jp_auth_header, make_notebook, panel, jp_serverapp, tmp_path
):
    """Under ``ask`` an agent may stop a run it started (approved already), but the person's own
    code running in the notebook's kernel is ended only if the person agrees: denied, it goes on."""
    path = make_notebook("interrupt.ipynb")
    go = tmp_path / "go"  # the person's code runs until the test creates it
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "execute_code", path=path, code="started = 1")  # the notebook's kernel
        (kernel,) = (await ok(agent, "list_kernels"))["kernels"]
        person = jp_serverapp.kernel_manager.get_kernel(kernel["id"]).client()
        person.start_channels()
        try:
            person.execute(
                f"import os, time\nwhile not os.path.exists({str(go)!r}):\n    time.sleep(0.05)\n"
                "print('the person finished')"
            )
            await ask(panel)
            call = asyncio.create_task(agent.call_tool("interrupt_kernel", {"path": path}))
            approval = await waiting(panel, "interrupt_kernel")
            await answer(panel, approval, "deny")
            assert (await call).is_error
            go.touch()
            reply = await person.get_shell_msg(timeout=30)
            assert reply["content"]["status"] == "ok"  # not a KeyboardInterrupt: it ran to its end

            # The agent's own run, approved by the person, it may stop without asking again.
            run = asyncio.create_task(
                agent.call_tool(
                    "execute_code", {"path": path, "code": "import time\ntime.sleep(60)", "timeout": 1}
                )
            )
            await answer(panel, await waiting(panel, "execute_code"))
            running = await run
            assert not running.is_error and "execution_id" in (running.structured_content or {})
            assert (await ok(agent, "interrupt_kernel", path=path))["interrupted"]
            assert not (await panel.get("approvals"))["approvals"]
            ended = await ok(
                agent, "get_execution", execution_id=running.structured_content["execution_id"], wait=20
            )
            assert ended["status"] == "interrupted"
        finally:
            person.stop_channels()
