"""The inline diff in a cell (issue 20, item 2), in a real JupyterLab (headless Chromium) with a real
agent over MCP: "Show diff" turns the cell's own editor into a merge view of the agent's change, one
chunk per changed place; the person types on in it and the text reaches the server; Reject puts the
original back there (a person's edit through the shared document), Accept keeps the agent's text;
with every chunk settled the editor is itself again, and Keep settles the change on the server.
Run with ``JUPYTER_PATH=<worktree>/.jp`` to test a build of one's own.

Both tests share one server and one JupyterLab page (tests/support/shared_lab.py): each opens a notebook of
its own name, reads review states by its path, changes no setting, and closes its tab."""

from __future__ import annotations

import pytest
from playwright.async_api import Locator, expect

from ..support import shots
from ..support.browser import CHROMIUM, LabTab
from ..support.mcp_client import connect, ok
from ..support.shared_lab import SHARED, shared_lab_fixture, shared_panel_fixture  # noqa: F401  (fixtures)
from .test_review_marks import CLAUDE, _server_sees, button, mark, states

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"
)

LINES = ["a = 1", "b = 2", "c = 3", "d = 4", "e = 5", "f = 6", "g = 7"]
SHOW = "Show the agent change in this cell as a diff"
HIDE = "Hide the diff of this cell"


def chunks(tab: LabTab, index: int) -> Locator:
    """The merge view's deleted-text blocks in a cell, one per chunk (each with Accept and Reject)."""
    return tab.cell(index).locator(".cm-deletedChunk")


def source(lines: list[str]) -> str:
    return "\n".join(lines)


@SHARED
async def test_show_diff_has_a_chunk_per_change_the_person_types_on_and_rejects_one_accepts_the_other(
    shared_lab, shared_panel
):
    path = shared_lab.make_notebook("diff.ipynb", cells=[source(LINES), "z = 0"])
    async with (
        shared_lab.notebook(path) as tab,
        connect(shared_lab.url, shared_lab.auth, client_info=CLAUDE) as agent,
    ):
        a, z = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "update_cell", path=path, cell_id=a, old_string="a = 1", new_string="a = 10")
        await ok(agent, "update_cell", path=path, cell_id=a, old_string="g = 7", new_string="g = 70")
        agents = ["a = 10", *LINES[1:6], "g = 70"]
        await expect(tab.lines(0)).to_have_text(agents)
        await expect(button(mark(tab, 1), SHOW)).to_have_count(0)  # a cell nobody changed has none

        await button(mark(tab, 0), SHOW).click()
        await expect(chunks(tab, 0)).to_have_count(2)
        await expect(tab.cell(0).locator(".cm-deletedLine")).to_have_text(["a = 1", "g = 7"])
        await expect(tab.cell(0).locator(".cm-changedLine")).to_have_text(["a = 10", "g = 70"])
        await expect(button(mark(tab, 0), HIDE)).to_have_attribute("aria-pressed", "true")
        await shots.keep(tab.cell(0), "diff-open")

        # The person types on in the cell, between the two changes: it reaches the server, and it is
        # theirs, so it is on both sides of the diff (still two chunks to review).
        await tab.lines(0).nth(3).click()
        await tab.page.keyboard.press("End")
        await tab.page.keyboard.type("  # mine")
        typed = [*agents[:3], "d = 4  # mine", *agents[4:]]
        await expect(tab.lines(0)).to_have_text(typed)
        await _server_sees(agent, path, source(typed))
        await expect(chunks(tab, 0)).to_have_count(2)
        await shots.keep(tab.cell(0), "diff-typed")

        # Reject the first chunk: the original comes back there, in the shared document.
        reject = (
            chunks(tab, 0).nth(0).get_by_role("button", name="Reject this chunk: put the text before back")
        )
        await reject.click()
        rejected = ["a = 1", *typed[1:]]
        await expect(chunks(tab, 0)).to_have_count(1)
        await _server_sees(agent, path, source(rejected))

        # Accept the other: the agent's text stays, every chunk is settled, the editor is itself again.
        await chunks(tab, 0).get_by_role("button", name="Accept this chunk: keep the agent's text").click()
        await expect(chunks(tab, 0)).to_have_count(0)
        await expect(tab.cell(0).locator(".jp-mcp-mod-diffOpen")).to_have_count(0)
        await expect(tab.lines(0)).to_have_text(rejected)
        await expect(button(mark(tab, 0), SHOW)).to_have_attribute("aria-pressed", "false")
        await shots.keep(tab.cell(0), "diff-settled")
        await _server_sees(agent, path, source(rejected))  # Accept changed no text
        # A diff settles nothing on the server.
        assert await states(shared_panel, path) == ["pending", "pending"]

        await button(mark(tab, 0), "Keep the agent change in this cell").click()
        await expect(mark(tab, 0)).to_have_count(0)
        assert await states(shared_panel, path) == ["kept", "kept"]
        await expect(tab.lines(0)).to_have_text(rejected)
        assert z  # the other cell was never touched


@SHARED
async def test_an_agent_change_while_the_diff_is_open_is_one_more_chunk_and_undo_closes_it(
    shared_lab, shared_panel
):
    path = shared_lab.make_notebook("live.ipynb", cells=[source(LINES)])
    async with (
        shared_lab.notebook(path) as tab,
        connect(shared_lab.url, shared_lab.auth, client_info=CLAUDE) as agent,
    ):
        (a,) = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "update_cell", path=path, cell_id=a, old_string="a = 1", new_string="a = 10")
        await expect(tab.lines(0).nth(0)).to_have_text("a = 10")
        await button(mark(tab, 0), SHOW).click()
        await expect(chunks(tab, 0)).to_have_count(1)

        await ok(agent, "update_cell", path=path, cell_id=a, old_string="g = 7", new_string="g = 70")
        await expect(chunks(tab, 0)).to_have_count(2)  # live: the agent's next change is a chunk too
        await expect(tab.cell(0).locator(".cm-deletedLine")).to_have_text(["a = 1", "g = 7"])

        await button(mark(tab, 0), "Undo the agent change in this cell").click()
        await expect(tab.lines(0)).to_have_text(LINES)  # both changes undone on the server
        await expect(chunks(tab, 0)).to_have_count(0)
        await expect(tab.cell(0).locator(".jp-mcp-mod-diffOpen")).to_have_count(0)
        await expect(mark(tab, 0)).to_have_count(0)
        assert await states(shared_panel, path) == ["undone", "undone"]

        # Hide diff, and a diff with nothing in it, from the keyboard.
        await ok(agent, "update_cell", path=path, cell_id=a, old_string="b = 2", new_string="b = 20")
        show = button(mark(tab, 0), SHOW)
        await show.focus()
        await tab.page.keyboard.press("Enter")
        await expect(chunks(tab, 0)).to_have_count(1)
        await button(mark(tab, 0), HIDE).click()
        await expect(chunks(tab, 0)).to_have_count(0)
        await expect(tab.lines(0).nth(1)).to_have_text("b = 20")  # hiding changes no text
