"""The MCP panel in a real JupyterLab (headless Chromium): a person connects an agent, watches its
calls, reviews and reverts its changes, gates its runs and stops it, while a real MCP client works
on the open notebook. Each test leaves a screenshot of the panel in its tmp dir."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation
from playwright.async_api import Locator, expect
from traitlets.config import Config

from ..support import shots
from ..support.browser import CHROMIUM, NO_KERNEL, LabTab, lab_starts_kernel, lab_tab, open_palette, with_lab
from ..support.mcp_client import call, connect, ok, text
from ..support.panel import PanelAPI
from ..support.yclient import YPeer

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"
)

PANEL = "#jupyter-mcp-ext-panel"
HAS_PRESENCE = importlib.util.find_spec("jupyter_mcp_ext.agents.directory") is not None
needs_presence = pytest.mark.skipif(
    not HAS_PRESENCE, reason="agent presence (people/agents.py) not merged yet"
)


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path: Path, request: pytest.FixtureRequest) -> Config:
    """The suite's server, plus JupyterLab itself."""
    return with_lab(jp_server_config, tmp_path / "lab-settings", starts_kernel=lab_starts_kernel(request))


@pytest.fixture
def token(jp_auth_header) -> str:
    return jp_auth_header["Authorization"].split()[-1]


async def open_panel(tab: LabTab) -> Locator:
    """Click the robot in the left sidebar, as a person would; returns the panel.

    JupyterLab may have restored the panel open from the workspace; a click would then close it.
    """
    robot = tab.page.locator(f'.jp-SideBar .lm-TabBar-tab[data-id="{PANEL[1:]}"]')
    await expect(robot).to_be_visible()
    if await robot.get_attribute("aria-selected") != "true":
        await robot.click()
    panel = tab.page.locator(PANEL)
    await expect(panel).to_be_visible()
    return panel


async def screenshot(tab: LabTab, tmp_path: Path, name: str) -> Path:
    return await shots.keep(tab.page.locator(PANEL), f"panel-{name}")


async def stopped(run: asyncio.Task) -> None:
    """The agent's call ended by a person's stop: an error result that says so, or (when the
    session ended before the answer went out) the stream closed under it."""
    try:
        result = await asyncio.wait_for(run, 30)
    except MCPError:
        return
    assert result.is_error and "stopped" in text(result), text(result)


def entry(panel: Locator, tool: str) -> Locator:
    """The feed's newest entry for a tool."""
    return panel.locator(f'.jp-mcp-Entry[data-tool="{tool}"]').first


async def test_feed_lists_each_call_its_diff_and_revert_restores_the_cell(
    server_url, jp_auth_header, token, make_notebook, tmp_path
):
    path = make_notebook("feed.ipynb", cells=["a = 1"])
    async with lab_tab(server_url, token, path) as tab, connect(server_url, jp_auth_header) as agent:
        panel = await open_panel(tab)
        await expect(panel.locator(".jp-mcp-Feed .jp-mcp-Empty")).to_be_visible()
        (first,) = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])

        await ok(agent, "insert_cells", path=path, after=first, cells=[{"source": "b = a + 1\nprint(b)"}])
        await ok(agent, "update_cell", path=path, cell_id=first, old_string="a = 1", new_string="a = 41")
        await ok(agent, "execute_cells", path=path, cell_ids=[first], timeout=60)
        await expect(tab.lines(0)).to_have_text(["a = 41"])

        # Newest first, each call once (reads are not listed), each with its notebook and outcome.
        entries = panel.locator(".jp-mcp-Entry")
        await expect(entries).to_have_count(3)
        tools = [await e.get_attribute("data-tool") for e in await entries.all()]
        assert tools == ["execute_cells", "update_cell", "insert_cells"]
        update = entry(panel, "update_cell")
        await expect(update.locator(".jp-mcp-Where")).to_have_text(f"{path} · cell {first}")
        await expect(update.locator(".jp-mcp-Outcome")).to_have_text("ok")
        await expect(entry(panel, "execute_cells").locator(".jp-mcp-Note")).to_contain_text(
            "cannot be undone"
        )

        # The change as a diff: the old line removed, the new one added.
        await update.get_by_role("button", name="Show change").click()
        await expect(update.locator(".jp-mcp-Diff-removed")).to_have_text(["-a = 1"])
        await expect(update.locator(".jp-mcp-Diff-added")).to_have_text(["+a = 41"])
        await screenshot(tab, tmp_path, "feed-diff")

        # Revert puts the cell back in the open notebook, and the entry says it was reverted.
        await update.get_by_role("button", name="Revert", exact=True).click()
        await expect(tab.lines(0)).to_have_text(["a = 1"])
        await expect(update.locator(".jp-mcp-RevertedMark")).to_have_text("reverted")
        await expect(update.get_by_role("button", name="Revert", exact=True)).to_have_count(0)
        await expect(tab.lines(1)).to_have_text(["b = a + 1", "print(b)"])  # the insert stays
        await screenshot(tab, tmp_path, "feed-reverted")


