"""Cells an agent deleted (issue 20, item 4), in a real JupyterLab (headless Chromium) with a real agent
over MCP: a placeholder stands where they were, naming the agent, in every person's tab and after a
reload; Restore brings the cells back at that place with their source; Keep removes the placeholder for
everyone. The placeholder is never a cell: the shared document and the saved file do not hold it.
Screenshots go to tests/support/shots.py's folder (run with ``JUPYTER_PATH=<worktree>/.jp`` to test a build of
one's own)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp_types import Implementation
from playwright.async_api import expect
from traitlets.config import Config

from ..support import shots
from ..support.browser import CHROMIUM, NO_KERNEL, lab_starts_kernel, lab_tab, with_lab
from ..support.mcp_client import connect, ok

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"
)

CLAUDE = Implementation(name="claude-code", title="Claude Code", version="2.0")
PLACEHOLDER = ".jp-NotebookPanel .jp-mcp-DeletedCells"


@pytest.fixture
def jp_server_config(jp_server_config: Config, request: pytest.FixtureRequest, tmp_path: Path) -> Config:
    return with_lab(jp_server_config, tmp_path / "lab-settings", starts_kernel=lab_starts_kernel(request))


@pytest.fixture
def token(jp_auth_header) -> str:
    return jp_auth_header["Authorization"].split()[-1]


async def states(panel, path: str) -> list[str]:
    return [e["review"]["state"] for e in (await panel.journal(path=path))[::-1] if e["review"]]


@NO_KERNEL
async def test_a_deleted_cell_leaves_a_placeholder_where_it_was_that_a_reload_keeps_and_restore_undoes(
    server_url, jp_auth_header, token, make_notebook, panel, jp_root_dir
):
    path = make_notebook("del.ipynb", cells=["a = 1", "b = 2", "c = 3"])
    async with (
        lab_tab(server_url, token, path) as tab,
        connect(server_url, jp_auth_header, client_info=CLAUDE) as agent,
    ):
        _, b, _ = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        reads: list[str] = []  # the marks' reads of the notebook's journal from now on
        tab.page.on(
            "request", lambda r: reads.append(r.url) if "api/mcp/journal?limit=1000&path" in r.url else None
        )
        await ok(agent, "delete_cells", path=path, cell_ids=[b])
        await expect(tab.cells).to_have_count(2)
        placeholder = tab.page.locator(PLACEHOLDER)
        await expect(placeholder).to_contain_text("A cell deleted by Claude Code · ")
        assert reads == []  # it came with the journal's event, no fetch
        # Where b was: at the end of the cell before it (a), over the cell after it (c).
        await expect(tab.cell(0).locator(".jp-mcp-DeletedCells")).to_have_attribute("data-side", "after")
        box, under = await placeholder.bounding_box(), await tab.cell(1).bounding_box()
        assert box and under and box["y"] + box["height"] <= under["y"] + 1
        await expect(placeholder).to_have_attribute("role", "group")
        await shots.keep(tab.page.locator(".jp-NotebookPanel:visible"), "deleted-placeholder")

        await tab.page.reload()
        await tab.cell(0).wait_for()
        await expect(placeholder).to_contain_text("A cell deleted by Claude Code")  # read from the journal

        await placeholder.get_by_role("button", name="Restore the deleted cells here").click()
        await expect(tab.cells).to_have_count(3)
        await expect(tab.lines(1)).to_have_text(["b = 2"])
        await expect(placeholder).to_have_count(0)
        assert await states(panel, path) == ["undone"]
        cells = (await ok(agent, "get_notebook", path=path))["cells"]
        assert [c["id"] for c in cells][1] == b
        await shots.keep(tab.page.locator(".jp-NotebookPanel:visible"), "deleted-restored")


@NO_KERNEL
async def test_keep_removes_the_placeholder_of_cells_deleted_together_for_every_person_and_no_file_holds_it(
    server_url, jp_auth_header, token, make_notebook, panel, jp_root_dir
):
    path = make_notebook("keep.ipynb", cells=["a = 1", "b = 2", "c = 3", "d = 4"])
    async with (
        lab_tab(server_url, token, path) as tab,
        lab_tab(server_url, token, path) as other,
        connect(server_url, jp_auth_header, client_info=CLAUDE) as agent,
    ):
        _, b, c, _ = (cell["id"] for cell in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "delete_cells", path=path, cell_ids=[b, c])
        for page in (tab, other):
            await expect(page.cells).to_have_count(2)
            await expect(page.page.locator(PLACEHOLDER)).to_have_count(1)  # one for the two cells
            await expect(page.page.locator(PLACEHOLDER)).to_contain_text("2 cells deleted by Claude Code")
        bar = tab.page.locator(".jp-NotebookPanel .jp-mcp-ReviewBar")
        await expect(bar).to_contain_text("2 cells deleted by Claude Code since ")  # counted with the rest
        await shots.keep(other.page.locator(".jp-NotebookPanel:visible"), "deleted-two-cells")

        await tab.page.locator(PLACEHOLDER).get_by_role("button", name="Keep the cells deleted").click()
        await expect(tab.page.locator(PLACEHOLDER)).to_have_count(0)
        await expect(other.page.locator(PLACEHOLDER)).to_have_count(0)  # the other person's tab too
        assert await states(panel, path) == ["kept"]
        await expect(bar).to_be_hidden()
        await expect(tab.cells).to_have_count(2)

        # Never a cell: the live document and the saved file hold the two cells left, nothing else.
        live = (await ok(agent, "read_cells", path=path))["cells"]
        assert [cell["source"] for cell in live] == ["a = 1", "d = 4"]

        async def saved() -> bool:
            return len(json.loads((jp_root_dir / path).read_text())["cells"]) == 2

        await panel.until(saved, timeout=30)
        assert "DeletedCells" not in (jp_root_dir / path).read_text()
