"""The extension's settings in a real JupyterLab (headless Chromium), changed as a person changes them:
in the Settings Editor, where "MCP: cell marks" and "MCP: notifications" are listed. Turning the marks
off hides them in the open notebook at once, and the review bar still counts what waits; compact marks
name the agent and keep the buttons; with approval notifications off, a request waits in the panel
alone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mcp_types import Implementation
from playwright.async_api import Page, expect
from traitlets.config import Config

from ..support import shots
from ..support.browser import CHROMIUM, NO_KERNEL, lab_starts_kernel, lab_tab, open_palette, with_lab
from ..support.mcp_client import call, connect, ok

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"
)

CLAUDE = Implementation(name="claude-code", title="Claude Code", version="2.0")
MARK = ".jp-mcp-ReviewMark"
BAR = ".jp-NotebookPanel .jp-mcp-ReviewBar"
PANEL = "#jupyter-mcp-ext-panel"


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path: Path, request: pytest.FixtureRequest) -> Config:
    return with_lab(jp_server_config, tmp_path / "lab-settings", starts_kernel=lab_starts_kernel(request))


@pytest.fixture
def token(jp_auth_header) -> str:
    return jp_auth_header["Authorization"].split()[-1]


async def set_setting(page: Page, plugin: str, label: str, checked: bool) -> None:
    """In the Settings Editor (opened from the palette), tick or untick one of a plugin's settings;
    the editor saves it, as for a person. Then back to the notebook's tab."""
    await (await open_palette(page)).fill("Settings Editor")
    await page.locator(".lm-CommandPalette-item", has_text="Settings Editor").first.click()
    await page.locator(".jp-PluginList-entry", has_text=plugin).click()
    box = page.get_by_role("checkbox", name=label)
    await expect(box).to_be_visible()
    await box.set_checked(checked)
    await expect(box).to_be_checked(checked=checked)
    await page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=".ipynb").click()


@NO_KERNEL
async def test_marks_turned_off_in_the_settings_hide_in_the_notebook_and_the_bar_still_counts(
    server_url, jp_auth_header, token, make_notebook
):
    path = make_notebook("marks-off.ipynb", cells=["a = 1", "b = 2"])
    async with (
        lab_tab(server_url, token, path) as tab,
        connect(server_url, jp_auth_header, client_info=CLAUDE) as agent,
    ):
        a, _ = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "update_cell", path=path, cell_id=a, old_string="a = 1", new_string="a = 41")
        mark = tab.cell(0).locator(MARK)
        await expect(mark).to_contain_text("Claude Code changed this · ")
        bar = tab.page.locator(BAR)
        await expect(bar).to_contain_text("1 cell changed by Claude Code")

        await set_setting(tab.page, "MCP: cell marks", "Show marks in cells", False)
        await expect(tab.cell(0)).to_be_visible()
        await expect(mark).to_be_hidden()
        await expect(bar).to_contain_text("1 cell changed by Claude Code")  # the review goes on
        await shots.keep(tab.page.locator(".jp-NotebookPanel:visible"), "settings-marks-off")
        # a later change gets no mark either, and the bar counts it
        await ok(agent, "insert_cells", path=path, after=a, cells=[{"source": "c = 3"}])
        await expect(bar).to_contain_text("2 cells changed by Claude Code")
        await expect(tab.page.locator(f"{MARK}:visible")).to_have_count(0)

        await set_setting(tab.page, "MCP: cell marks", "Show marks in cells", True)
        await expect(mark).to_be_visible()
        await expect(tab.cell(1).locator(MARK)).to_contain_text("added by Claude Code")


@NO_KERNEL
async def test_compact_marks_name_the_agent_and_keep_the_buttons(
    server_url, jp_auth_header, token, make_notebook
):
    path = make_notebook("compact.ipynb", cells=["a = 1"])
    async with (
        lab_tab(server_url, token, path) as tab,
        connect(server_url, jp_auth_header, client_info=CLAUDE) as agent,
    ):
        (a,) = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "update_cell", path=path, cell_id=a, old_string="a = 1", new_string="a = 41")
        mark = tab.cell(0).locator(MARK)
        await expect(mark).to_contain_text("Claude Code changed this · ")

        await set_setting(tab.page, "MCP: cell marks", "Compact marks", True)
        await expect(mark).not_to_contain_text("changed this")
        await expect(mark.locator(".jp-mcp-ReviewText")).to_have_text("Claude Code")
        await expect(mark).to_have_attribute("aria-label", "Agent change to review: Claude Code changed this")
        await shots.keep(tab.page.locator(".jp-NotebookPanel:visible"), "settings-compact-marks")
        await mark.get_by_role("button", name="Keep the agent change in this cell").click()
        await expect(mark).to_have_count(0)


async def test_with_approval_notifications_off_a_request_waits_in_the_panel_alone(
    server_url, jp_auth_header, token, make_notebook
):
    path = make_notebook("quiet.ipynb", cells=["x = 6 * 7"])
    async with (
        lab_tab(server_url, token, path) as tab,
        connect(server_url, jp_auth_header, client_info=CLAUDE) as agent,
    ):
        (cell,) = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await set_setting(tab.page, "MCP: notifications", "Approval requests as notifications", False)
        robot = tab.page.locator(f'.jp-SideBar .lm-TabBar-tab[data-id="{PANEL[1:]}"]')
        if await robot.get_attribute("aria-selected") != "true":
            await robot.click()
        panel = tab.page.locator(PANEL)
        await panel.locator('.jp-mcp-Mode[data-mode="ask"]').click()
        await expect(panel.locator('.jp-mcp-Mode[data-mode="ask"]')).to_have_attribute("aria-checked", "true")

        run = asyncio.create_task(call(agent, "execute_cells", path=path, cell_ids=[cell], timeout=120))
        card = panel.locator(".jp-mcp-Approval")
        await expect(card).to_contain_text("Claude Code wants to run code in quiet.ipynb")
        await expect(tab.page.locator(".Toastify__toast")).to_have_count(0)
        await card.get_by_role("button", name="Approve", exact=True).click()
        result = await asyncio.wait_for(run, 60)
        assert not result.is_error