@NO_KERNEL
async def test_an_error_stands_out_and_a_click_opens_the_notebook_at_the_cell(
    server_url, jp_auth_header, token, make_notebook, tmp_path
):
    path = make_notebook("where.ipynb", cells=[f"x = {i}" for i in range(40)])
    other = make_notebook("other.ipynb", cells=["y = 0"])
    async with lab_tab(server_url, token, other) as tab, connect(server_url, jp_auth_header) as agent:
        panel = await open_panel(tab)
        cells = (await ok(agent, "get_notebook", path=path))["cells"]
        await ok(agent, "update_cell", path=path, cell_id=cells[35]["id"], source="x = 'the agent was here'")
        result = await call(agent, "update_cell", path=path, cell_id="nope", source="y")
        assert result.is_error

        failed = entry(panel, "update_cell")
        await expect(failed).to_have_attribute("data-outcome", "error")
        await expect(failed.locator(".jp-mcp-Error")).to_contain_text("nope")
        await screenshot(tab, tmp_path, "feed-error")

        # The successful one links to its cell: the notebook opens with that cell active and in view.
        await panel.locator('.jp-mcp-Entry[data-outcome="ok"] .jp-mcp-Where').click()
        notebook = tab.page.locator(".jp-NotebookPanel:visible")
        active = notebook.locator(".jp-Cell.jp-mod-active")
        await expect(active.locator(".cm-content")).to_have_text("x = 'the agent was here'")
        await expect(active).to_be_in_viewport()


@NO_KERNEL
async def test_the_copied_claude_code_command_is_the_endpoint_url_alone(
    server_url, token, make_notebook, tmp_path
):
    path = make_notebook("connect.ipynb", cells=["a = 1"])
    async with lab_tab(server_url, token, path) as tab:
        await tab.page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        panel = await open_panel(tab)
        url = f"{server_url}mcp"
        await expect(panel.locator(".jp-mcp-UrlText")).to_have_text(url)
        await panel.get_by_role("tab", name="Claude Code").click()
        snippet = panel.locator('.jp-mcp-Snippet[data-setup="claude"]')
        shown = snippet.locator("pre")
        # The URL alone: Claude Code signs in (OAuth), so no token is on a command line, hidden or not.
        await expect(shown).to_have_text(f"claude mcp add --transport http jupyter {url}")
        await expect(panel.get_by_role("button", name="Show token")).to_have_count(0)
        await screenshot(tab, tmp_path, "connect")

        # The copy is what is shown: ready to paste, with the base URL, and no token.
        await snippet.get_by_role("button", name="Copy").click()
        await expect(snippet.get_by_role("button", name="Copied")).to_be_visible()
        copied = await tab.page.evaluate("navigator.clipboard.readText()")
        assert copied == f"claude mcp add --transport http jupyter {url}" and token not in copied

        # The status bar item opens the panel from anywhere.
        await tab.page.locator(f'.jp-SideBar .lm-TabBar-tab[data-id="{PANEL[1:]}"]').click()
        await expect(panel).to_be_hidden()
        await expect(tab.page.locator(".jp-mcp-StatusItem")).to_have_attribute("data-agents", "0")
        await tab.page.locator(".jp-mcp-StatusItem").click()
        await expect(panel).to_be_visible()

        await panel.get_by_role("tab", name="Codex").click()
        codex = panel.locator('.jp-mcp-Snippet[data-setup="codex"] pre')
        await expect(codex).to_contain_text(f'url = "{url}"')
        await expect(codex).not_to_contain_text("Authorization")


