"""An agent's edits go through the shared document: a person with the notebook open sees them live,
their own edits are what the agent reads next, and Jupyter saves both."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import anyio
import nbformat

from ..support.mcp_client import connect, ok, text
from ..support.yclient import YPeer


def cells_on_disk(root: Path, path: str) -> list[dict]:
    return json.loads((root / path).read_text())["cells"]


async def wait_on_disk(root: Path, path: str, predicate, timeout: float = 10.0) -> list[dict]:
    with anyio.fail_after(timeout):
        while True:
            try:
                cells = cells_on_disk(root, path)
                if predicate(cells):
                    return cells
            except (json.JSONDecodeError, FileNotFoundError):
                pass
            await asyncio.sleep(0.1)


def source_of(cell: dict) -> str:
    return "".join(cell["source"])


async def test_person_sees_each_agent_edit_and_jupyter_saves_them(
    server_url, jp_auth_header, make_notebook, jp_root_dir
):
    path = make_notebook("live.ipynb", cells=["a = 1", {"cell_type": "markdown", "source": "# Notes"}])
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        connect(server_url, jp_auth_header) as agent,
    ):
        first, notes = (await ok(agent, "get_notebook", path=path))["cells"]

        inserted = await ok(
            agent,
            "insert_cells",
            path=path,
            after=first["id"],
            cells=[{"source": "b = 2"}, {"source": "c = 3"}],
        )
        await person.wait_for(lambda nb: person.sources() == ["a = 1", "b = 2", "c = 3", "# Notes"])
        b_id, c_id = inserted["cell_ids"]

        await ok(agent, "update_cell", path=path, cell_id=b_id, old_string="2", new_string="20")
        await person.wait_for(lambda nb: person.sources()[1] == "b = 20")

        await ok(agent, "move_cell", path=path, cell_id=notes["id"], index=0)
        await person.wait_for(lambda nb: person.sources()[0] == "# Notes")
        assert next(str(c["id"]) for c in person.notebook.ycells) == notes["id"]

        await ok(agent, "delete_cells", path=path, cell_ids=[c_id])
        await person.wait_for(lambda nb: person.sources() == ["# Notes", "a = 1", "b = 20"])

        await ok(agent, "update_cell", path=path, cell_id=first["id"], cell_type="markdown")
        await person.wait_for(lambda nb: nb.ycells[1]["cell_type"] == "markdown")

    saved = await wait_on_disk(
        jp_root_dir, path, lambda cells: [source_of(c) for c in cells] == ["# Notes", "a = 1", "b = 20"]
    )
    assert next(c["id"] for c in saved) == notes["id"] and saved[1]["cell_type"] == "markdown"
    nbformat.validate(
        nbformat.reads(json.dumps({**json.loads((jp_root_dir / path).read_text())}), as_version=4)
    )


async def test_agent_reads_what_the_person_just_typed(server_url, jp_auth_header, make_notebook):
    path = make_notebook("typing.ipynb", cells=["x = 1"])
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        connect(server_url, jp_auth_header) as agent,
    ):
        person.insert_text(0, 5, "  # set by a person")
        await person.flush()
        cells = (await ok(agent, "read_cells", path=path))["cells"]
        assert cells[0]["source"] == "x = 1  # set by a person"


async def test_person_typing_in_the_same_cell_keeps_their_keystrokes(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("concurrent.ipynb", cells=["def f():\n    return 1\n\n# person writes below\n"])
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        connect(server_url, jp_auth_header) as agent,
    ):
        cell_id = (await ok(agent, "get_notebook", path=path))["cells"][0]["id"]
        # The person types at the end while the agent's edit of the first line is in flight.
        person.insert_text(0, len(person.sources()[0]), "y = f()")
        edit = asyncio.create_task(
            agent.call_tool(
                "update_cell",
                {"path": path, "cell_id": cell_id, "old_string": "return 1", "new_string": "return 42"},
            )
        )
        await person.flush()
        result = await edit
        assert not result.is_error, text(result)
        expected = "def f():\n    return 42\n\n# person writes below\ny = f()"
        await person.wait_for(lambda nb: person.sources()[0] == expected)
        assert (await ok(agent, "read_cells", path=path))["cells"][0]["source"] == expected


async def test_edit_reaches_disk_when_no_tab_has_the_notebook_open(
    server_url, jp_auth_header, make_notebook, jp_root_dir
):
    path = make_notebook("closed.ipynb", cells=["x = 1"])
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "insert_cells", path=path, cells=[{"cell_type": "markdown", "source": "Done."}])
        listed = (await ok(agent, "list_notebooks"))["notebooks"]
        assert listed == [{**listed[0], "path": path, "open": False}]
    await wait_on_disk(jp_root_dir, path, lambda cells: [source_of(c) for c in cells] == ["x = 1", "Done."])


async def test_list_notebooks_shows_which_are_open_in_a_tab(server_url, jp_auth_header, make_notebook):
    make_notebook("a/open.ipynb")
    make_notebook("a/b/closed.ipynb")
    async with (
        YPeer(server_url, jp_auth_header, "a/open.ipynb"),
        connect(server_url, jp_auth_header) as agent,
    ):
        listed = (await ok(agent, "list_notebooks"))["notebooks"]
        assert {n["path"]: n["open"] for n in listed} == {"a/b/closed.ipynb": False, "a/open.ipynb": True}
        shallow = (await ok(agent, "list_notebooks", path="a", recursive=False))["notebooks"]
        assert [n["path"] for n in shallow] == ["a/open.ipynb"]


async def test_cell_ids_survive_save_and_reload_also_for_old_notebooks(
    server_url, jp_auth_header, make_notebook, jp_root_dir
):
    path = make_notebook("old.ipynb", cells=["x = 1", "y = 2"], minor=4)
    async with connect(server_url, jp_auth_header) as agent:
        ids = [c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"]]
        saved = await wait_on_disk(jp_root_dir, path, lambda cells: all("id" in c for c in cells))
        assert [c["id"] for c in saved] == ids
        assert json.loads((jp_root_dir / path).read_text())["nbformat_minor"] >= 5
        # A new server process would load the file again: the ids are the ones on disk.
        nb = nbformat.read(jp_root_dir / path, as_version=4)
        assert [c.id for c in nb.cells] == ids
