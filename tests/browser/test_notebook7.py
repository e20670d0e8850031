"""The extension in Jupyter Notebook 7 (headless Chromium), plugin by plugin, with a real agent over
MCP: the panel opens from View > Left Sidebar; the cell marks and the review bar follow the agent's
edits in the notebook's page; the commands are in the palette; the status bar plugin, with no status
bar to join, leaves the rest working; approval requests come as notifications."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mcp_types import Implementation
from playwright.async_api import expect
from traitlets.config import Config

from ..support import shots
from ..support.browser import CHROMIUM, NO_KERNEL, LabTab, lab_starts_kernel, open_palette
from ..support.mcp_client import call, connect, ok
from ..support.notebook7 import needs_notebook7, notebook7_tab, with_notebook7

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"),
    needs_notebook7,
]

CLAUDE = Implementation(name="claude-code", title="Claude Code", version="2.0")
PANEL = "#jupyter-mcp-ext-panel"
MARK = ".jp-mcp-ReviewMark"
BAR = ".jp-NotebookPanel .jp-mcp-ReviewBar"


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path: Path, request: pytest.FixtureRequest) -> Config:
    return with_notebook7(
        jp_server_config, tmp_path / "lab-settings", starts_kernel=lab_starts_kernel(request)
    )


@pytest.fixture
def token(jp_auth_header) -> str:
    return jp_auth_header["Authorization"].split()[-1]


def plugin_errors(tab: LabTab) -> list[str]:
    """What the page's console said of the extension's plugins failing to activate."""
    return [line for line in tab.console if "jupyter-mcp-ext" in line and "error" in line.lower()]


async def open_panel_from_the_view_menu(tab: LabTab):
    """View > Left Sidebar > the MCP panel, as a Notebook 7 person opens it."""
    page = tab.page
    await page.get_by_role("menuitem", name="View").click()
    await page.locator(".lm-Menu-item", has_text="Left Sidebar").click()  # a submenu: no menuitem role
    await page.get_by_role("menuitem", name="Show MCP: agents in this server").click()
    panel = page.locator(PANEL)
    await expect(panel).to_be_visible()
    return panel


@NO_KERNEL
async def test_in_notebook7_the_marks_the_bar_and_the_panel_follow_an_agent(
    server_url, jp_auth_header, token, make_notebook
):
    path = make_notebook("nb7.ipynb", cells=["a = 1", "b = 2"])
    async with (
        notebook7_tab(server_url, token, path) as tab,
        connect(server_url, jp_auth_header, client_info=CLAUDE) as agent,
    ):
        a, _ = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "update_cell", path=path, cell_id=a, old_string="a = 1", new_string="a = 41")
        # cell marks: the change, live, with Keep and Undo
        mark = tab.cell(0).locator(MARK)
        await expect(mark).to_contain_text("Claude Code changed this · ")
        await expect(mark.get_by_role("button", name="Undo the agent change in this cell")).to_be_visible()
        # review bar: over the notebook
        bar = tab.page.locator(BAR)
        await expect(bar).to_contain_text("1 cell changed by Claude Code")
        # panel: from View > Left Sidebar, with the agent and its change in the feed
        panel = await open_panel_from_the_view_menu(tab)
        await expect(panel.locator(".jp-mcp-Agents")).to_contain_text("Claude Code")
        await expect(panel.locator('.jp-mcp-Entry[data-tool="update_cell"]').first).to_be_visible()
        await shots.keep(tab.page.locator("#main"), "notebook7-review")
        # Keep in the cell: the mark goes, and the bar with it
        await mark.get_by_role("button", name="Keep the agent change in this cell").click()
        await expect(mark).to_have_count(0)
        await expect(bar).to_be_hidden()
        # status bar: Notebook 7 has none; its plugin stays out of the way
        await expect(tab.page.locator(".jp-mcp-Status")).to_have_count(0)
        assert plugin_errors(tab) == []


async def test_in_notebook7_the_palette_stops_an_agent_and_an_approval_is_a_notification(
    server_url, jp_auth_header, token, make_notebook
):
    path = make_notebook("nb7-run.ipynb", cells=["x = 6 * 7"])
    async with (
        notebook7_tab(server_url, token, path) as tab,
        connect(server_url, jp_auth_header, client_info=CLAUDE) as agent,
    ):
        (cell,) = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        panel = await open_panel_from_the_view_menu(tab)
        await panel.locator('.jp-mcp-Mode[data-mode="ask"]').click()
        await expect(panel.locator('.jp-mcp-Mode[data-mode="ask"]')).to_have_attribute("aria-checked", "true")
        # notifications: the request, with Approve and Deny
        run = asyncio.create_task(call(agent, "execute_cells", path=path, cell_ids=[cell], timeout=120))
        toast = tab.page.locator(".Toastify__toast").filter(has_text="x = 6 * 7")
        await expect(toast).to_contain_text("Claude Code wants to run code in nb7-run.ipynb")
        await toast.get_by_role("button", name="Approve", exact=True).click()
        assert not (await asyncio.wait_for(run, 60)).is_error
        # commands: Stop All MCP Agents from the palette ends the agent's session
        await (await open_palette(tab.page)).fill("Stop all MCP agents")
        await tab.page.locator(".lm-CommandPalette-item", has_text="Stop All MCP Agents").click()
        await expect(panel.locator(".jp-mcp-Message")).to_contain_text("Stopped:")
        assert plugin_errors(tab) == []