async def test_ask_holds_a_run_until_approved_and_refuses_it_on_deny(
    server_url, jp_auth_header, token, make_notebook, tmp_path
):
    path = make_notebook("ask.ipynb", cells=["print('approved run')"])
    async with (
        lab_tab(server_url, token, path) as tab,
        connect(server_url, jp_auth_header) as agent,
        PanelAPI(server_url, jp_auth_header) as api,
    ):
        panel = await open_panel(tab)
        await panel.get_by_role("radio", name="Ask").click()
        await expect(panel.get_by_role("radio", name="Ask")).to_have_attribute("aria-checked", "true")
        assert (await api.get("policy"))["mode"] == "ask"
        (cell,) = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])

        run = asyncio.create_task(call(agent, "execute_cells", path=path, cell_ids=[cell], timeout=60))
        card = panel.locator(".jp-mcp-Approval")
        await expect(card).to_be_visible()
        await expect(card.locator(".jp-mcp-ApprovalCode")).to_contain_text("print('approved run')")
        # It also comes as a JupyterLab notification, with the code and the same choices.
        toast = tab.page.locator(".Toastify__toast").filter(has_text="print('approved run')")
        await expect(toast).to_be_visible()
        await expect(toast.get_by_role("button", name="Approve", exact=True)).to_be_visible()
        await screenshot(tab, tmp_path, "approval")
        # The status bar marks that an agent waits, wherever the person is.
        await expect(tab.page.locator(".jp-mcp-StatusItem .jp-mcp-mod-waiting")).to_be_visible()
        await asyncio.sleep(1)
        assert not run.done(), "the run went ahead without approval"
        await expect(tab.outputs(0)).not_to_contain_text("approved run")

        await card.get_by_role("button", name="Approve", exact=True).click()
        result = await asyncio.wait_for(run, 60)
        assert not result.is_error, text(result)
        await expect(tab.outputs(0)).to_contain_text("approved run")
        await expect(card).to_have_count(0)
        await expect(toast).to_have_count(0)  # answered in the panel, the notification goes too

        await ok(agent, "update_cell", path=path, cell_id=cell, source="print('denied run')")
        run = asyncio.create_task(call(agent, "execute_cells", path=path, cell_ids=[cell], timeout=60))
        await expect(card.locator(".jp-mcp-ApprovalCode")).to_contain_text("print('denied run')")
        await card.get_by_role("button", name="Deny").click()
        result = await asyncio.wait_for(run, 60)
        assert result.is_error and "denied" in text(result).lower(), text(result)
        await expect(entry(panel, "execute_cells")).to_have_attribute("data-outcome", "denied")
        await expect(tab.outputs(0)).not_to_contain_text("denied run")
        await screenshot(tab, tmp_path, "denied")

        # From the notification alone: approving the rest of the turn lets the next run go unasked.
        await ok(agent, "update_cell", path=path, cell_id=cell, source="print('turn run')")
        run = asyncio.create_task(call(agent, "execute_cells", path=path, cell_ids=[cell], timeout=60))
        toast = tab.page.locator(".Toastify__toast").filter(has_text="print('turn run')")
        # The choice says how far it reaches: this tool, this notebook, a few calls, a fixed time.
        await toast.get_by_role(
            "button", name=f"Approve, and 10 more execute_cells in {path} for 2 min"
        ).click()
        assert not (await asyncio.wait_for(run, 60)).is_error
        await expect(tab.outputs(0)).to_contain_text("turn run")
        await ok(agent, "execute_cells", path=path, cell_ids=[cell], timeout=60)  # not held this time
        await expect(card).to_have_count(0)


