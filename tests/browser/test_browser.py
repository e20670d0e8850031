"""What a person sees in JupyterLab while an agent works: a real JupyterLab in headless Chromium,
the agent an MCP client over HTTP, both on the same notebook.

The ``@SHARED`` tests share one server and one JupyterLab page (tests/support/shared_lab.py): each opens a
notebook of its own name, its agent's session ends with it, none runs code or changes a setting, and
each closes its tab (the collaborators panel it opened may stay open in the sidebar: no later test
looks there). The others need a server of their own: the kernel test reads the server's kernels and
sessions in-process, the cache test starts fresh browsers, the workspace tests follow each other."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import httpx
import pytest
from mcp_types import Implementation
from playwright.async_api import expect
from traitlets.config import Config

from ..documents.test_live_editing import source_of, wait_on_disk
from ..support.browser import CHROMIUM, NO_KERNEL, lab_starts_kernel, lab_tab, with_lab
from ..support.keystrokes import type_until
from ..support.mcp_client import connect, ok
from ..support.shared_lab import SHARED, shared_lab_fixture, shared_panel_fixture  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"
)

# Prints a step, then waits for the test to say go (a file in the kernel's cwd, the server root), so
# the test sees each line arrive while the cell is still running, with no timing guesses.
AGENT_CODE = """\
import os, time
for step in range(3):
    print(f"step {step}", flush=True)
    deadline = time.monotonic() + 30
    while not os.path.exists(f".go{step}") and time.monotonic() < deadline:
        time.sleep(0.05)
answer = 6 * 7
print("answer", answer)"""


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path: Path, request: pytest.FixtureRequest) -> Config:
    """The suite's server, plus JupyterLab itself."""
    return with_lab(jp_server_config, tmp_path / "lab-settings", starts_kernel=lab_starts_kernel(request))


@pytest.fixture
def token(jp_auth_header) -> str:
    return jp_auth_header["Authorization"].split()[-1]


@SHARED
async def test_agent_edits_appear_in_the_open_tab_without_a_reload(shared_lab, shared_panel):
    path = shared_lab.make_notebook(
        "live.ipynb", cells=["a = 1", {"cell_type": "markdown", "source": "# Notes"}]
    )
    async with shared_lab.notebook(path) as tab, connect(shared_lab.url, shared_lab.auth) as agent:
        # Edits need no kernel: this tab (tests/support/shared_lab.py) started none, and says so.
        await expect(tab.page.locator(".jp-NotebookPanel .jp-Toolbar-kernelName")).to_have_text("No Kernel")
        await expect(tab.lines(0)).to_have_text(["a = 1"])
        await expect(tab.heading(1, "Notes")).to_be_visible()
        await tab.page.evaluate("window.beforeTheAgent = true")
        first, notes = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])

        await ok(
            agent,
            "insert_cells",
            path=path,
            after=first,
            cells=[{"cell_type": "code", "source": "b = a + 1\nprint(b)"}],
        )
        await expect(tab.cells).to_have_count(3)
        await expect(tab.lines(1)).to_have_text(["b = a + 1", "print(b)"])

        await ok(agent, "update_cell", path=path, cell_id=first, old_string="a = 1", new_string="a = 41")
        await expect(tab.lines(0)).to_have_text(["a = 41"])
        await ok(agent, "update_cell", path=path, cell_id=notes, source="# Notes by the agent")
        await expect(tab.heading(2, "Notes by the agent")).to_be_visible()

        # The same page all along: nothing reloaded it to show the agent's changes.
        assert await tab.page.evaluate("window.beforeTheAgent") is True
        # And the tab does not think it holds unsaved changes: the server saved the agent's edits.
        await expect(tab.page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0)
    assert (await shared_panel.http.get(f"{shared_lab.url}api/kernels")).json() == []


