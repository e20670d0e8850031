"""``kill -9`` the server (and its kernels) in the middle of work, then restart it: every edit that was
acknowledged more than the maximum save delay before the kill is on disk, and the notebook is valid.

A real ``jupyter server`` process: pytest-jupyter's in-process server cannot be killed. The save
delay the extension promises is ``max_save_delay`` (issue 9.3, default 2 s): an edit acknowledged
longer ago than that, plus a grace for the write itself, must have been saved even while the
notebook kept changing (an agent editing without pause, a cell streaming output).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import nbformat
import pytest

from ..support.mcp_client import connect, ok
from ..support.server import JupyterServer
from ..support.server_main import LAUNCHER
from . import figures

MAX_SAVE_DELAY = 2.0  # MCPExtensionApp.max_save_delay's default
GRACE = 1.0  # for the save itself on a loaded machine
BURST_SECONDS = 7.0


@pytest.fixture(scope="module")
def server_process() -> Iterator[JupyterServer]:
    """One server for the module: each test kills it and starts it again (on the same root and port),
    so the next test finds it running and a start (seconds of CPU) is not paid twice."""
    server = JupyterServer(launcher=LAUNCHER)
    try:
        yield server
    finally:
        server.stop(gracefully=False)


@pytest.fixture
def server(server_process: JupyterServer) -> JupyterServer:
    """The module's server, running (started now if the last test left it down)."""
    if server_process.process is None or server_process.process.poll() is not None:
        server_process.start()
    return server_process


def on_disk(server: JupyterServer, path: str) -> str:
    """The file as saved; it must be a valid notebook. Jupyter rewrites a file in place, keeping a
    copy (``.~name``) until the write is done, and reads that copy back if the file is broken: a kill
    mid-write leaves the copy, which is what a restarted server would serve."""
    file = server.root / path
    try:
        notebook = nbformat.read(file, as_version=4)
    except ValueError:
        notebook = nbformat.read(file.with_name(f".~{file.name}"), as_version=4)
        figures.count("kills that landed mid-write (backup used)")
    nbformat.validate(notebook)
    return "\n".join(cell.source for cell in notebook.cells)


def check_after_kill(
    server: JupyterServer, path: str, acked: list[tuple[str, float]], killed_at: float
) -> None:
    saved = on_disk(server, path)
    due = [marker for marker, at in acked if at < killed_at - MAX_SAVE_DELAY - GRACE]
    missing = [marker for marker in due if marker not in saved]
    figures.count("faults injected (kill -9)")
    figures.count("edits verified on disk after a kill", len(due) - len(missing))
    figures.note(
        f"kill -9 ({path}): {len(acked)} edits acknowledged, {len(due)} older than "
        f"{MAX_SAVE_DELAY + GRACE:.0f} s, {len(due) - len(missing)} of those on disk"
    )
    assert due, "the burst was too short to test anything"
    return [f"{len(missing)} of {len(due)} acknowledged edits lost, first {missing[:3]}"] if missing else []


async def restarted_and_whole(server: JupyterServer, path: str) -> None:
    """The server comes back on the same root and serves the notebook."""
    await asyncio.to_thread(server.start)
    async with connect(server.url, server.headers) as agent:
        outline = await ok(agent, "get_notebook", path=path)
    assert outline["cells"], "the restarted server serves the notebook"


async def test_kill_during_a_burst_of_edits_loses_nothing_acknowledged_before_the_save_delay(server):
    path = "burst.ipynb"
    acked: list[tuple[str, float]] = []
    async with connect(server.url, server.headers) as agent:
        await ok(agent, "create_notebook", path=path, cells=[{"source": "start"}])
        started = time.monotonic()
        n = 0
        while time.monotonic() - started < BURST_SECONDS:
            marker = f"edit_{n:05}"
            await ok(agent, "insert_cells", path=path, cells=[{"source": marker}])
            acked.append((marker, time.monotonic()))
            n += 1
        killed_at = time.monotonic()
        server.kill()
    lost = check_after_kill(server, path, acked, killed_at)
    await restarted_and_whole(server, path)
    assert not lost, lost[0]


STREAMING = "import time\nfor i in range(100000):\n    print('tick', i, flush=True)\n    time.sleep(0.3)"


async def test_kill_while_a_cell_streams_output_loses_nothing_acknowledged_before_the_save_delay(server):
    path = "stream.ipynb"
    acked: list[tuple[str, float]] = []
    async with connect(server.url, server.headers) as agent:
        await ok(agent, "create_notebook", path=path, cells=[{"source": "notes"}])
        running = await ok(agent, "insert_and_execute", path=path, source=STREAMING, timeout=1)
        assert running["status"] == "running"
        started = time.monotonic()
        n = 0
        while time.monotonic() - started < BURST_SECONDS:
            marker = f"note_{n:04}"
            await ok(
                agent, "insert_cells", path=path, cells=[{"cell_type": "markdown", "source": marker}], index=0
            )
            acked.append((marker, time.monotonic()))
            n += 1
            await asyncio.sleep(0.4)  # a person-like pace: only the stream keeps the notebook changing
        killed_at = time.monotonic()
        server.kill()
    lost = check_after_kill(server, path, acked, killed_at)
    await restarted_and_whole(server, path)
    assert not lost, lost[0]
