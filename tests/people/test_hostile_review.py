"""A second hostile review of the person's controls (after issue 18's fixes): each test is a hole an
agent could use with MCP calls alone, closed."""

from __future__ import annotations

import asyncio
import json
import os
import time

import pytest
from mcp.shared.exceptions import MCPError
from traitlets.config import Config

from ..support.mcp_client import STATELESS, connect, text
from .test_approvals import answer, ask, waiting


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path) -> Config:
    jp_server_config.MCPExtensionApp.policy_file = str(tmp_path / "state" / "policy.json")
    return jp_server_config


def _names_root(message: str, root: os.PathLike[str]) -> bool:
    return str(root) in message or os.path.realpath(root) in message


async def test_reading_a_broken_notebook_as_a_resource_never_names_the_server_folder(
    server_url, jp_auth_header, jp_root_dir
):
    (jp_root_dir / "broken.ipynb").write_text("{not json", encoding="utf-8")
    async with connect(server_url, jp_auth_header) as agent:
        with pytest.raises(MCPError) as raised:
            await agent.read_resource("notebook:///broken.ipynb")
    message = str(raised.value)
    assert "broken.ipynb" in message and "Unreadable" in message, message
    assert not _names_root(message, jp_root_dir), message


async def test_the_capabilities_resource_names_no_file_of_the_server(server_url, jp_auth_header, tmp_path):
    async with connect(server_url, jp_auth_header) as agent:
        text = (await agent.read_resource("jupyter://capabilities")).contents[0].text
    assert '"max_result_bytes"' in text
    assert str(tmp_path) not in text and "policy_file" not in text, text


async def test_an_approval_flags_stacked_marks_and_smuggled_variation_selectors(
    server_url, jp_auth_header, make_notebook, panel
):
    """Not invisible one by one: forty U+0336 after a comment's letter draw over the code line below
    it on the card, and a run of variation selectors behind an emoji carries bytes nothing shows."""
    path = make_notebook("marks.ipynb")
    await ask(panel)
    async with connect(server_url, jp_auth_header) as agent:
        for code, hidden in [
            ("# note" + "\u0336\u0337\u0338" * 14 + "\nimport os; os.system('id')", True),
            ("payload = '\U0001f600" + "\ufe01\ufe0a\ufe03\ufe0f" * 8 + "'", True),
            ("s = 'a\u034fb'  # a combining grapheme joiner, drawn as nothing", True),
            (
                "print('\u2764\ufe0f Ti\u1ebfng Vi\u1ec7t, e\u0323\u0302, \u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd')",
                False,
            ),
        ]:
            run = asyncio.create_task(agent.call_tool("execute_code", {"path": path, "code": code}))
            approval = await waiting(panel)
            assert approval["hidden_controls"] is hidden, code
            await answer(panel, approval, "deny")
            await run


async def test_a_listen_stream_watches_a_bounded_number_of_notebooks(
    server_url, jp_auth_header, make_notebook
):
    """Each URI of a listen is resolved when it opens and sent each change: 30,000 spellings of one
    notebook (percent-encoded letter by letter) held the server busy for three minutes."""
    path = make_notebook("abcdefghijk.ipynb", cells=["x = 1"])
    name = path.removesuffix(".ipynb")
    spellings = [
        "notebook:///"
        + "".join(f"%{ord(c):02X}" if (n >> i) & 1 else c for i, c in enumerate(name))
        + ".ipynb"
        for n in range(1001)
    ]
    async with connect(server_url, jp_auth_header, STATELESS) as client:
        started = time.monotonic()
        with pytest.raises(MCPError) as raised:
            async with client.listen(resource_subscriptions=spellings):
                pass
        assert "at most 1,000 notebooks" in str(raised.value) and "1,001" in str(raised.value)
        assert time.monotonic() - started < 5
        async with client.listen(resource_subscriptions=spellings[:3] * 400):  # the same three, repeated
            pass


async def test_a_gated_call_with_a_path_no_tool_takes_is_refused_before_anyone_is_asked(
    server_url, jp_auth_header, panel
):
    """An approval bounded its code, not its path: 32 waiting calls of 3 MB paths each were held,
    served whole to every panel fetch and sent as each call's progress."""
    await ask(panel)
    async with connect(server_url, jp_auth_header) as agent:
        for tool, args in [
            ("execute_code", {"code": "1"}),
            ("restart_kernel", {}),
            ("set_kernel", {"kernel_name": "python3"}),
            ("write_file", {"content": "x"}),
        ]:
            result = await asyncio.wait_for(
                agent.call_tool(tool, {"path": "d/" * 3000 + "a.ipynb", **args}), 10
            )
            assert result.is_error and "at most 4,096" in text(result), (tool, text(result)[:200])
        moved = await agent.call_tool("rename_path", {"path": "a.txt", "new_path": "d/" * 3000})
        assert moved.is_error and "new_path is 6,000 characters" in text(moved), text(moved)[:200]
    assert (await panel.get("approvals"))["approvals"] == []


async def test_an_agents_record_never_holds_a_megabyte_path_or_cell_id(
    server_url, jp_auth_header, make_notebook, panel
):
    """Whatever a call names is shown as where the agent works: the sessions list (and each event to
    every panel) carried a 1 MB path from a call the tool refused."""
    path = make_notebook("here.ipynb", cells=["x = 1"])
    async with connect(server_url, jp_auth_header) as agent:
        assert (await agent.call_tool("read_cells", {"path": "p" * 1_000_000})).is_error
        assert (
            await agent.call_tool("update_cell", {"path": path, "cell_id": "c" * 1_000_000, "source": ""})
        ).is_error
        listed = json.dumps(await panel.get("sessions"))
    assert len(listed) < 20_000, len(listed)


async def test_jupyters_runtime_files_and_dotless_env_files_are_secrets(
    server_url, jp_auth_header, jp_root_dir
):
    """A root that holds Jupyter's runtime folder (a home folder) let an agent read the server's own
    token, which works on every API an approval does not guard; ``prod.env`` is a compose env_file."""
    (jp_root_dir / "runtime").mkdir()
    (jp_root_dir / "runtime" / "jpserver-4242.json").write_text('{"token": "s3cr3t"}')
    (jp_root_dir / "runtime" / "jpserver-4242-open.html").write_text("?token=s3cr3t")
    (jp_root_dir / "deploy").mkdir()
    (jp_root_dir / "deploy" / "prod.env").write_text("DB_PASSWORD=s3cr3t")
    async with connect(server_url, jp_auth_header) as agent:
        for path in ("runtime/jpserver-4242.json", "runtime/jpserver-4242-open.html", "deploy/prod.env"):
            result = await agent.call_tool("read_file", {"path": path})
            assert result.is_error and "looks like a secret" in text(result), (path, text(result))
