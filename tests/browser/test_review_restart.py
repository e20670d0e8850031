"""Review state survives a restart of the server (issue 20), in a real JupyterLab (headless Chromium) with
a real agent over MCP: a server in a process of its own with a journal file; the agent changes one cell
and deletes another; the person sees the mark and the placeholder and keeps nothing yet; the server is
stopped and started again on the same root, config and journal file; in a fresh tab the mark and the
placeholder are still there, Undo in the cell returns the text from before the agent's change, and
Restore brings the deleted cell back. Screenshots go to tests/support/shots.py's folder."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from mcp_types import Implementation
from playwright.async_api import Locator, expect

from ..support import shots
from ..support.browser import CHROMIUM, LabTab, lab_tab
from ..support.mcp_client import connect, ok
from ..support.panel import PanelAPI
from ..support.server_process import TOKEN
from ..support.shared_lab import lab_server

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"
)

AUTH = {"Authorization": f"token {TOKEN}"}
CLAUDE = Implementation(name="claude-code", title="Claude Code", version="2.0")
MARK = ".jp-mcp-ReviewMark"
PLACEHOLDER = ".jp-NotebookPanel .jp-mcp-DeletedCells"
UNDO = "Undo the agent change in this cell"
RESTORE = "Restore the deleted cells here"


def on_disk(file: Path) -> list[str]:
    try:
        return [c.source for c in nbformat.read(file, as_version=4).cells]
    except Exception:  # caught while the server writes it
        return []


def mark(tab: LabTab, index: int) -> Locator:
    return tab.cell(index).locator(MARK)


def button(where: Locator, label: str) -> Locator:
    return where.get_by_role("button", name=label, exact=True)


async def states(panel: PanelAPI, path: str) -> list[str]:
    """The review state of each journal entry on ``path``, oldest first."""
    return [e["review"]["state"] for e in (await panel.journal(path=path))[::-1] if e["review"]]


# Two server starts (server_process waits 90 s for each) and two loads of JupyterLab on a loaded machine.
@pytest.mark.timeout(2 * 90 + 120)
async def test_the_mark_and_the_placeholder_survive_a_restart_and_undo_and_restore_work_after_it(tmp_path):
    work, path = tmp_path, "restart.ipynb"
    (work / "root").mkdir()
    cells = [nbformat.v4.new_code_cell(s) for s in ("rate = 1", "old = 2", "total = rate * 3")]
    python = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    notebook = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": python})
    nbformat.write(notebook, work / "root" / path)

    with lab_server(work) as url:
        async with (
            lab_tab(url, TOKEN, path) as tab,
            connect(url, AUTH, client_info=CLAUDE) as agent,
        ):
            rate, old, _ = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
            await ok(
                agent, "update_cell", path=path, cell_id=rate, old_string="rate = 1", new_string="rate = 2"
            )
            await ok(agent, "delete_cells", path=path, cell_ids=[old])
            # The person sees the agent's text with its mark, and a placeholder where the deleted cell was.
            await expect(tab.cells).to_have_count(2)
            await expect(tab.lines(0)).to_have_text(["rate = 2"])
            await expect(mark(tab, 0)).to_contain_text("Claude Code changed this · ")
            placeholder = tab.page.locator(PLACEHOLDER)
            await expect(placeholder).to_contain_text("A cell deleted by Claude Code · ")
            await shots.keep(tab.page.locator(".jp-NotebookPanel:visible"), "before-restart")
            async with PanelAPI(url, AUTH) as panel:  # the person keeps nothing yet
                assert await states(panel, path) == ["pending", "pending"]

    with lab_server(work) as url:  # the same root, config and journal file
        async with lab_tab(url, TOKEN, path) as tab:  # a fresh tab
            # The person sees the same: the agent's text with its mark, and the placeholder.
            await expect(tab.cells).to_have_count(2)
            await expect(tab.lines(0)).to_have_text(["rate = 2"])
            await expect(mark(tab, 0)).to_contain_text("Claude Code changed this · ")
            await expect(mark(tab, 1)).to_have_count(0)
            placeholder = tab.page.locator(PLACEHOLDER)
            await expect(placeholder).to_contain_text("A cell deleted by Claude Code · ")
            await expect(tab.cell(0).locator(".jp-mcp-DeletedCells")).to_have_attribute("data-side", "after")
            await shots.keep(tab.page.locator(".jp-NotebookPanel:visible"), "after-restart")

            # Undo in the cell returns the text from before the agent's change.
            await button(mark(tab, 0), UNDO).click()
            await expect(tab.lines(0)).to_have_text(["rate = 1"])
            await expect(mark(tab, 0)).to_have_count(0)
            # Restore brings the deleted cell back where it was.
            await placeholder.get_by_role("button", name=RESTORE).click()
            await expect(tab.cells).to_have_count(3)
            await expect(tab.lines(1)).to_have_text(["old = 2"])
            await expect(placeholder).to_have_count(0)
            await shots.keep(tab.page.locator(".jp-NotebookPanel:visible"), "after-restart-undone")

            async with PanelAPI(url, AUTH) as panel, connect(url, AUTH, client_info=CLAUDE) as agent:
                assert await states(panel, path) == ["undone", "undone"]
                again = (await ok(agent, "read_cells", path=path))["cells"]  # a second read, on the server
                assert [(c["id"], c["source"]) for c in again] == [
                    (rate, "rate = 1"),
                    (old, "old = 2"),
                    (again[2]["id"], "total = rate * 3"),
                ]

                async def saved() -> bool:  # and the file on disk, once the server has saved it
                    return on_disk(work / "root" / path) == ["rate = 1", "old = 2", "total = rate * 3"]

                await panel.until(saved, timeout=30)
