"""Every mistake an agent can make comes back as a tool error that says what was wrong and what to
do, and no mistake changes a file: not at once, and not later when the collaboration layer saves."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from traitlets.config import Config

from ..support.mcp_client import connect, fails, ok

FIRST, NOTES = "first-cell", "notes-cell"
SOURCE_LIMIT = 1000
SAVE_DELAY = 0.1
SETTLE = 0.4  # longer than the save delay plus the file poll interval, with 0.2 s to spare


@pytest.fixture
def ydoc_save_delay() -> float:
    return SAVE_DELAY


@pytest.fixture
def ydoc_poll_interval() -> float:
    return SAVE_DELAY


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    jp_server_config.MCPExtensionApp.max_source_chars = SOURCE_LIMIT
    jp_server_config.ContentsManager.allow_hidden = False
    return jp_server_config


def notebook_text(*sources: str) -> str:
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(s) for s in sources],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    return nbformat.writes(nb)


@pytest.fixture
def files(make_notebook, jp_root_dir: Path, tmp_path: Path) -> list[Path]:
    """A root with a good notebook, broken and hidden files, and symlinks to a folder outside it."""
    make_notebook(
        "nb.ipynb",
        cells=[
            {"id": FIRST, "source": "total = 0\ntotal += 1\ntotal += 1"},
            {"cell_type": "markdown", "id": NOTES, "source": "# Notes"},
        ],
    )
    make_notebook(".hidden.ipynb", cells=["secret = 1"])
    make_notebook(".secret/inner.ipynb", cells=["secret = 2"])
    (jp_root_dir / "notes.txt").write_text("plain text\n")
    (jp_root_dir / "broken.ipynb").write_text("{not json")
    (jp_root_dir / "not_a_notebook.ipynb").write_text('{"hello": "world"}\n')
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.ipynb").write_text(notebook_text("password = 'x'"))
    (jp_root_dir / "escape").symlink_to(outside, target_is_directory=True)
    (jp_root_dir / "escape.ipynb").symlink_to(outside / "secret.ipynb")
    return [jp_root_dir, outside]


def snapshot(folders: list[Path]) -> dict[str, bytes]:
    """Every file (path and bytes) under the folders, without following symlinked folders."""
    found = {}
    for folder in folders:
        for dirpath, _dirs, names in os.walk(folder):
            for name in names:
                file = Path(dirpath, name)
                found[str(file)] = file.read_bytes() if file.exists() else b"<dangling>"
    return found


def case(tool: str, words: tuple[str, ...], **args: Any):
    return pytest.param(tool, args, words, id=f"{tool}-{'-'.join(words[:1])}")


BAD_INPUTS = [
    # A notebook that is not there.
    case("get_notebook", ("No notebook", "list_notebooks"), path="missing.ipynb"),
    case(
        "insert_cells", ("No notebook", "list_notebooks"), path="sub/missing.ipynb", cells=[{"source": "1"}]
    ),
    case("list_notebooks", ("No folder",), path="nowhere"),
    # Paths that leave the root.
    case("get_notebook", ("..", "inside"), path="../outside/secret.ipynb"),
    case("update_cell", ("..", "inside"), path="sub/../../outside/secret.ipynb", cell_id="x", source="1"),
    case("create_notebook", ("..", "inside"), path="../outside/new.ipynb"),
    case("get_notebook", ("absolute", "relative"), path="/etc/x.ipynb"),
    case("create_notebook", ("absolute", "relative"), path="/tmp/new.ipynb"),
    case("get_notebook", ("absolute", "relative"), path="~/x.ipynb"),
    case("get_notebook", ("NUL", "relative"), path="nb.ipynb\x00.txt"),
    case("get_notebook", ("outside", "inside"), path="escape.ipynb"),
    case("insert_cells", ("outside", "inside"), path="escape/secret.ipynb", cells=[{"source": "1"}]),
    case("create_notebook", ("outside", "inside"), path="escape/new.ipynb"),
    case("list_notebooks", ("outside", "inside"), path="escape"),
    # Files that are not notebooks.
    case("get_notebook", ("not a notebook", ".ipynb"), path="notes.txt"),
    case("get_notebook", ("not a valid notebook", "untouched"), path="broken.ipynb"),
    case("insert_cells", ("not a valid notebook", "untouched"), path="broken.ipynb", cells=[{"source": "1"}]),
    case("get_notebook", ("not a valid notebook", "untouched"), path="not_a_notebook.ipynb"),
    case("clear_outputs", ("not a valid notebook", "untouched"), path="not_a_notebook.ipynb"),
    # Cells that are not there.
    case("update_cell", ("No cell with id", "get_notebook"), path="nb.ipynb", cell_id="nope", source="1"),
    case("read_cells", ("No cell with id", "get_notebook"), path="nb.ipynb", cell_ids=[FIRST, "nope"]),
    case(
        "delete_cells", ("No cell with id", "get_notebook"), path="nb.ipynb", cell_ids=[FIRST, "nope", NOTES]
    ),
    case("move_cell", ("No cell with id", "get_notebook"), path="nb.ipynb", cell_id=FIRST, after="nope"),
    case("clear_outputs", ("No cell with id", "get_notebook"), path="nb.ipynb", cell_ids=["nope"]),
    case(
        "insert_cells",
        ("No cell with id", "get_notebook"),
        path="nb.ipynb",
        before="nope",
        cells=[{"source": "1"}],
    ),
    # Edits that do not apply.
    case(
        "update_cell",
        ("not found", "read_cells"),
        path="nb.ipynb",
        cell_id=FIRST,
        old_string="total -= 1",
        new_string="x",
    ),
    case(
        "update_cell",
        ("2 times", "unique"),
        path="nb.ipynb",
        cell_id=FIRST,
        old_string="total += 1",
        new_string="total += 2",
    ),
    case(
        "update_cell", ("old_string", "source"), path="nb.ipynb", cell_id=FIRST, old_string="", new_string="x"
    ),
    case("update_cell", ("together",), path="nb.ipynb", cell_id=FIRST, old_string="total"),
    case("update_cell", ("Nothing to change",), path="nb.ipynb", cell_id=FIRST),
    case("update_cell", ("cell_type", "markdown"), path="nb.ipynb", cell_id=FIRST, cell_type="heading"),
    case(
        "update_cell",
        ("cell_type", "markdown"),
        path="nb.ipynb",
        cell_id=FIRST,
        source="# T",
        cell_type="heading",
    ),
    case(
        "insert_cells",
        ("cell_type", "markdown"),
        path="nb.ipynb",
        cells=[{"cell_type": "heading", "source": "T"}],
    ),
    case("create_notebook", ("cell_type", "markdown"), path="new.ipynb", cells=[{"cell_type": "heading"}]),
    case("insert_cells", ("out of range", "cells"), path="nb.ipynb", index=7, cells=[{"source": "1"}]),
    case("insert_cells", ("either",), path="nb.ipynb", before=FIRST, after=NOTES, cells=[{"source": "1"}]),
    case("move_cell", ("itself",), path="nb.ipynb", cell_id=FIRST, before=FIRST),
    case("move_cell", ("itself",), path="nb.ipynb", cell_id=NOTES, after="note"),
    case("move_cell", ("Say where",), path="nb.ipynb", cell_id=FIRST),
    case("search_notebook", ("regular expression", "regex=false"), path="nb.ipynb", pattern="(", regex=True),
    # Sources over the size limit.
    case("insert_cells", ("limit", "Split"), path="nb.ipynb", cells=[{"source": "x" * (SOURCE_LIMIT + 1)}]),
    case(
        "insert_cells",
        ("limit", "Split"),
        path="nb.ipynb",
        cells=[{"source": "x" * (SOURCE_LIMIT // 2 + 1)}] * 2,
    ),
    case("update_cell", ("limit", "Split"), path="nb.ipynb", cell_id=FIRST, source="x" * (SOURCE_LIMIT + 1)),
    case(
        "update_cell",
        ("limit", "Split"),
        path="nb.ipynb",
        cell_id=FIRST,
        old_string="total = 0",
        new_string="x" * SOURCE_LIMIT,
    ),
    case(
        "create_notebook", ("limit", "Split"), path="big.ipynb", cells=[{"source": "x" * (SOURCE_LIMIT + 1)}]
    ),
    # Creating over something that exists, or with a kernel that does not.
    case("create_notebook", ("already exists",), path="nb.ipynb"),
    case("create_notebook", ("outside",), path="escape.ipynb"),
    case("create_notebook", ("No kernel named", "Installed"), path="new.ipynb", kernel_name="cobol"),
    case("create_notebook", (".ipynb",), path="new.txt"),
    # Hidden files, which this server hides.
    case("get_notebook", ("hidden",), path=".hidden.ipynb"),
    case("insert_cells", ("hidden",), path=".secret/inner.ipynb", cells=[{"source": "1"}]),
    case("create_notebook", ("hidden",), path=".new.ipynb"),
    case("create_notebook", ("hidden",), path=".secret/new.ipynb"),
    case("list_notebooks", ("hidden",), path=".secret"),
]


@pytest.mark.parametrize(("tool", "args", "words"), BAD_INPUTS)
async def test_bad_input_is_a_tool_error_and_changes_no_file(
    server_url, jp_auth_header, files, ydoc_extension, tool, args, words
):
    before = snapshot(files)
    async with connect(server_url, jp_auth_header) as agent:
        message = await fails(agent, tool, **args)
    for word in words:
        assert word.lower() in message.lower(), message
    assert snapshot(files) == before
    live = await ydoc_extension.get_document(path="nb.ipynb", content_type="notebook", file_format="json")
    if live is not None:
        # The agent's mistake left the shared document as it was, too: nothing for Jupyter to save.
        assert [(c["id"], "".join(c["source"])) for c in live.get()["cells"]] == [
            (FIRST, "total = 0\ntotal += 1\ntotal += 1"),
            (NOTES, "# Notes"),
        ]
    if ydoc_extension.ywebsocket_server.rooms:
        await asyncio.sleep(SETTLE)  # an open room saves after the save delay: it must have nothing to save
    assert snapshot(files) == before


async def test_hidden_notebooks_are_not_listed(server_url, jp_auth_header, files):
    async with connect(server_url, jp_auth_header) as agent:
        listed = (await ok(agent, "list_notebooks"))["notebooks"]
    # Neither the hidden ones nor the one behind the symlink out of the root.
    assert [n["path"] for n in listed] == ["broken.ipynb", "nb.ipynb", "not_a_notebook.ipynb"]


@pytest.mark.parametrize(
    "content", ["{not json", '{"hello": "world"}\n', ""], ids=["not-json", "not-nb", "empty"]
)
async def test_broken_notebook_is_left_alone_until_a_person_fixes_it(
    server_url, jp_auth_header, jp_root_dir, ydoc_extension, content
):
    file = jp_root_dir / "broken.ipynb"
    file.write_text(content)
    async with connect(server_url, jp_auth_header) as agent:
        for _ in range(2):  # a retry must not find a half-open room either
            message = await fails(agent, "get_notebook", path="broken.ipynb")
            assert "not a valid notebook" in message and "untouched" in message
            assert str(jp_root_dir) not in message  # the server's own folders are not the agent's business
        rooms = [r for r in ydoc_extension.ywebsocket_server.rooms if r.startswith("json:notebook:")]
        assert rooms == []
        await asyncio.sleep(SETTLE)
        assert file.read_text() == content

        # The person repairs the file: the agent now reads the repair, and nothing overwrites it.
        fixed = notebook_text("repaired = True")
        file.write_text(fixed)
        cells = (await ok(agent, "read_cells", path="broken.ipynb"))["cells"]
        assert [c["source"] for c in cells] == ["repaired = True"]
        await asyncio.sleep(SETTLE)
    assert json.loads(file.read_text()) == json.loads(fixed)
