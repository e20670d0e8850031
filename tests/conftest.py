"""Fixtures: a real Jupyter server with jupyter-collaboration, driven by pytest-jupyter.

pytest-jupyter runs the server on the loop of its ``jp_asyncio_loop`` fixture, while
pytest-asyncio runs async tests and fixtures on a loop of its own. ``jp_asyncio_loop`` is
overridden here so both are the same loop: otherwise the server never answers a test.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import os
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
import pytest_asyncio
from jupyter_core.paths import jupyter_path
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from mcp.client import Client
from tornado import web
from tornado.testing import bind_unused_port
from traitlets.config import Config

from .reliability.figures import FIGURES, LINES
from .support.mcp_client import connect
from .support.oauth_flow import Flow, agent_at, person_logged_in
from .support.panel import PanelAPI
from .support.shots import copy_for_docs
from .support.yclient import YPeer

pytest_plugins = ["pytest_jupyter.jupyter_server"]

HAVE_MCP_EXT = importlib.util.find_spec("jupyter_mcp_ext") is not None

CellSpec = str | Mapping[str, Any]
MakeNotebook = Callable[..., str]


@pytest_asyncio.fixture(autouse=True)
async def jp_asyncio_loop() -> asyncio.AbstractEventLoop:
    """Hand pytest-jupyter the loop pytest-asyncio runs this test on (see module doc).

    No teardown: pytest-asyncio owns and closes the loop, after the server's cleanup.
    """
    return asyncio.get_running_loop()


@pytest.fixture(autouse=True)
def _chdir_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in a tmp cwd: rooms created by ``get_document(create=True)`` ignore
    ``SQLiteYStore.db_path`` and write ``.jupyter_ystore.db`` into the cwd."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def jp_nbconvert_templates(jp_data_dir: Path) -> None:
    """pytest-jupyter copies nbconvert's templates (67 files) into every test's data folder, 15 ms of CPU a
    test; a link to them serves the same files, which nothing here writes to. (Like the fixture it
    replaces, it runs before ``jp_environ`` points Jupyter's paths at the test's folders.)"""
    found = next((Path(p) for p in jupyter_path("nbconvert", "templates") if Path(p).exists()), None)
    if found is not None:
        (jp_data_dir / "nbconvert").mkdir(parents=True, exist_ok=True)
        (jp_data_dir / "nbconvert" / "templates").symlink_to(found, target_is_directory=True)


@pytest.fixture
def ydoc_save_delay() -> float:
    """``YDocExtension.document_save_delay``; override in a test module to change it."""
    return 0.5


@pytest.fixture
def ydoc_poll_interval() -> float:
    """``YDocExtension.file_poll_interval``."""
    return 0.5


@pytest.fixture
def ydoc_cleanup_delay() -> float:
    """``YDocExtension.document_cleanup_delay`` (room kept this long after the last client)."""
    return 60.0


@pytest.fixture
def jp_runtime_dir() -> Iterator[Path]:
    """A short runtime folder (pytest's are too long for the kernels' ipc sockets, below)."""
    path = Path(tempfile.mkdtemp(prefix="jr", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def jp_server_config(
    jp_server_config: Config,
    tmp_path: Path,
    ydoc_save_delay: float,
    ydoc_poll_interval: float,
    ydoc_cleanup_delay: float,
) -> Config:
    """Enable collaboration (and jupyter_mcp_ext once it is importable), state outside root."""
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    extensions = {"jupyter_server_ydoc": True, "jupyter_server_fileid": True}
    if HAVE_MCP_EXT:
        extensions["jupyter_mcp_ext"] = True
    config = Config(jp_server_config)
    config.merge(
        Config(
            {
                "ServerApp": {"jpserver_extensions": extensions},
                "SQLiteYStore": {"db_path": str(state / "ystore.db")},
                "BaseFileIdManager": {
                    "db_path": str(state / "file_id.db"),
                    "db_journal_mode": "OFF",
                },
                # Kernels over ipc sockets named after their connection file (in jp_runtime_dir): over
                # tcp, jupyter_client picks five free ports and closes them before the kernel binds
                # them, and with four test processes starting kernels another one's kernel took one.
                "KernelManager": {"transport": "ipc"},
                "YDocExtension": {
                    "document_save_delay": ydoc_save_delay,
                    "file_poll_interval": ydoc_poll_interval,
                    "document_cleanup_delay": ydoc_cleanup_delay,
                    "session_store_path": str(state / "collaboration_sessions.json"),
                },
            }
        )
    )
    return config


@pytest.fixture(scope="session", autouse=True)
def _nbconvert_exporters_found_once() -> Iterator[None]:
    """Each load of JupyterLab asks its server for nbconvert's exporters (``/api/nbconvert``), and
    nbconvert finds each one by reading every installed package's entry points: 0.5 CPU-s a load here.
    The installed packages do not change during a run, so a lookup without a config is made once per
    process (one with a config, as a download's, still goes to nbconvert)."""
    from nbconvert.exporters import base

    def once_without_config(find: Callable[..., Any]) -> Callable[..., Any]:
        found = functools.cache(find)
        return lambda *args, config=None: find(*args, config=config) if config is not None else found(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "get_export_names", once_without_config(base.get_export_names))
        patch.setattr(base, "get_exporter", once_without_config(base.get_exporter))
        yield


@pytest.fixture
def http_server_port(jp_server_config: Config) -> tuple[socket.socket, int]:
    """pytest-jupyter's listening socket; a server with JupyterLab gets this process's lab port, so
    Chromium's cache of JupyterLab's files applies from one test to the next (tests/support/browser.py)."""
    if jp_server_config.ServerApp.jpserver_extensions.get("jupyterlab"):
        from .support.browser import lab_server_socket  # Playwright only where JupyterLab is

        return lab_server_socket()
    return bind_unused_port()


@pytest.fixture
def server_url(http_server_client: Any, jp_http_port: int, jp_base_url: str) -> str:
    """Base URL (ends with ``/``) an external client such as httpx can use.

    Requesting ``http_server_client`` is what makes the server accept connections.
    The base URL keeps pytest-jupyter's escaped ``/a%40b/`` as is: Tornado routes on the
    raw path, so clients must not decode it.
    """
    return f"http://127.0.0.1:{jp_http_port}{jp_base_url}"


@pytest.fixture
def ydoc_extension(jp_serverapp: Any) -> Any:
    """The live ``YDocExtension`` (``get_document(...)``, ``ywebsocket_server``)."""
    return jp_serverapp.web_app.settings["jupyter_server_ydoc"]


def _new_cell(spec: CellSpec) -> nbformat.NotebookNode:
    """A string is a code cell; a mapping needs ``cell_type`` plus nbformat cell fields."""
    if isinstance(spec, str):
        return nbformat.v4.new_code_cell(spec)
    fields = dict(spec)
    factory = {
        "code": nbformat.v4.new_code_cell,
        "markdown": nbformat.v4.new_markdown_cell,
        "raw": nbformat.v4.new_raw_cell,
    }[fields.pop("cell_type", "code")]
    return factory(**fields)


def write_notebook(
    root: Path,
    path: str,
    cells: Sequence[CellSpec] = (),
    minor: int = 5,
    metadata: Mapping[str, Any] | None = None,
) -> str:
    """Write a notebook under ``root``; returns its API path (relative, ``/``-separated): see
    ``make_notebook``, which writes under the test server's root."""
    nb = nbformat.v4.new_notebook(cells=[_new_cell(c) for c in cells])
    nb.nbformat_minor = minor
    nb.metadata = nbformat.from_dict(
        dict(metadata)
        if metadata is not None
        else {
            "kernelspec": {
                "name": "python3",
                "display_name": "Python 3 (ipykernel)",
                "language": "python",
            },
            "language_info": {"name": "python"},
        }
    )
    if minor < 5:
        for cell in nb.cells:
            cell.pop("id", None)
    nbformat.validate(nb)
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(nbformat.writes(nb, version=4), encoding="utf-8")
    return Path(path).as_posix()


@pytest.fixture
def make_notebook(jp_root_dir: Path) -> Iterator[MakeNotebook]:
    """Write a notebook under ``jp_root_dir``; returns its API path (relative, ``/``-separated).

    ``make_notebook("a/nb.ipynb", cells=["x = 1", {"cell_type": "markdown", "source": "# T"}])``
    With ``minor < 5`` cell ids are dropped, as older files on disk have none.
    Write files before a peer opens them: once a room is open, a direct write reloads it.
    """
    yield functools.partial(write_notebook, jp_root_dir)


@pytest.fixture
async def flow(server_url: str) -> AsyncIterator[Flow]:
    """An agent host signing in by OAuth (no Jupyter credential), the server's metadata discovered."""
    async with agent_at(server_url) as found:
        yield found


@pytest.fixture
async def person(server_url: str, jp_auth_header: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    """The person's browser, logged in to Jupyter (its cookie and XSRF token), as the consent page needs."""
    async with person_logged_in(server_url, jp_auth_header["Authorization"].split()[-1]) as http:
        yield http


@pytest.fixture
async def panel(server_url: str, jp_auth_header: dict[str, str]) -> AsyncIterator[PanelAPI]:
    """The MCP panel's REST API, called as the person's JupyterLab calls it."""
    async with PanelAPI(server_url, jp_auth_header) as api:
        yield api


class _SlowHandler(JupyterHandler):
    """A person's request that the test ends when it wants (a large save, a slow folder listing)."""

    auth_resource = "contents"

    def initialize(self, began: asyncio.Event, end: asyncio.Event) -> None:
        self.began, self.end = began, end

    @web.authenticated
    async def get(self) -> None:
        self.began.set()
        await self.end.wait()
        self.finish("done")


@pytest.fixture
def slow_request(
    jp_serverapp: Any, server_url: str, jp_auth_header: dict[str, str]
) -> Callable[[], AbstractAsyncContextManager[None]]:
    """``async with slow_request():`` a person's request is being served inside the block."""
    began, end = asyncio.Event(), asyncio.Event()
    route = url_path_join(jp_serverapp.base_url, "test-slow-request")
    jp_serverapp.web_app.add_handlers(".*$", [(route, _SlowHandler, {"began": began, "end": end})])

    @asynccontextmanager
    async def in_flight() -> AsyncIterator[None]:
        began.clear()
        end.clear()
        async with httpx.AsyncClient(headers=jp_auth_header, timeout=60) as http:
            answer = asyncio.create_task(http.get(f"{server_url}test-slow-request"))
            try:
                await asyncio.wait_for(began.wait(), timeout=30)
                yield
            finally:
                end.set()
                assert (await answer).status_code == 200

    return in_flight


@pytest.fixture
def person_and_agent(
    server_url: str, jp_auth_header: dict[str, str]
) -> Callable[..., AbstractAsyncContextManager[tuple[YPeer, Client]]]:
    """``async with person_and_agent(path) as (person, agent)``: a person in the notebook's live room
    (a Yjs peer joining as JupyterLab does; options such as ``user=`` go to ``YPeer``) and an agent
    connected over MCP, the arrange step of most live-editing tests."""

    @asynccontextmanager
    async def pair(path: str, **peer: Any) -> AsyncIterator[tuple[YPeer, Client]]:
        async with (
            YPeer(server_url, jp_auth_header, path, **peer) as person,
            connect(server_url, jp_auth_header) as agent,
        ):
            yield person, agent

    return pair


# -- the slowest files first, so that with -n the workers finish together --------------------------

# Measured (per-file sums of test times in a full run with -n 4 on a quiet 2-core machine, 435 s
# wall), the longest first. pytest-xdist (--dist loadfile --no-loadscope-reorder, pyproject.toml)
# hands out files in this order; the files not named here (each under 14 s) follow in their usual
# order, and their small sizes even out the workers' ends. A file that grows slow belongs here.
SLOWEST_FIRST = (
    "browser/test_panel.py",  # JupyterLab in Chromium, ten times
    "reliability/test_hostile_arguments.py",
    "integration/test_route_conflict.py",  # four servers in processes of their own, with JupyterLab
    "browser/test_review_marks.py",
    "reliability/test_sessions_under_load.py",  # 16 sessions: a 1,100-call warm-up, then 800 calls
    "browser/test_browser.py",
    "reliability/test_person_controls.py",
    "hub/test_hub.py",
    "browser/test_review_restart.py",  # two starts of a server process, with JupyterLab
    "protocol/test_tasks.py",
    "people/test_journal_file.py",  # three starts of a server process
    "tools/test_bad_input.py",
    "browser/test_review_deleted.py",
    "reliability/test_kill.py",
    "kernels/test_execution_edges.py",
    "browser/test_review_render_bench.py",  # 500 marked cells in Chromium, twice
    "people/test_journal.py",
    "documents/test_rebase.py",
    "browser/test_review_diff.py",
    "loop/test_gate.py",
    "integration/test_hardening.py",
    "browser/test_apps_browser.py",
    "integration/test_robustness.py",
    "kernels/test_execution.py",
    "reliability/test_person_and_agents.py",  # a person and four agents for 20 s
    "integration/test_reliability_findings.py",
    "integration/test_first_ten_minutes.py",
    "people/test_policy.py",
    "tools/test_resources.py",
    "cli/test_cli.py",
    "kernels/test_gateway.py",
    "people/test_approvals.py",
    "auth/test_oauth.py",
    "documents/test_saves.py",
    "browser/test_oauth_ts.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    here = Path(__file__).parent

    def file_rank(item: pytest.Item) -> int:
        name = item.path.relative_to(here).as_posix() if item.path.is_relative_to(here) else ""
        return rank.get(name, len(SLOWEST_FIRST))

    items.sort(key=file_rank)  # stable: tests keep their order within a file


# -- the reliability suite's figures, printed once at the end, from every xdist worker -----------


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)  # set in an xdist worker only
    if output is not None:
        output["reliability figures"] = (dict(FIGURES), list(LINES))
    if os.environ.get("MCP_DOCS_SHOTS") == "1":  # the docs' pictures from this run's screenshots
        for picture in copy_for_docs():
            print("docs picture:", picture)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """On the xdist controller: add a worker's figures (counts add up, worst values are the worst)."""
    figures, lines = getattr(node, "workeroutput", {}).get("reliability figures", ({}, []))
    for name, value in figures.items():
        FIGURES[name] = (
            value + FIGURES.get(name, 0) if isinstance(value, int) else max(FIGURES.get(name, 0.0), value)
        )
    LINES.extend(lines)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not FIGURES and not LINES:
        return
    terminalreporter.section("reliability figures")
    for name in sorted(FIGURES):
        value = FIGURES[name]
        terminalreporter.write_line(
            f"{name}: {value:.3f}" if isinstance(value, float) else f"{name}: {value}"
        )
    for line in LINES:
        terminalreporter.write_line(line)
