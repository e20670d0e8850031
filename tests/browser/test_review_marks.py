"""Review in the notebook itself (issue 20, items 1, 3, 6), in a real JupyterLab (headless Chromium) with
a real agent over MCP: a cell an agent changed shows a mark live, with Keep and Undo; Undo keeps what
the person typed since, and says why when it cannot; the review bar counts what waits, with Keep all
and Undo all. The server's journal is checked after each click. Each test leaves a screenshot of the
notebook in its tmp dir (run with ``JUPYTER_PATH=<worktree>/.jp`` to test a build of one's own).

The ``@SHARED`` tests share one server and one JupyterLab page (tests/support/shared_lab.py): each opens a
notebook of its own name, reads review states by its path (its agents' sessions end with it), changes
no setting, and closes its tab. The dark-theme test has a server and browser of its own: a theme is a
setting."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from mcp_types import Implementation
from playwright.async_api import Locator, expect
from traitlets.config import Config

from ..support import shots
from ..support.browser import CHROMIUM, NO_KERNEL, LabTab, lab_starts_kernel, lab_tab, open_palette, with_lab
from ..support.mcp_client import connect, ok
from ..support.shared_lab import SHARED, shared_lab_fixture, shared_panel_fixture  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"
)

CLAUDE = Implementation(name="claude-code", title="Claude Code", version="2.0")
MARK = ".jp-mcp-ReviewMark"
BAR = ".jp-NotebookPanel .jp-mcp-ReviewBar"
# Times (performance.now) when the first cell first shows the agent's text, and then its review mark.
WATCH = """() => {
  window.__seen = {};
  const cell = () => document.querySelector('.jp-NotebookPanel .jp-Cell');
  new MutationObserver(() => {
    const now = performance.now();
    if (!window.__seen.edit && cell().querySelector('.cm-content').textContent.includes('41')) {
      window.__seen.edit = now;
    }
    if (!window.__seen.mark && cell().querySelector('.jp-mcp-ReviewMark')) {
      window.__seen.mark = now;
    }
  }).observe(document.querySelector('.jp-NotebookPanel'), {subtree: true, childList: true, characterData: true});
}"""


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path: Path, request: pytest.FixtureRequest) -> Config:
    """The suite's server with JupyterLab; in the dark theme for a test whose name ends so."""
    config = with_lab(jp_server_config, tmp_path / "lab-settings", starts_kernel=lab_starts_kernel(request))
    if request.node.name.endswith("in_the_dark_theme"):
        overrides = tmp_path / "lab-settings" / "overrides.json"
        settings = json.loads(overrides.read_text())
        settings["@jupyterlab/apputils-extension:themes"] = {"theme": "JupyterLab Dark"}
        overrides.write_text(json.dumps(settings))
    return config


@pytest.fixture
def token(jp_auth_header) -> str:
    return jp_auth_header["Authorization"].split()[-1]


def mark(tab: LabTab, index: int) -> Locator:
    return tab.cell(index).locator(MARK)


def button(where: Locator, label: str) -> Locator:
    return where.get_by_role("button", name=label, exact=True)


async def screenshot(tab: LabTab, tmp_path: Path, name: str) -> Path:
    return await shots.keep(tab.page.locator(".jp-NotebookPanel:visible"), f"review-{name}")


async def states(panel, path: str) -> list[str]:
    """The review state of each journal entry on ``path``, oldest first."""
    return [e["review"]["state"] for e in (await panel.journal(path=path))[::-1] if e["review"]]