async def test_invisible_characters_show_as_marked_tokens_in_cards_notifications_and_the_feed(
    server_url, jp_auth_header, token, make_notebook, tmp_path
):
    """A right-to-left override makes ``m = "<RLO>";import os;os.system("id")#"`` look like a string;
    zero-width characters hide in names and diffs. The panel shows each as ⟨U+…⟩ and warns."""
    path = make_notebook("report\u202eyp.ipynb", cells=["a = 1"])
    sneaky = 'm = "\u202e";import os;os.system("id")#"'
    name = Implementation(name="helper\u200b", version="1.0")
    async with (
        lab_tab(server_url, token, path) as tab,
        connect(server_url, jp_auth_header, client_info=name) as agent,
        PanelAPI(server_url, jp_auth_header) as api,
    ):
        panel = await open_panel(tab)
        (cell,) = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "update_cell", path=path, cell_id=cell, source="a = 1\u200b")

        update = entry(panel, "update_cell")
        await expect(update.locator(".jp-mcp-Where")).to_contain_text("report⟨U+202E⟩yp.ipynb")
        await expect(update.locator(".jp-mcp-EntryAgent")).to_have_text("helper⟨U+200B⟩")
        await update.get_by_role("button", name="Show change").click()
        await expect(update.locator(".jp-mcp-Diff-added")).to_have_text(["+a = 1⟨U+200B⟩"])
        await expect(update.locator(".jp-mcp-Diff-added .jp-mcp-Hidden")).to_have_text("⟨U+200B⟩")
        session = panel.locator(".jp-mcp-Session .jp-mcp-AgentName")
        await expect(session).to_contain_text("helper⟨U+200B⟩")
        await screenshot(tab, tmp_path, "hidden-feed")

        await api.post("policy", {"mode": "ask"})
        run = asyncio.create_task(call(agent, "execute_code", path=path, code=sneaky))
        card = panel.locator(".jp-mcp-Approval")
        await expect(card.locator(".jp-mcp-ApprovalCode")).to_have_text(
            'm = "⟨U+202E⟩";import os;os.system("id")#"'
        )
        await expect(card.locator(".jp-mcp-ApprovalCode .jp-mcp-Hidden")).to_have_count(1)
        await expect(card.locator(".jp-mcp-ApprovalTitle")).to_contain_text("report⟨U+202E⟩yp.ipynb")
        await expect(card.locator(".jp-mcp-HiddenWarning")).to_contain_text("invisible or control characters")
        # The notification cannot mark them (plain text, cut at 140 characters): it leads to the card.
        toast = tab.page.locator(".Toastify__toast").filter(has_text="invisible or control characters")
        await expect(toast).to_be_visible()
        await expect(toast.get_by_role("button", name="Review in the panel")).to_be_visible()
        await expect(toast.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
        await screenshot(tab, tmp_path, "hidden-approval")
        await card.get_by_role("button", name="Deny").click()
        assert (await asyncio.wait_for(run, 60)).is_error


async def test_code_a_notification_would_cut_is_approved_only_in_the_panel(
    server_url, jp_auth_header, token, make_notebook, tmp_path
):
    path = make_notebook("long.ipynb", cells=["a = 1"])
    code = "x = 0\n" * 20 + "print('the hidden end')"  # 143 characters: a notification shows 140
    async with (
        lab_tab(server_url, token, path) as tab,
        connect(server_url, jp_auth_header) as agent,
        PanelAPI(server_url, jp_auth_header) as api,
    ):
        await api.post("policy", {"mode": "ask"})
        run = asyncio.create_task(call(agent, "execute_code", path=path, code=code))
        toast = tab.page.locator(".Toastify__toast").filter(has_text="more than a notification shows")
        await expect(toast).to_be_visible()
        await expect(toast.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
        await toast.get_by_role("button", name="Review in the panel").click()
        card = tab.page.locator(PANEL).locator(".jp-mcp-Approval")
        await expect(card.locator(".jp-mcp-ApprovalCode")).to_contain_text("print('the hidden end')")
        await card.get_by_role("button", name="Approve", exact=True).click()
        assert "the hidden end" in text(await asyncio.wait_for(run, 60))


async def test_stop_ends_the_agents_session_and_its_run(
    server_url, jp_auth_header, token, make_notebook, tmp_path
):
    path = make_notebook("stop.ipynb", cells=["import time\nfor _ in range(600):\n    time.sleep(0.1)"])
    async with lab_tab(server_url, token, path) as tab, connect(server_url, jp_auth_header) as agent:
        panel = await open_panel(tab)
        (cell,) = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        run = asyncio.create_task(call(agent, "execute_cells", path=path, cell_ids=[cell], timeout=120))
        await expect(tab.prompt(0)).to_have_text("[*]:")

        await panel.get_by_role("button", name="Stop all agents").click()
        await stopped(run)
        await expect(panel.locator(".jp-mcp-Message")).to_contain_text("1 session(s) ended")
        await expect(tab.prompt(0)).not_to_have_text("[*]:")  # the kernel was interrupted
        await expect(entry(panel, "execute_cells")).to_have_attribute("data-outcome", "error")
        await screenshot(tab, tmp_path, "stopped")
        # The session is over: the agent's next call does not reach a tool.
        with pytest.raises(Exception):  # noqa: B017  (the SDK's error for an ended session varies)
            await agent.call_tool("get_notebook", {"path": path})


async def test_stop_is_a_palette_command(server_url, jp_auth_header, token, make_notebook, tmp_path):
    path = make_notebook("palette.ipynb", cells=["import time\ntime.sleep(60)"])
    async with lab_tab(server_url, token, path) as tab, connect(server_url, jp_auth_header) as agent:
        (cell,) = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        run = asyncio.create_task(call(agent, "execute_cells", path=path, cell_ids=[cell], timeout=120))
        await expect(tab.prompt(0)).to_have_text("[*]:")
        await (await open_palette(tab.page)).fill("Stop all MCP agents")
        await tab.page.locator(".lm-CommandPalette-item", has_text="Stop All MCP Agents").click()
        await stopped(run)
        panel = await open_panel(tab)
        await expect(entry(panel, "execute_cells")).to_have_attribute("data-outcome", "error")
        await screenshot(tab, tmp_path, "palette-stop")


@NO_KERNEL
async def test_a_cell_an_agent_works_in_shows_its_name_and_colour(
    server_url, jp_auth_header, token, make_notebook, tmp_path
):
    """The mark reads the notebook's awareness as docs/api.md fixes an agent's state; here a
    second Yjs client in the room publishes it, as the server's presence does for each agent."""
    path = make_notebook("marks.ipynb", cells=["a = 1", "b = 2"])
    agent_user = {
        "username": "mcp-agent-a1b2c3d4",
        "name": "Claude Code (agent)",
        "display_name": "Claude Code (agent)",
        "initials": "CC",
        "color": "#1f77b4",
        "bot": True,
    }
    async with (
        lab_tab(server_url, token, path) as tab,
        YPeer(server_url, jp_auth_header, path, user=agent_user) as room,
    ):
        second = str(room.notebook.ycells[1]["id"])
        room.awareness.set_local_state(
            {"user": agent_user, "mcp": {"agent": "a1b2c3d4", "cell_id": second, "state": "running"}}
        )
        mark = tab.cell(1).locator(".jp-mcp-CellMark")
        await expect(mark).to_have_text("Claude Code (agent) · running")
        await expect(mark.locator(".jp-mcp-CellMarkAgent")).to_have_css("background-color", _rgb("#1f77b4"))
        await expect(tab.cell(0).locator(".jp-mcp-CellMark")).to_have_count(0)
        await tab.page.locator(".jp-NotebookPanel").screenshot(path=str(tmp_path / "notebook-mark.png"))

        room.awareness.set_local_state(
            {"user": agent_user, "mcp": {"agent": "a1b2c3d4", "cell_id": second, "state": "idle"}}
        )
        await expect(mark).to_have_count(0)


@needs_presence
async def test_the_agent_shows_in_sessions_the_status_bar_and_beside_its_cell(
    server_url, jp_auth_header, token, make_notebook, jp_root_dir, tmp_path
):
    path = make_notebook(
        "presence.ipynb",
        cells=["a = 1", "import os, time\nwhile not os.path.exists('.go'):\n    time.sleep(0.05)"],
    )
    async with (
        lab_tab(server_url, token, path) as tab,
        connect(server_url, jp_auth_header) as agent,
        PanelAPI(server_url, jp_auth_header) as api,
    ):
        panel = await open_panel(tab)
        cells = [c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"]]
        (record,) = (await api.get("sessions"))["sessions"]

        session = panel.locator(f'.jp-mcp-Session[data-agent="{record["id"]}"]')
        await expect(session.locator(".jp-mcp-AgentName")).to_contain_text(
            record["client"].get("title") or record["client"]["name"]
        )
        await expect(session.locator(".jp-mcp-Swatch")).to_have_css("background-color", _rgb(record["color"]))
        status = tab.page.locator(".jp-mcp-StatusItem")
        await expect(status).to_have_attribute("data-agents", "1")

        run = asyncio.create_task(call(agent, "execute_cells", path=path, cell_ids=[cells[1]], timeout=60))
        await expect(session).to_have_attribute("data-state", "running")
        await expect(status.locator(".jp-mcp-mod-running")).to_be_visible()
        mark = tab.cell(1).locator(".jp-mcp-CellMark")
        await expect(mark).to_contain_text(record["display_name"])
        await expect(tab.cell(0).locator(".jp-mcp-CellMark")).to_have_count(0)
        await screenshot(tab, tmp_path, "sessions")
        await tab.page.screenshot(path=str(tmp_path / "notebook-mark.png"))

        (jp_root_dir / ".go").touch()
        assert not (await asyncio.wait_for(run, 60)).is_error
        await expect(session).to_have_attribute("data-state", "idle")
        await expect(mark).to_have_count(0)

        # "Revert everything since" the start of the session takes back all its edits.
        await ok(agent, "update_cell", path=path, cell_id=cells[0], source="a = 2")
        await ok(agent, "insert_cells", path=path, after=cells[0], cells=[{"source": "c = 3"}])
        await expect(tab.cells).to_have_count(3)
        await session.get_by_role("button", name="Revert everything since").click()
        await expect(tab.cells).to_have_count(2)
        await expect(tab.lines(0)).to_have_text(["a = 1"])
        # All three of the session's calls (the run's outputs too) are marked reverted.
        await expect(panel.locator(".jp-mcp-Message")).to_have_text("Reverted 3 change(s).")
        await expect(panel.locator(".jp-mcp-Entry .jp-mcp-RevertedMark")).to_have_count(3)

        # A click on the status item opens the panel from anywhere.
        await tab.page.locator(f'.jp-SideBar .lm-TabBar-tab[data-id="{PANEL[1:]}"]').click()
        await expect(tab.page.locator(PANEL)).to_be_hidden()
        await status.click()
        await expect(tab.page.locator(PANEL)).to_be_visible()


def _rgb(color: str) -> str:
    """``#1f77b4`` as the browser reports a computed colour: ``rgb(31, 119, 180)``."""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"
