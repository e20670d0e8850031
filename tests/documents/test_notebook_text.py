"""A notebook read and rewritten as a percent script keeps the ids and outputs of the cells the
agent did not change, and a person with the notebook open sees only the cells that did change."""

from __future__ import annotations

import asyncio
from pathlib import Path

import nbformat
from jupyter_ydoc import YNotebook

from jupyter_mcp_ext.documents import percent as notebook_text
from jupyter_mcp_ext.documents.revisions import revision

from ..integration.test_hardening import loop_watchdog
from ..support.mcp_client import connect, fails, ok
from ..support.yclient import YPeer


def out(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("stream", name="stdout", text=text)


CELLS = [
    {"cell_type": "markdown", "id": "intro", "source": "# Sales\n\nQuarterly numbers."},
    {
        "id": "load",
        "source": "import pandas as pd\ndf = pd.read_csv('s.csv')",
        "execution_count": 1,
        "outputs": [out("loaded\n")],
    },
    {
        "id": "plot",
        "source": "%matplotlib inline\ndf.plot()",
        "execution_count": 2,
        "outputs": [out("plotted\n")],
    },
    {"id": "tail", "source": "df.tail()\n", "execution_count": 3, "outputs": [out("5 rows\n")]},
]


def local_notebook(cells: list[dict]) -> YNotebook:
    doc = YNotebook()
    doc.set(
        {
            "cells": [{"metadata": {}, "outputs": [], "execution_count": None, **c} for c in cells],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    return doc


async def test_script_round_trip_changes_nothing_even_for_magics_blank_lines_and_trailing_newlines():
    doc = local_notebook(
        [
            {"cell_type": "code", "id": "a", "source": "%%time\nx = 1\n\n\ny = 2\n"},
            {"cell_type": "markdown", "id": "m", "source": "```python\nprint(1)\n```\n\n- item"},
            {"cell_type": "raw", "id": "r", "source": "raw text"},
            {"cell_type": "code", "id": "e", "source": ""},
            {"cell_type": "code", "id": "s", "source": "!ls\n'''doc\n\n'''"},
        ]
    )
    before = doc.get()
    script = await notebook_text.to_text(doc)
    text, unfaithful = script.text, script.unfaithful
    assert unfaithful == []
    assert '# %% id="a"' in text and '# %% [markdown] id="m"' in text
    applied = notebook_text.apply_text(doc, notebook_text.check(text, max_source_chars=10_000))
    assert (applied.inserted, applied.updated, applied.moved, applied.deleted) == (0, 0, 0, 0)
    assert doc.get() == before


async def test_a_cell_with_a_marker_line_inside_is_named_as_not_round_tripping():
    doc = local_notebook([{"cell_type": "code", "id": "x", "source": "a = 1\n# %% not a new cell\nb = 2"}])
    assert (await notebook_text.to_text(doc)).unfaithful == ["x"]


async def test_rewriting_from_text_keeps_ids_and_outputs_of_unchanged_cells(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("sales.ipynb", cells=CELLS)
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        connect(server_url, jp_auth_header) as agent,
    ):
        script = (await ok(agent, "get_notebook", path=path, format="py:percent"))["text"]
        rev = {c["id"]: revision(c["source"]) for c in CELLS}
        assert script.startswith(f'# %% [markdown] id="intro" rev="{rev["intro"]}"\n# # Sales')
        assert f'# %% id="plot" rev="{rev["plot"]}"\n# %matplotlib inline\ndf.plot()' in script

        # The agent: edits `load`, moves `tail` before `plot`, drops `intro`, adds a cell, keeps `plot`.
        rewritten = (
            '# %% id="load"\nimport pandas as pd\ndf = pd.read_csv("sales.csv")\n\n'
            '# %% id="tail"\ndf.tail()\n\n'
            '# %% id="plot"\n# %matplotlib inline\ndf.plot()\n\n'
            "# %% [markdown]\n# Done.\n"
        )
        written = await ok(agent, "write_notebook_text", path=path, text=rewritten)
        assert written["cell_ids"][:3] == ["load", "tail", "plot"]

        await person.wait_for(lambda nb: len(nb.ycells) == 4 and person.sources()[-1] == "Done.")
        cells = person.notebook.get()["cells"]
        assert [c["id"] for c in cells[:3]] == ["load", "tail", "plot"]
        assert cells[0]["source"] == 'import pandas as pd\ndf = pd.read_csv("sales.csv")'
        assert [c.get("outputs") for c in cells[:3]] == [
            [{"output_type": "stream", "name": "stdout", "text": "loaded\n"}],
            [{"output_type": "stream", "name": "stdout", "text": "5 rows\n"}],
            [{"output_type": "stream", "name": "stdout", "text": "plotted\n"}],
        ]
        assert [c.get("execution_count") for c in cells[:3]] == [1, 3, 2]
        assert cells[1]["source"] == "df.tail()\n"  # the script drops a trailing newline; that is no change
        assert cells[3]["cell_type"] == "markdown"


async def test_writing_the_same_text_back_touches_nothing(server_url, jp_auth_header, make_notebook):
    path = make_notebook("same.ipynb", cells=CELLS)
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        connect(server_url, jp_auth_header) as agent,
    ):
        before = person.notebook.get()
        script = (await ok(agent, "get_notebook", path=path, format="py:percent"))["text"]
        result = await agent.call_tool("write_notebook_text", {"path": path, "text": script})
        assert "0 inserted, 0 updated, 0 moved, 0 deleted" in result.content[0].text
        await person.flush()
        assert person.notebook.get() == before


async def test_a_new_notebook_from_text(server_url, jp_auth_header, jp_root_dir: Path):
    async with connect(server_url, jp_auth_header) as agent:
        made = await ok(
            agent,
            "write_notebook_text",
            path="new/script.ipynb",
            text="# %% [markdown]\n# Title\n\n# %%\nx = 1\n",
        )
        outline = await ok(agent, "get_notebook", path="new/script.ipynb")
    assert [c["id"] for c in outline["cells"]] == made["cell_ids"]
    assert [(c["type"], c["first_line"]) for c in outline["cells"]] == [
        ("markdown", "Title"),
        ("code", "x = 1"),
    ]


async def test_bad_text_changes_nothing(server_url, jp_auth_header, make_notebook, jp_root_dir: Path):
    path = make_notebook("keep.ipynb", cells=CELLS)
    before = (jp_root_dir / path).read_bytes()
    async with connect(server_url, jp_auth_header) as agent:
        twice = '# %% id="load"\nx = 1\n\n# %% id="load"\ny = 2\n'
        assert "appears twice" in await fails(agent, "write_notebook_text", path=path, text=twice)
        assert "format" in await fails(agent, "write_notebook_text", path=path, text="x", format="R:light")
        assert "format" in await fails(agent, "get_notebook", path=path, format="md")
        assert "appears twice" in await fails(agent, "write_notebook_text", path="fresh.ipynb", text=twice)
    assert (jp_root_dir / path).read_bytes() == before
    assert not (jp_root_dir / "fresh.ipynb").exists()


async def test_a_long_script_is_read_and_written_without_freezing_the_server(
    server_url, jp_auth_header, make_notebook
):
    # jupytext goes through a script in Python (a 200 KB line held the event loop 100-160 ms, where
    # every tab's keystrokes wait): long ones are read and written in a worker thread. The watchdog
    # counts the loop's own CPU while it was late, so a busy machine does not make it fail, and the
    # test process's own full garbage collections are kept out of its blocks.
    long, read = make_notebook("long.ipynb", cells=["x = 1"]), make_notebook("read.ipynb", cells=["x = 1"])
    line = "x" * 200_000  # one long line, as a fuzzer sent
    shorter = line[:40_000]  # what one result may carry (max_result_bytes, 64 KB)
    async with connect(server_url, jp_auth_header) as agent:
        async with loop_watchdog() as lags:
            written = await ok(agent, "write_notebook_text", path=long, text=f"# %%\n{line}\n")
        written_lag = max(lags)
        await ok(agent, "write_notebook_text", path=read, text=f"# %%\n{shorter}\n")
        async with loop_watchdog() as lags:
            text = (await ok(agent, "get_notebook", path=read, format="py:percent"))["text"]
        read_lag = max(lags)
    assert len(written["cell_ids"]) == 1 and shorter in text
    assert written_lag < 0.05 and read_lag < 0.02, (written_lag, read_lag)


async def test_a_long_script_names_the_cells_it_was_made_from_not_those_added_while_it_is_written():
    # A long script is written in a worker thread while people may edit the notebook: what the agent
    # is recorded to have seen (its base for the next write) must be what its script shows.
    doc = local_notebook([{"cell_type": "code", "id": "a", "source": "x = '" + "x" * 20_000 + "'"}])

    async def person_adds_a_cell() -> None:
        doc.append_cell({"cell_type": "code", "id": "p", "source": "mine", "metadata": {}, "outputs": []})

    added = asyncio.create_task(person_adds_a_cell())  # runs while the script is being written
    script = await notebook_text.to_text(doc)
    await added
    assert [str(c["id"]) for c in doc.ycells] == ["a", "p"]
    assert [cell_id for cell_id, _ in script.cells] == ["a"] and 'id="p"' not in script.text
