"""One JupyterLab for a test file: a server in a process of its own, and one Chromium page on it in which
each test opens its own notebook, as a person opens one notebook after another in the same tab.

Each test that shares them skips a server's start, a Chromium's and a load of JupyterLab: about 3-5
CPU-s less here than a test of its own, the first one paying for the server's process instead (two
tests gain a little, more gain more; a file whose tests open a second browser anyway gains nothing). Tests
can share them where each one:
- works on a notebook of its own name, and reads the journal and review states by that path (the
  server's journal, review states and rooms are shared; its agents' sessions end with the test);
- changes no server-wide state: not the policy, no setting, no "stop all agents";
- leaves no tab open (``SharedLab.notebook`` closes every tab after it, so the next test's locators see
  its notebook only), and runs in the file's event loop (``SHARED``), where the page lives.
A test that needs a server or a setting of its own (a theme, a kernel its tab starts, the server's
objects in-process) keeps ``lab_tab`` on pytest-jupyter's server.

The server runs as a person runs it (``lab_server``): JupyterLab, collaboration, this extension, its
journal in a file; notebooks open without a kernel (``LabApp.notebook_starts_kernel``): an agent's run
starts the notebook's kernel itself, as it does for a notebook nobody has open.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Page, expect
from traitlets.config import Config

from ..conftest import MakeNotebook, write_notebook
from .browser import LabTab, chromium_tab, with_lab
from .panel import PanelAPI
from .server_process import TOKEN, server_on

AUTH = {"Authorization": f"token {TOKEN}"}
# The tests of a file that share its JupyterLab run in the file's event loop, where the page lives.
# Such a file imports the fixtures too: ``from .shared_lab import SHARED, shared_lab_fixture, ...``.
SHARED = pytest.mark.asyncio(loop_scope="module")


@contextmanager
def lab_server(work: Path, *, starts_kernel: bool = True) -> Iterator[str]:
    """A Jupyter server process with JupyterLab and collaboration on ``work``'s root, config, data and
    state folders, and the journal in ``work/journal.sqlite``: the same on every start. Yields its URL."""
    (work / "config").mkdir(parents=True, exist_ok=True)
    extensions = {"jupyter_server_ydoc": True, "jupyter_server_fileid": True, "jupyter_mcp_ext": True}
    config = with_lab(
        Config({"ServerApp": {"jpserver_extensions": extensions}}),
        work / "lab-settings",
        starts_kernel=starts_kernel,
    )
    config.merge(Config({"MCPExtensionApp": {"journal_file": str(work / "journal.sqlite")}}))
    (work / "config" / "jupyter_server_config.json").write_text(json.dumps(config))
    with server_on(work, clean_exit=True) as url:
        yield url


@dataclass
class SharedLab:
    """The file's server (``url``, ``auth``, ``root``) and its JupyterLab page (``tab``)."""

    url: str
    root: Path
    tab: LabTab
    auth = AUTH
    token = TOKEN

    @property
    def make_notebook(self) -> MakeNotebook:
        """``make_notebook`` (tests/conftest.py) on this server's root."""
        return functools.partial(write_notebook, self.root)

    @asynccontextmanager
    async def notebook(self, path: str) -> AsyncIterator[LabTab]:
        """Open ``path`` in the page as a person does in a JupyterLab already open: File > Open from
        Path. Yields once its first cell is on screen; closes every tab on the way out (File > Close
        All Tabs, once the notebook is saved). After a failure the page is loaded afresh instead, so
        whatever the failed test left on screen does not reach the next one."""
        page = self.tab.page
        self.tab.console.clear()
        await _file_menu(page, "Open from Path…")
        dialog = page.locator(".jp-Dialog")
        await dialog.get_by_placeholder("/path/relative/to/jlab/root").fill(path)
        await dialog.get_by_role("button", name="Open", exact=True).click()
        await expect(page.locator(".jp-NotebookPanel")).to_have_count(1)
        await self.tab.cell(0).wait_for()
        try:
            yield self.tab
        except BaseException:
            print("JupyterLab console:", *self.tab.console, sep="\n  ")
            await self._load()
            raise
        await expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0)
        await _file_menu(page, "Close All Tabs")
        await expect(page.locator(".jp-NotebookPanel")).to_have_count(0)

    async def _load(self) -> None:
        """Load JupyterLab with no notebook open (a workspace of its own: the default one keeps tabs)."""
        await self.tab.page.goto(f"{self.url}lab/workspaces/shared?reset&token={self.token}")
        await self.tab.page.locator(".jp-Launcher").first.wait_for()


async def _file_menu(page: Page, item: str) -> None:
    """Click ``item`` in JupyterLab's File menu, as a person does."""
    await page.locator(".lm-MenuBar-itemLabel", has_text="File").click()
    await page.locator(".lm-Menu-itemLabel", has_text=item).click()


@pytest_asyncio.fixture(scope="module", loop_scope="module", name="shared_lab")
async def shared_lab_fixture(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SharedLab]:
    """The file's server and page: see the module doc."""
    work = tmp_path_factory.mktemp("shared-lab")
    with lab_server(work, starts_kernel=False) as url:
        async with chromium_tab() as tab:
            lab = SharedLab(url, work / "root", tab)
            await lab._load()
            yield lab


@pytest_asyncio.fixture(loop_scope="module", name="shared_panel")
async def shared_panel_fixture(shared_lab: SharedLab) -> AsyncIterator[PanelAPI]:
    """The MCP panel's REST API on the file's server (``panel`` in tests/conftest.py)."""
    async with PanelAPI(shared_lab.url, shared_lab.auth) as api:
        yield api