@SHARED
async def test_a_mark_appears_live_for_each_change_and_keep_removes_it_on_the_server_too(
    shared_lab, shared_panel, tmp_path
):
    path = shared_lab.make_notebook("marks.ipynb", cells=["a = 1", "b = 2"])
    async with (
        shared_lab.notebook(path) as tab,
        connect(shared_lab.url, shared_lab.auth, client_info=CLAUDE) as agent,
    ):
        a, b = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await expect(tab.page.locator(MARK)).to_have_count(0)
        await expect(tab.page.locator(BAR)).to_be_hidden()

        await tab.page.evaluate(WATCH)  # when the edit, and then its mark, reach the page
        sent = await tab.page.evaluate("performance.now()")
        await ok(agent, "update_cell", path=path, cell_id=a, old_string="a = 1", new_string="a = 41")
        await expect(mark(tab, 0)).to_contain_text("Claude Code changed this · ")
        seen = await tab.page.evaluate("window.__seen")
        print(
            f"edit on screen {seen['edit'] - sent:.0f} ms after the call, its mark {seen['mark'] - sent:.0f} ms"
        )
        await expect(button(mark(tab, 0), "Undo the agent change in this cell")).to_be_visible()
        await expect(tab.cell(0)).to_have_class(re.compile("jp-mcp-mod-reviewCell"))
        await expect(mark(tab, 1)).to_have_count(0)  # the cell it did not touch has none
        await ok(agent, "insert_cells", path=path, after=b, cells=[{"source": "c = a + b"}])
        await expect(mark(tab, 2)).to_contain_text("added by Claude Code")
        bar = tab.page.locator(BAR)
        await expect(bar).to_contain_text("2 cells changed by Claude Code since ")
        await expect(bar).to_have_attribute("role", "region")
        await screenshot(tab, tmp_path, "marks")

        await button(mark(tab, 0), "Keep the agent change in this cell").click()
        await expect(mark(tab, 0)).to_have_count(0)
        await expect(bar).to_contain_text("1 cell changed by Claude Code")
        assert await states(shared_panel, path) == ["kept", "pending"]
        await expect(tab.lines(0)).to_have_text(["a = 41"])  # a Keep changes no text
        await screenshot(tab, tmp_path, "kept")

        # Someone else's Keep (here through the API, as another person's panel does) clears the mark too.
        await shared_panel.post("keep", {"path": path})
        await expect(tab.page.locator(MARK)).to_have_count(0)
        await expect(bar).to_be_hidden()


@SHARED
async def test_undo_in_the_cell_reverts_the_agent_and_keeps_what_the_person_typed_since(
    shared_lab, shared_panel, tmp_path
):
    path = shared_lab.make_notebook("undo.ipynb", cells=["rate = 1"])
    async with (
        shared_lab.notebook(path) as tab,
        connect(shared_lab.url, shared_lab.auth, client_info=CLAUDE) as agent,
    ):
        (rate,) = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "update_cell", path=path, cell_id=rate, old_string="rate = 1", new_string="rate = 2")
        await expect(mark(tab, 0)).to_be_visible()
        await expect(tab.lines(0)).to_have_text(["rate = 2"])

        # The person types a line above the agent's change, in the cell's editor.
        await tab.lines(0).nth(0).click()
        await tab.page.keyboard.press("Home")
        await tab.page.keyboard.type("# mine")
        await tab.page.keyboard.press("Enter")
        await expect(tab.lines(0)).to_have_text(["# mine", "rate = 2"])
        await _server_sees(agent, path, "# mine\nrate = 2")

        await button(mark(tab, 0), "Undo the agent change in this cell").click()
        await expect(tab.lines(0)).to_have_text(["# mine", "rate = 1"])
        await expect(mark(tab, 0)).to_have_count(0)
        assert await states(shared_panel, path) == ["undone"]
        await screenshot(tab, tmp_path, "undone")


@NO_KERNEL
async def test_an_undo_the_server_refuses_says_why_in_the_cell_and_changes_nothing_in_the_dark_theme(
    server_url, jp_auth_header, token, make_notebook, panel, tmp_path
):
    path = make_notebook("refused.ipynb", cells=["y = 1"])
    async with (
        lab_tab(server_url, token, path) as tab,
        connect(server_url, jp_auth_header, client_info=CLAUDE) as agent,
    ):
        await expect(tab.page.locator("body")).to_have_attribute("data-jp-theme-light", "false")
        (y,) = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "update_cell", path=path, cell_id=y, old_string="y = 1", new_string="y = 3")
        await expect(tab.lines(0)).to_have_text(["y = 3"])
        # The person types over what the agent wrote: the same characters, so no undo can keep both.
        await tab.lines(0).nth(0).click()
        await tab.page.keyboard.press("End")
        await tab.page.keyboard.type("3")
        await _server_sees(agent, path, "y = 33")

        await button(mark(tab, 0), "Undo the agent change in this cell").click()
        refused = mark(tab, 0).get_by_role("alert")
        await expect(refused).to_contain_text("Not undone: ")
        await expect(tab.lines(0)).to_have_text(["y = 33"])
        assert await states(panel, path) == ["pending"]
        await expect(mark(tab, 0)).to_contain_text("Claude Code changed this")  # still waiting
        await screenshot(tab, tmp_path, "refused-dark")


