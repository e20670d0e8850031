"""A person in JupyterLab: Debian's Chromium, headless, driven by Playwright's async API.

Playwright never downloads a browser here: it starts the system ``/usr/bin/chromium``. The flags
keep Chromium off the network (this machine's network is closed; without them Chromium keeps
trying Google's hosts) and let it run as root in a container.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.async_api import Locator, Page, async_playwright, expect
from tornado.netutil import bind_sockets
from tornado.testing import bind_unused_port
from traitlets.config import Config

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]

# JupyterLab's front-end extensions installed beside this Python (jupyter-collaboration's among
# them). pytest-jupyter points Jupyter's data path into a tmp dir, so the server is told of these.
LABEXTENSIONS = Path(sys.prefix) / "share" / "jupyter" / "labextensions"
# A build of one's own (JUPYTER_PATH=<dir> holding labextensions/jupyter-mcp-ext) is found first:
# JupyterLab serves the first copy of an extension it finds, and the installed one is listed above.
OWN_BUILDS = [Path(p) / "labextensions" for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]

# Each browser test starts Playwright's driver, a Node.js process: with Node's compile cache (a folder
# shared by the run's processes, Node 22+) it starts on 0.5 CPU-s instead of 0.7 here.
os.environ.setdefault("NODE_COMPILE_CACHE", str(Path(tempfile.gettempdir()) / "jupyter-mcp-ext-node-cache"))

# Loading JupyterLab (its whole bundle, on two cores, with the server on the test's own event loop)
# takes about 10 s; every later DOM condition gets the same generous bound.
TIMEOUT_MS = 30_000
expect.set_options(timeout=TIMEOUT_MS)


def with_lab(config: Config, settings_dir: Path, *, starts_kernel: bool = True) -> Config:
    """``config`` (the suite's server) plus JupyterLab, serving the installed front-end extensions, offline.

    ``starts_kernel=False`` is JupyterLab's own ``LabApp.notebook_starts_kernel``: a notebook the
    person opens gets no kernel of its own (it still joins a session that runs for it), as for a test
    that runs no code in it; see ``lab_starts_kernel``.

    ``settings_dir`` receives JupyterLab's settings overrides: no news prompt (a toast over the
    notebook) and no build check or extension manager reaching out to the network. Beside it go the
    person's workspace (the tabs and sidebars JupyterLab restores) and settings: JupyterLab picks their
    folders once per process, so without these every later test's tab would open on what an earlier
    test's person left (its notebooks, its open panel, its theme).
    """
    settings_dir.mkdir(parents=True, exist_ok=True)
    overrides = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}}
    (settings_dir / "overrides.json").write_text(json.dumps(overrides), encoding="utf-8")
    extensions = {**config.ServerApp.jpserver_extensions, "jupyterlab": True}
    merged = Config(config)
    merged.merge(Config({"ServerApp": {"jpserver_extensions": extensions}}))
    merged.merge(
        Config(
            {
                "LabApp": {
                    "extra_labextensions_path": [*map(str, OWN_BUILDS), str(LABEXTENSIONS)],
                    "app_settings_dir": str(settings_dir),
                    "workspaces_dir": str(settings_dir.parent / "lab-workspaces"),
                    "user_settings_dir": str(settings_dir.parent / "lab-user-settings"),
                    "news_url": None,
                    "extension_manager": "readonly",
                    "notebook_starts_kernel": starts_kernel,
                },
                "ServerApp": {
                    "tornado_settings": {"page_config_data": {"buildCheck": False, "buildAvailable": False}}
                },
            }
        )
    )
    return merged


# A test that runs no code in the notebooks it opens marks itself ``@NO_KERNEL``: JupyterLab then
# opens them without starting a kernel (about 5 CPU-s each here: a Python process, and the tab's
# kernel connection). A test whose agent runs code keeps the kernel the person's tab starts, as a
# person's JupyterLab does by default, and the agent runs in it.
NO_KERNEL = pytest.mark.lab_starts_no_kernel


def lab_starts_kernel(request: pytest.FixtureRequest) -> bool:
    """False for a test marked ``@NO_KERNEL``: the ``starts_kernel`` of ``with_lab``."""
    return request.node.get_closest_marker(NO_KERNEL.name) is None


# -- Chromium's cache of JupyterLab's files, kept from one test to the next -------------------------
#
# Each test starts its own server and its own Chromium; loading JupyterLab then fetches and compiles
# its whole bundle (about 5 MB of JavaScript) every time. Chromium keeps what it fetched (its HTTP
# cache) and what it compiled (V8's code cache) in its profile folder, keyed by the URL, port included.
# So this process's JupyterLab servers listen on one port (``lab_server_socket``), and each Chromium
# starts on a profile folder from a pool (``clean_profile``; a second tab open at once gets a second one)
# in which nothing but those two caches is kept: no cookie, storage, or setting of an earlier test.

CACHES = ("Cache", "Code Cache")  # in <profile>/Default: the HTTP cache and V8's compiled scripts
_profiles: list[Path] = []  # this process's folder of profiles, once made
_idle_profiles: list[Path] = []
_lab_port: list[int] = []  # this process's JupyterLab port, once chosen


def clean_profile() -> Path:
    """A profile folder no Chromium is using, holding nothing but ``CACHES`` (see above)."""
    if not _profiles:
        _profiles.append(Path(tempfile.mkdtemp(prefix="lab-chromium-")))
        atexit.register(shutil.rmtree, _profiles[0], ignore_errors=True)
    profile = (
        _idle_profiles.pop() if _idle_profiles else _profiles[0] / str(len(list(_profiles[0].iterdir())))
    )
    profile.mkdir(exist_ok=True)
    default = profile / "Default"
    kept = [default / name for name in CACHES]
    for entry in [*profile.iterdir(), *(default.iterdir() if default.is_dir() else ())]:
        if entry != default and entry not in kept:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    return profile


def lab_server_socket() -> tuple[socket.socket, int]:
    """A listening socket for a test's JupyterLab server: on this process's lab port when it is free
    (every test's JupyterLab then has the same URLs, and Chromium's cache applies), else on any port."""
    if _lab_port:
        try:
            listening = bind_sockets(_lab_port[0], "127.0.0.1", family=socket.AF_INET)[0]
            return listening, _lab_port[0]
        except OSError:
            return bind_unused_port()  # taken meanwhile: this test loads JupyterLab uncached
    listening, port = bind_unused_port()
    _lab_port.append(port)
    return listening, port


@dataclass
class LabTab:
    """A JupyterLab tab with one notebook open, and what its console said."""

    page: Page
    console: list[str] = field(default_factory=list)

    @property
    def cells(self) -> Locator:
        return self.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")

    def cell(self, index: int) -> Locator:
        return self.cells.nth(index)

    def lines(self, index: int) -> Locator:
        """The lines CodeMirror shows of a cell's source, one ``.cm-line`` each."""
        return self.cell(index).locator(".jp-InputArea-editor .cm-content .cm-line")

    def heading(self, index: int, name: str) -> Locator:
        """A heading of a rendered Markdown cell, by its exact text (not the ``¶`` anchor)."""
        return self.cell(index).locator(".jp-RenderedMarkdown").get_by_role("heading", name=name, exact=True)

    def prompt(self, index: int) -> Locator:
        """``[ ]:``, ``[*]:`` while running, ``[n]:`` after."""
        return self.cell(index).locator(".jp-InputPrompt")

    def outputs(self, index: int) -> Locator:
        return self.cell(index).locator(".jp-OutputArea")

    @property
    def kernel_status(self) -> Locator:
        """The notebook toolbar's kernel indicator; ``data-status`` is ``idle`` once connected."""
        return self.page.locator(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator")


async def open_palette(page: Page) -> Locator:
    """Open JupyterLab's command palette from the keyboard, as a person does; returns its input.

    A shortcut pressed while the page still moves focus can go unheard (once, under a full suite, the
    palette never showed and a fill waited 30 s on its hidden input): pressed again until it shows.
    """
    palette = page.locator(".lm-CommandPalette-input")
    for _ in range(5):
        await page.keyboard.press("Control+Shift+C")
        try:
            await expect(palette).to_be_visible(timeout=3000)
            break
        except AssertionError:
            continue
    return palette


async def keep_waiting_for_slow_documents(page: Page) -> None:
    """Answer "Continue waiting" whenever JupyterLab asks about a slow document.

    jupyter-collaboration's document provider shows a modal dialog when a document has not synced
    within 5 s (fixed in its code); on a loaded machine it does, and the dialog takes the clicks a
    test makes. A person would keep waiting; Playwright answers before each action and assertion.
    """
    slow = page.locator(".jp-Dialog").filter(has_text="The document is taking some time to load")
    await page.add_locator_handler(
        slow, lambda dialog: dialog.get_by_role("button", name="Continue waiting").click()
    )


@asynccontextmanager
async def chromium_tab() -> AsyncIterator[LabTab]:
    """A fresh headless Chromium with one blank page, on a clean profile that keeps only Chromium's
    caches (see ``clean_profile``); closed on the way out. On a failure the page's console is printed,
    so pytest shows it with the error."""
    profile = clean_profile()
    async with async_playwright() as pw:
        context = await pw.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 860},
        )
        tab = None
        try:
            page = context.pages[0] if context.pages else await context.new_page()
            await keep_waiting_for_slow_documents(page)
            tab = LabTab(page)
            page.on("console", lambda m: tab.console.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: tab.console.append(f"pageerror: {e}"))
            yield tab
        except BaseException:
            if tab is not None:
                print("JupyterLab console:", *tab.console, sep="\n  ")
            raise
        finally:
            await context.close()
            _idle_profiles.append(profile)


@asynccontextmanager
async def lab_tab(server_url: str, token: str, path: str) -> AsyncIterator[LabTab]:
    """Open ``path`` in JupyterLab as a person would (the URL with the token), in a fresh browser
    (``chromium_tab``). Yields once the notebook's first cell is on screen."""
    async with chromium_tab() as tab:
        await tab.page.goto(f"{server_url}lab/tree/{quote(path)}?token={token}")
        await tab.cell(0).wait_for()
        yield tab
