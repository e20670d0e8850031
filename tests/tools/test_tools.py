"""What each tool does for an agent, as a person with the notebook open (a YPeer) sees it."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from ..documents.test_live_editing import wait_on_disk
from ..support.mcp_client import MODES, connect, fails, ok
from ..support.yclient import YPeer


def ran(source: str, cell_id: str, count: int, printed: str, **fields) -> dict:
    """A code cell that was run and printed something."""
    return {
        "id": cell_id,
        "source": source,
        "execution_count": count,
        "outputs": [nbformat.v4.new_output("stream", text=printed)],
        **fields,
    }


def shown(metadata: dict) -> dict:
    """Cell metadata without ``trusted``, which Jupyter adds on load and strips on save."""
    return {k: v for k, v in metadata.items() if k != "trusted"}


async def test_search_is_smart_case_and_regex_only_when_asked(server_url, jp_auth_header, make_notebook):
    path = make_notebook(
        "search.ipynb",
        cells=[
            {"id": "load", "source": "import pandas as pd\ndf = pd.read_csv('Data.csv')"},
            {"cell_type": "markdown", "id": "notes", "source": "# Data\nThe data is loaded above."},
            {"id": "fit", "source": "model.fit(df)\nmodel.score(df)"},
        ],
    )
    async with connect(server_url, jp_auth_header) as agent:

        async def found(**args) -> list[tuple[str, int]]:
            return [
                (m["id"], m["line"])
                for m in (await ok(agent, "search_notebook", path=path, **args))["matches"]
            ]

        # All lower case: any case matches; a capital makes the search exact.
        assert await found(pattern="data") == [("load", 2), ("notes", 1), ("notes", 2)]
        assert await found(pattern="Data") == [("load", 2), ("notes", 1)]
        # Without regex=true, regex characters are plain text.
        assert await found(pattern="model.fit(df)") == [("fit", 1)]
        assert await found(pattern="model.f.t") == []
        assert await found(pattern=r"model\.(fit|score)\(", regex=True) == [("fit", 1), ("fit", 2)]
        assert await found(pattern=r"^import \w+", regex=True) == [("load", 1)]
        result = await ok(agent, "search_notebook", path=path, pattern="score")
        assert result["matches"] == [{"id": "fit", "index": 2, "line": 2, "text": "model.score(df)"}]
        assert (await ok(agent, "search_notebook", path=path, pattern="nowhere"))["matches"] == []


async def test_clear_outputs_of_one_some_or_all_cells(server_url, jp_auth_header, make_notebook, jp_root_dir):
    path = make_notebook(
        "outputs.ipynb",
        cells=[
            ran("print(1)", "one", 1, "1\n"),
            ran("print(2)", "two", 2, "2\n"),
            {"cell_type": "markdown", "id": "text", "source": "# Between"},
            ran("print(3)", "three", 3, "3\n"),
        ],
    )

    def state(nb) -> list[tuple[int, object]]:
        return [(len(c.get("outputs", [])), c.get("execution_count")) for c in nb.ycells]

    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        connect(server_url, jp_auth_header) as agent,
    ):
        assert state(person.notebook) == [(1, 1), (1, 2), (0, None), (1, 3)]

        assert (await ok(agent, "clear_outputs", path=path, cell_ids=["two"]))["cleared"] == 1
        await person.wait_for(lambda nb: state(nb) == [(1, 1), (0, None), (0, None), (1, 3)])

        # A markdown cell, or one already clear, is fine to name and counts as nothing to clear.
        assert (await ok(agent, "clear_outputs", path=path, cell_ids=["three", "text", "two"]))[
            "cleared"
        ] == 1
        await person.wait_for(lambda nb: state(nb) == [(1, 1), (0, None), (0, None), (0, None)])

        assert (await ok(agent, "clear_outputs", path=path))["cleared"] == 1
        await person.wait_for(lambda nb: state(nb) == [(0, None)] * 4)
        assert person.sources() == ["print(1)", "print(2)", "# Between", "print(3)"]

    await wait_on_disk(
        jp_root_dir, path, lambda cells: [c.get("outputs") for c in cells] == [[], [], None, []]
    )


async def test_read_cells_by_index_range_or_ids(server_url, jp_auth_header, make_notebook):
    path = make_notebook("range.ipynb", cells=[{"id": f"cell-{i}", "source": f"x = {i}"} for i in range(5)])
    async with connect(server_url, jp_auth_header) as agent:

        async def read(**args) -> list[tuple[int, str]]:
            cells = (await ok(agent, "read_cells", path=path, **args))["cells"]
            return [(c["index"], c["id"]) for c in cells]

        assert await read(start=1, end=3) == [(1, "cell-1"), (2, "cell-2")]
        assert await read(start=3) == [(3, "cell-3"), (4, "cell-4")]
        assert await read(end=1) == [(0, "cell-0")]
        assert await read(start=-2) == [(3, "cell-3"), (4, "cell-4")]
        assert await read() == [(i, f"cell-{i}") for i in range(5)]
        # Ids win over a range, and come back in the order asked for.
        assert await read(cell_ids=["cell-4", "cell-0"], start=1, end=2) == [(4, "cell-4"), (0, "cell-0")]
        result = await agent.call_tool("read_cells", {"path": path, "start": 7})
        assert not result.is_error and "No cells in that range" in result.content[0].text


async def test_a_unique_id_prefix_of_four_characters_names_a_cell(server_url, jp_auth_header, make_notebook):
    path = make_notebook(
        "prefix.ipynb",
        cells=[
            {"id": "abcd1234", "source": "a = 1"},
            {"id": "abcd5678", "source": "b = 2"},
            {"id": "ef001122", "source": "c = 3"},
        ],
    )
    async with connect(server_url, jp_auth_header) as agent:
        updated = await ok(agent, "update_cell", path=path, cell_id="ef00", source="c = 30")
        assert updated["id"] == "ef001122"
        assert (await ok(agent, "read_cells", path=path, cell_ids=["abcd5"]))["cells"][0]["source"] == "b = 2"
        message = await fails(agent, "update_cell", path=path, cell_id="abcd", source="?")
        assert "ambiguous" in message and "full id" in message
        message = await fails(agent, "update_cell", path=path, cell_id="ef0", source="?")
        assert "No cell with id 'ef0'" in message
        sources = [c["source"] for c in (await ok(agent, "read_cells", path=path))["cells"]]
        assert sources == ["a = 1", "b = 2", "c = 30"]


async def test_create_notebook_with_cells_and_a_kernel(server_url, jp_auth_header, jp_root_dir):
    async with connect(server_url, jp_auth_header) as agent:
        created = await ok(
            agent,
            "create_notebook",
            path="new/folder/analysis.ipynb",
            kernel_name="python3",
            cells=[{"cell_type": "markdown", "source": "# Analysis"}, {"source": "import math"}],
        )
        assert created["path"] == "new/folder/analysis.ipynb"
        outline = await ok(agent, "get_notebook", path=created["path"])
        assert (outline["kernel"], outline["language"]) == ("python3", "python")
        assert [(c["id"], c["type"]) for c in outline["cells"]] == list(
            zip(created["cell_ids"], ["markdown", "code"], strict=True)
        )
        default = await ok(agent, "create_notebook", path="empty.ipynb")
        assert default["cell_ids"] == []

    on_disk = nbformat.read(jp_root_dir / "new/folder/analysis.ipynb", as_version=4)
    nbformat.validate(on_disk)
    assert [c.id for c in on_disk.cells] == created["cell_ids"]
    assert on_disk.metadata.kernelspec.name == "python3"
    assert (
        json.loads((jp_root_dir / "empty.ipynb").read_text())["metadata"]["kernelspec"]["name"] == "python3"
    )


@pytest.mark.parametrize("mode", MODES)
async def test_editing_tools_in_each_protocol_era(
    server_url, jp_auth_header, make_notebook, jp_root_dir: Path, mode
):
    path = make_notebook(
        "edit.ipynb",
        cells=[
            ran("print('first')", "first", 1, "first\n", metadata={"tags": ["keep"], "collapsed": True}),
            {"id": "second", "source": "second = 2"},
            {"cell_type": "markdown", "id": "last", "source": "# Last"},
        ],
    )
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        connect(server_url, jp_auth_header, mode) as agent,
    ):
        ids = (
            await ok(
                agent, "insert_cells", path=path, before="second", cells=[{"source": "a"}, {"source": "b"}]
            )
        )["cell_ids"]
        assert (
            await ok(agent, "insert_cells", path=path, index=0, cells=[{"cell_type": "raw", "source": "top"}])
        )["index"] == 0
        await person.wait_for(
            lambda nb: person.sources() == ["top", "print('first')", "a", "b", "second = 2", "# Last"]
        )

        # Moving keeps the cell's id, source, outputs, execution count and metadata.
        moved = await ok(agent, "move_cell", path=path, cell_id="first", after="last")
        assert moved == {"id": "first", "index": 5}
        await person.wait_for(lambda nb: person.sources()[-1] == "print('first')")
        cell = person.notebook.get_cell(5)
        assert (cell["id"], cell["execution_count"], cell["outputs"][0]["text"]) == ("first", 1, "first\n")
        assert shown(cell["metadata"]) == {"tags": ["keep"], "collapsed": True}
        # An index names where the cell ends up.
        assert (await ok(agent, "move_cell", path=path, cell_id=ids[1], index=1))["index"] == 1

        # Metadata: set a key, remove another with null, leave the rest.
        await ok(agent, "update_cell", path=path, cell_id="first", metadata={"collapsed": None, "note": "x"})
        await person.wait_for(lambda nb: shown(nb.get_cell(5)["metadata"]) == {"tags": ["keep"], "note": "x"})

        deleted = await ok(agent, "delete_cells", path=path, cell_ids=[ids[0], "second"])
        assert deleted == {"deleted": [ids[0], "second"], "cells_left": 4}
        await person.wait_for(lambda nb: person.sources() == ["top", "b", "# Last", "print('first')"])

    saved = await wait_on_disk(
        jp_root_dir, path, lambda cells: [c["id"] for c in cells][2:] == ["last", "first"]
    )
    assert saved[3]["metadata"] == {"tags": ["keep"], "note": "x"} and saved[3]["outputs"][0]["text"] == [
        "first\n"
    ]