@SHARED
async def test_the_collaborators_panel_shows_the_agent_by_name_with_its_caret(shared_lab, shared_panel):
    path = shared_lab.make_notebook("work/team.ipynb", cells=["a = 1", "b = 2"])
    client = Implementation(name="claude-code", version="2.1.0", title="Claude Code")
    async with shared_lab.notebook(path) as tab:
        await tab.page.locator('.jp-SideBar .lm-TabBar-tab[data-id="jp-collaboration-panel"]').click()
        panel = tab.page.locator("#jp-collaboration-panel")
        async with connect(shared_lab.url, shared_lab.auth, client_info=client) as agent:
            ids = [c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"]]
            await ok(agent, "update_cell", path=path, cell_id=ids[1], source="b = 3")
            await expect(tab.lines(1)).to_have_text(["b = 3"])
            # Listed by its client's name, in the notebook it works on.
            await expect(panel.get_by_text("Claude Code (agent)")).to_be_visible()
            await panel.get_by_text("Claude Code (agent)").click()  # unfolds the documents it has open
            await expect(panel.get_by_text("work/team.ipynb")).to_be_visible()
            # Its caret, in its colour, in the cell it edited, and only there.
            sessions = (await shared_panel.get("sessions"))["sessions"]
            (record,) = [s for s in sessions if s["client"]["name"] == "claude-code"]
            caret = tab.cell(1).locator(".jp-remote-cursor")
            await expect(caret).to_have_count(1)
            red, green, blue = (int(record["color"][i : i + 2], 16) for i in (1, 3, 5))
            await expect(caret).to_have_css("border-left-color", f"rgb({red}, {green}, {blue})")
            await expect(tab.cell(0).locator(".jp-remote-cursor")).to_have_count(0)
            await tab.page.screenshot(path="/tmp/presence-collaborators.png")
            # Its presence leaves saving to the people: the agent's edit is saved as usual.
            await expect(tab.page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0)

            # The other way round: the person clicks into the first cell, at the end of its line;
            # the agent's outline says which cell that is.
            for index, key in ((0, "End"), (1, "Home")):  # the end of a text, then a character
                await tab.lines(index).click()
                await tab.page.keyboard.press(key)
                for _ in range(100):
                    people = (await ok(agent, "get_notebook", path=path)).get("people", [])
                    if people and people[0].get("cell_id") == ids[index]:
                        break
                    await asyncio.sleep(0.1)
                assert [p.get("cell_id") for p in people] == [ids[index]], people
        # The session ended: it left.
        await expect(panel.get_by_text("Claude Code (agent)")).to_have_count(0)
        await expect(tab.cell(1).locator(".jp-remote-cursor")).to_have_count(0)


async def test_person_watches_the_agents_run_live_and_shares_its_kernel(
    server_url, jp_auth_header, token, make_notebook, jp_root_dir, jp_serverapp, tmp_path
):
    path = make_notebook("run.ipynb", cells=[{"cell_type": "markdown", "source": "# Agent at work"}])
    async with connect(server_url, jp_auth_header) as agent:
        # The agent starts the notebook's kernel first: a tab attaches to the session that exists
        # when it opens and never adopts one created later, so opened first, the tab would start
        # a kernel of its own. execute_code keeps no history: the first cell still gets [1].
        await ok(agent, "execute_code", path=path, code="pass")
        (session,) = await jp_serverapp.session_manager.list_sessions()
        kernel_id = session["kernel"]["id"]

        async with lab_tab(server_url, token, path) as tab:
            await expect(tab.kernel_status).to_have_attribute("data-status", "idle")
            await expect(tab.heading(0, "Agent at work")).to_be_visible()

            run = asyncio.create_task(ok(agent, "insert_and_execute", path=path, source=AGENT_CODE))
            prompts_while_running = []
            try:
                await expect(tab.cells).to_have_count(2)
                for step in range(3):
                    # Each line is on screen while the cell still runs, before the next is printed.
                    await expect(tab.outputs(1)).to_contain_text(f"step {step}")
                    await expect(tab.outputs(1)).not_to_contain_text(f"step {step + 1}")
                    await expect(tab.kernel_status).to_have_attribute("data-status", "busy")
                    assert not run.done()
                    # The kernel has sent execute_input before any output: the prompt is settled.
                    prompts_while_running.append(await tab.prompt(1).text_content())
                    if step == 0:
                        await tab.page.screenshot(path=tmp_path / "running.png")
                    (jp_root_dir / f".go{step}").touch()
                result = await asyncio.wait_for(run, 30)
            finally:
                run.cancel()
                with contextlib.suppress(BaseException):
                    await run
            assert result["status"] == "ok", result
            assert result["cells"][0]["execution_count"] == 1
            await expect(tab.prompt(1)).to_have_text("[1]:")
            await expect(tab.outputs(1)).to_contain_text("answer 42")

            # The person runs a cell of their own with Shift+Enter: select the agent's cell
            # (command mode), add a cell below, type, run. It sees the agent's variable.
            await tab.prompt(1).click()
            await tab.page.keyboard.press("b")
            await expect(tab.cells).to_have_count(3)
            await tab.page.keyboard.press("Enter")
            await tab.page.keyboard.type("print('the person sees', answer)")
            await tab.page.keyboard.press("Shift+Enter")
            await expect(tab.outputs(2)).to_contain_text("the person sees 42")
            await expect(tab.prompt(2)).to_have_text("[2]:")
            await tab.page.screenshot(path=tmp_path / "done.png")

        # One kernel all along: the agent's, which the tab used too.
        assert jp_serverapp.kernel_manager.list_kernel_ids() == [kernel_id]
        (session,) = await jp_serverapp.session_manager.list_sessions()
        assert session["kernel"]["id"] == kernel_id

    # The tab shows [*] for the whole run: the count reaches the cell only with the reply, as when
    # JupyterLab runs a cell itself (a count mid-run makes the tab take the cell for idle).
    assert prompts_while_running == ["[*]:"] * 3


@SHARED
async def test_a_person_typing_in_jupyterlab_keeps_every_keystroke_while_the_agent_rewrites_the_cell(
    shared_lab,
):
    path = shared_lab.make_notebook("typing.ipynb", cells=["total = 0\nfor x in range(3):\n    total += x"])
    note = "  # a person types this"
    async with shared_lab.notebook(path) as tab, connect(shared_lab.url, shared_lab.auth) as agent:
        await expect(tab.lines(0)).to_have_count(3)
        (cell,) = (await ok(agent, "read_cells", path=path))["cells"]
        # The person clicks at the end of line 1 and types at 20 keys a second, and goes on typing
        # until at least 3 of the agent's writes have landed while they type (however busy the machine).
        await tab.lines(0).nth(0).click()
        await tab.page.keyboard.press("End")
        writes = landed = 0
        typing = asyncio.create_task(
            type_until(lambda i, ch: tab.page.keyboard.type(ch), note, lambda: landed >= 3)
        )
        try:
            while not typing.done():  # meanwhile the agent rewrites the whole cell, again and again
                writes += 1
                source = f"total = 0\nfor x in range(3):\n    total += x * {writes}"
                await ok(agent, "update_cell", path=path, cell_id=cell["id"], source=source)
                landed += not typing.done()
                await asyncio.sleep(0.2)
            typed = await typing
        finally:
            typing.cancel()
        expected = [f"total = 0{typed}", "for x in range(3):", f"    total += x * {writes}"]
        await expect(tab.lines(0)).to_have_text(expected)  # CodeMirror shows both, in place
        assert landed >= 3
        live = (await ok(agent, "read_cells", path=path))["cells"][0]["source"]
        assert live.split("\n") == expected

    saved = await wait_on_disk(shared_lab.root, path, lambda cells: source_of(cells[0]) == live, timeout=15)
    assert source_of(saved[0]) == "\n".join(expected)


@NO_KERNEL
async def test_a_new_tab_keeps_chromiums_cache_of_jupyterlab_and_nothing_an_earlier_test_left(
    server_url, token, make_notebook
):
    """Each tab's Chromium starts on a profile kept between tests for its caches (tests/support/browser.py): the
    second load gets JupyterLab's bundle from the cache, and none of the first tab's cookies or storage."""
    path = make_notebook("first.ipynb", cells=["a = 1"])
    leave = """async () => {
        localStorage.setItem("left-behind", "1");
        document.cookie = "left-behind=1; max-age=3600; path=/";
        await new Promise((done) => { indexedDB.open("left-behind").onsuccess = done; });
        await caches.open("left-behind");
    }"""
    found = """async () => ({
        local: Object.keys(localStorage).filter((k) => k.startsWith("left-behind")),
        cookie: document.cookie.includes("left-behind"),
        indexedDB: (await indexedDB.databases()).map((d) => d.name).filter((n) => n === "left-behind"),
        cacheStorage: await caches.has("left-behind"),
    })"""
    bundle = """() => performance.getEntriesByType("resource")
        .filter((e) => /\\/static\\/lab\\/jlab_core\\.[0-9a-f]+\\.js/.test(e.name))
        .map((e) => e.transferSize)"""
    async with lab_tab(server_url, token, path) as tab:
        await tab.page.evaluate(leave)
        assert (await tab.page.evaluate(found)) == {
            "local": ["left-behind"], "cookie": True, "indexedDB": ["left-behind"], "cacheStorage": True
        }  # fmt: skip
    async with lab_tab(server_url, token, path) as tab:
        assert (await tab.page.evaluate(found)) == {
            "local": [],
            "cookie": False,
            "indexedDB": [],
            "cacheStorage": False,
        }
        assert await tab.page.evaluate(bundle) == [0]  # 0 bytes over the network: from Chromium's cache


# JupyterLab keeps a person's workspace (the tabs and sidebars it restores on load) and settings on its
# server, in folders it picks once per process; each test's server has folders of its own (``with_lab``),
# so no test's tab opens on the notebooks, panels or theme an earlier test's person left.
THEMES = "lab/api/settings/@jupyterlab/apputils-extension:themes"
_left_behind: list[str] = []


async def test_a_person_leaves_a_notebook_open_and_the_dark_theme_on(server_url, jp_auth_header):
    workspace = {
        "data": {"notebook:left-open.ipynb": {"data": {"path": "left-open.ipynb", "factory": "Notebook"}}},
        "metadata": {"id": "default"},
    }
    async with httpx.AsyncClient(base_url=server_url, headers=jp_auth_header) as http:
        (await http.put("lab/api/workspaces/default", json=workspace)).raise_for_status()
        (await http.put(THEMES, json={"raw": '{"theme": "JupyterLab Dark"}'})).raise_for_status()
        assert "left-open.ipynb" in (await http.get("lab/api/workspaces/default")).text
        assert "Dark" in (await http.get(THEMES)).json()["raw"]
    _left_behind.append(server_url)


async def test_the_next_tests_jupyterlab_has_neither(server_url, jp_auth_header):
    if not _left_behind:
        pytest.skip("runs after the test above, in the same process")
    async with httpx.AsyncClient(base_url=server_url, headers=jp_auth_header) as http:
        workspace = await http.get("lab/api/workspaces/default")
        theme = await http.get(THEMES)
    assert workspace.status_code == 200 and "left-open.ipynb" not in workspace.text
    assert theme.status_code == 200 and "Dark" not in theme.json()["raw"]
