"""What goes wrong in real use, and what the person and the agent see when it does."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import anyio
import nbformat
import pytest
from jupyter_server.auth import Authorizer
from pycrdt import Map
from traitlets.config import Config

from ..support.mcp_client import connect, fails, ok, text
from ..support.yclient import YPeer


async def test_values_the_document_cannot_hold_are_refused_and_the_server_keeps_serving(
    server_url, jp_auth_header, make_notebook, jp_root_dir
):
    path = make_notebook("big.ipynb", cells=["x = 1"])
    async with connect(server_url, jp_auth_header) as agent:
        cell_id = (await ok(agent, "get_notebook", path=path))["cells"][0]["id"]
        message = await fails(
            agent, "update_cell", path=path, cell_id=cell_id, source="x = 2", metadata={"n": 10**20}
        )
        assert "too large" in message
        assert "too large" in await fails(
            agent, "insert_cells", path=path, cells=[{"metadata": {"n": -(10**30)}}]
        )
        # A kernel output holding such a number is stored (as a float), and the run ends normally.
        code = "from IPython.display import display\ndisplay({'application/json': {'n': 10**20}, 'text/plain': 'big'}, raw=True)"
        ran = await ok(agent, "insert_and_execute", path=path, source=code)
        assert ran["status"] == "ok"
        assert (await ok(agent, "read_cells", path=path, cell_ids=[cell_id]))["cells"][0]["source"] == "x = 1"
    deadline = time.monotonic() + 10  # until the run's output is saved, not a fixed second
    while '"application/json"' not in (jp_root_dir / path).read_text() and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    saved = nbformat.read(jp_root_dir / path, as_version=4)  # still a valid notebook
    assert saved.cells[0].source == "x = 1"
    assert saved.cells[-1].outputs[0]["data"]["application/json"] == {"n": 1e20}


@pytest.mark.parametrize("index", [-1, 3, 99])
async def test_moving_a_cell_to_the_end_keeps_it(server_url, jp_auth_header, make_notebook, index):
    path = make_notebook("move.ipynb", cells=["a", "b", "c"])
    async with connect(server_url, jp_auth_header) as agent:
        first = (await ok(agent, "get_notebook", path=path))["cells"][0]["id"]
        result = await agent.call_tool("move_cell", {"path": path, "cell_id": first, "index": index})
        cells = (await ok(agent, "get_notebook", path=path))["cells"]
        if index == 99:
            assert result.is_error and "out of range" in text(result)
            assert [c["first_line"] for c in cells] == ["a", "b", "c"]
        else:
            assert not result.is_error, text(result)
            assert [c["first_line"] for c in cells] == ["b", "c", "a"] and cells[-1]["id"] == first


async def test_set_kernel_keeps_the_metadata_a_shared_map(server_url, jp_auth_header, make_notebook):
    path = make_notebook("meta.ipynb", cells=["1"])
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        connect(server_url, jp_auth_header) as agent,
    ):
        await ok(agent, "set_kernel", path=path, kernel_name="python3")
        meta = person.ydoc.get("meta", type=Map)
        await person.wait_for(lambda nb: isinstance(meta.get("metadata"), Map))
        assert meta["metadata"]["kernelspec"]["name"] == "python3"


async def test_a_person_clearing_a_running_cell_does_not_break_the_run(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("clear.ipynb")
    # Long enough that the person's clear lands while it runs, however loaded the machine.
    code = "import time\nfor i in range(4):\n    print('tick', i, flush=True)\n    time.sleep(1.5)"
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        connect(server_url, jp_auth_header) as agent,
    ):
        started = await ok(agent, "insert_and_execute", path=path, source=code, timeout=0.45)
        cell = next(c for c in person.notebook.ycells if c["id"] == started["cell_id"])
        await person.wait_for(lambda nb: len(cell["outputs"]) > 0)
        assert "tick 3" not in "".join(str(o.get("text", "")) for o in cell["outputs"])  # still running
        cell["outputs"].clear()  # the person clicks "Clear outputs" while it runs
        await person.flush()
        done = await ok(agent, "get_execution", execution_id=started["execution_id"], wait=60)
        assert done["status"] == "ok"
        await person.flush(timeout=60)  # the run's last write has reached the person
        await person.wait_for(lambda nb: cell.get("execution_state") == "idle")
        assert "tick 3" in "".join(str(o.get("text", "")) for o in cell["outputs"])


async def test_cancelling_a_queued_call_does_not_interrupt_someone_elses_cell(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("queue.ipynb")
    async with connect(server_url, jp_auth_header) as first, connect(server_url, jp_auth_header) as second:
        running = await ok(
            first,
            "insert_and_execute",
            path=path,
            source="import time\ntime.sleep(1.5)\n'first done'",
            timeout=0.3,
        )
        call = asyncio.create_task(
            second.call_tool("execute_code", {"path": path, "code": "'second'", "interrupt_on_cancel": True})
        )
        await anyio.sleep(0.3)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        finished = await ok(first, "get_execution", execution_id=running["execution_id"], wait=20)
        assert finished["status"] == "ok" and finished["cells"][0]["outputs"][-1]["text"] == "'first done'"


async def test_listings_never_follow_links_out_of_the_root_or_round_in_circles(
    server_url, jp_auth_header, make_notebook, jp_root_dir, tmp_path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.ipynb").write_text("{}")
    (outside / "private_key.pem").write_text("secret")
    make_notebook("inside/nb.ipynb")
    os.symlink(outside, jp_root_dir / "link")
    os.symlink(jp_root_dir / "inside", jp_root_dir / "inside" / "again")
    async with connect(server_url, jp_auth_header) as agent:
        files = [e["path"] for e in (await ok(agent, "list_files", recursive=True))["entries"]]
        assert not any(p.startswith("link") for p in files) and not any("again/" in p for p in files)
        notebooks = [n["path"] for n in (await ok(agent, "list_notebooks"))["notebooks"]]
        assert notebooks == ["inside/nb.ipynb"]
        resources = [r.name for r in (await agent.list_resources()).resources]
        assert "inside/nb.ipynb" in resources and not any("secret" in r for r in resources)


async def test_notebook_listings_leave_out_notebooks_no_tool_would_open(
    server_url, jp_auth_header, make_notebook
):
    """A notebook whose name is on the deny-list is never offered: reading it is refused anyway."""
    make_notebook("aws_credentials.ipynb")
    make_notebook("jpserver-1234.ipynb")
    make_notebook("work.ipynb")
    async with connect(server_url, jp_auth_header) as agent:
        assert "denied_files" in await fails(agent, "get_notebook", path="aws_credentials.ipynb")
        notebooks = [n["path"] for n in (await ok(agent, "list_notebooks"))["notebooks"]]
        assert notebooks == ["work.ipynb"]
        resources = [r.name for r in (await agent.list_resources()).resources]
        assert "work.ipynb" in resources and not any("credentials" in r or "jpserver" in r for r in resources)


OLD_SETTLE = 0.4


class ReadOnly(Authorizer):
    def is_authorized(self, handler, user, action, resource) -> bool:
        return action == "read"


class TestReadOnlyUserAndOldNotebooks:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Config) -> Config:
        jp_server_config.ServerApp.authorizer_class = ReadOnly
        return jp_server_config

    @pytest.fixture
    def ydoc_save_delay(self) -> float:
        return OLD_SETTLE / 4  # a rewrite would come this long after the room loads

    @pytest.fixture
    def ydoc_poll_interval(self) -> float:
        return OLD_SETTLE / 4

    async def test_reading_an_old_notebook_does_not_rewrite_it(
        self, server_url, jp_auth_header, make_notebook, jp_root_dir: Path
    ):
        path = make_notebook("old.ipynb", cells=["x = 1"], minor=4)
        before = (jp_root_dir / path).read_bytes()
        async with connect(server_url, jp_auth_header) as agent:
            await ok(agent, "get_notebook", path=path)
            await ok(agent, "read_cells", path=path)
            assert "Not permitted" in await fails(agent, "restart_kernel", path=path)
        await anyio.sleep(OLD_SETTLE)  # the save delay plus the file poll, with 0.2 s to spare
        assert (jp_root_dir / path).read_bytes() == before


class ExecuteOnly(Authorizer):
    """May run code in an existing kernel and edit notebooks, but not manage kernels."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return resource == "contents" or (resource == "kernels" and action in ("read", "execute"))


class TestExecuteOnlyUser:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Config) -> Config:
        jp_server_config.ServerApp.authorizer_class = ExecuteOnly
        return jp_server_config

    async def test_may_not_start_restart_or_interrupt_kernels(
        self, server_url, jp_auth_header, make_notebook
    ):
        path = make_notebook("k.ipynb", cells=["1"])
        async with connect(server_url, jp_auth_header) as agent:
            assert "starting a kernel" in await fails(agent, "execute_cells", path=path, all=True)
            assert "Not permitted" in await fails(agent, "interrupt_kernel", path=path)
            assert "Not permitted" in await fails(agent, "set_kernel", path=path, kernel_name="python3")