@SHARED
async def test_keep_all_and_undo_all_from_the_review_bar(shared_lab, shared_panel, tmp_path):
    path = shared_lab.make_notebook("all.ipynb", cells=["a = 1", "b = 2", "c = 3"])
    async with (
        shared_lab.notebook(path) as tab,
        connect(shared_lab.url, shared_lab.auth, client_info=CLAUDE) as agent,
    ):
        a, b, c = (cell["id"] for cell in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "update_cell", path=path, cell_id=a, old_string="1", new_string="10")
        await ok(agent, "update_cell", path=path, cell_id=b, old_string="2", new_string="20")
        await ok(agent, "update_cell", path=path, cell_id=b, old_string="20", new_string="200")
        bar = tab.page.locator(BAR)
        await expect(bar).to_contain_text("2 cells changed by Claude Code since ")
        await screenshot(tab, tmp_path, "bar")

        await button(bar, "Undo all agent changes in this notebook").click()
        await expect(tab.lines(0)).to_have_text(["a = 1"])
        await expect(tab.lines(1)).to_have_text(["b = 2"])
        await expect(bar).to_be_hidden()
        assert await states(shared_panel, path) == ["undone"] * 3

        # A run is marked "ran by", with Keep and no Undo (outputs are not undone).
        await ok(agent, "update_cell", path=path, cell_id=c, old_string="3", new_string="30")
        await ok(agent, "execute_cells", path=path, cell_ids=[a], timeout=60)
        await expect(mark(tab, 0)).to_contain_text("ran by Claude Code")
        await expect(mark(tab, 0).get_by_role("button")).to_have_count(1)
        await expect(bar).to_contain_text("2 cells changed by Claude Code")
        await screenshot(tab, tmp_path, "ran")
        await button(bar, "Keep all agent changes in this notebook").click()
        await expect(bar).to_be_hidden()
        await expect(tab.page.locator(MARK)).to_have_count(0)
        assert (await states(shared_panel, path))[3:] == ["kept", "kept"]
        await expect(tab.lines(2)).to_have_text(["c = 30"])


async def _server_sees(agent, path: str, source: str, tries: int = 100) -> None:
    """Wait until the live document (as the agent reads it) holds the person's typing."""
    for _ in range(tries):
        cells = (await ok(agent, "read_cells", path=path))["cells"]
        if any(c.get("source") == source for c in cells):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the server never saw {source!r}: {cells}")


@SHARED
async def test_a_cell_changed_by_two_agents_says_so_and_each_agent_is_kept_on_its_own_from_the_keyboard(
    shared_lab, shared_panel, tmp_path
):
    path = shared_lab.make_notebook("two.ipynb", cells=["x = 1", "y = 1", "z = 1"])
    codex = Implementation(name="codex", title="Codex", version="1")
    async with (
        shared_lab.notebook(path) as tab,
        connect(shared_lab.url, shared_lab.auth, client_info=CLAUDE) as claude,
        connect(shared_lab.url, shared_lab.auth, client_info=codex) as other,
    ):
        x, _, z = (c["id"] for c in (await ok(claude, "get_notebook", path=path))["cells"])
        await ok(claude, "update_cell", path=path, cell_id=x, old_string="x = 1", new_string="x = 2")
        await ok(other, "update_cell", path=path, cell_id=x, old_string="x = 2", new_string="x = 3")
        await ok(other, "update_cell", path=path, cell_id=z, old_string="z = 1", new_string="z = 3")
        await expect(mark(tab, 0)).to_contain_text("Claude Code and Codex changed this")
        bar = tab.page.locator(BAR)
        await expect(bar).to_contain_text("2 cells changed by Claude Code and Codex since ")
        await expect(bar.get_by_role("group", name="Changes by Codex")).to_be_visible()
        await screenshot(tab, tmp_path, "two-agents")

        # Keep Codex's changes only: Claude Code's stays marked in the cell both changed.
        await button(bar, "Keep the changes of Codex").click()
        await expect(mark(tab, 0)).to_contain_text("Claude Code changed this")
        await expect(mark(tab, 2)).to_have_count(0)
        assert await states(shared_panel, path) == ["pending", "kept", "kept"]

        # From the keyboard: the next change (command mode, Alt+Down), then Keep from the palette.
        await tab.cell(1).locator(".jp-InputPrompt").click()
        await tab.page.keyboard.press("Escape")
        await tab.page.keyboard.press("Alt+ArrowDown")
        await expect(tab.cell(0)).to_have_class(re.compile("jp-mod-active"))
        palette = await open_palette(tab.page)
        await palette.fill("Keep the Agent's Change in This Cell")
        await tab.page.keyboard.press("Enter")
        await expect(tab.page.locator(MARK)).to_have_count(0)
        await expect(bar).to_be_hidden()
        assert await states(shared_panel, path) == ["kept", "kept", "kept"]
