"""An agent finds, reads, writes, edits, downloads, renames and deletes the files around its notebooks,
through Jupyter's ContentsManager and, for a file open in an editor tab, through the tab's document."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import anyio
import httpx
import pytest
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from tornado.web import HTTPError
from traitlets.config import Config

from ..support.mcp_client import connect, fails, ok
from ..support.ytext import TextPeer

MAX_FILE = 4000
MAX_DOWNLOAD = 2000
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


class ReadOnlyFolderManager(AsyncLargeFileManager):
    """A contents backend with a read-only folder, as a shared mount or a read-only bucket has."""

    async def save(self, model, path=""):
        if path.strip("/").startswith("readonly/"):
            raise HTTPError(403, f"Permission denied: {path}")
        return await super().save(model, path)


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    jp_server_config.MCPExtensionApp.max_file_bytes = MAX_FILE
    jp_server_config.MCPExtensionApp.max_download_bytes = MAX_DOWNLOAD
    jp_server_config.ContentsManager.allow_hidden = False
    jp_server_config.ServerApp.contents_manager_class = ReadOnlyFolderManager
    return jp_server_config


@pytest.fixture
def tree(jp_root_dir: Path, make_notebook) -> Path:
    (jp_root_dir / "data").mkdir()
    (jp_root_dir / "data" / "table.csv").write_text("a,b\n1,2\n3,4\n")
    (jp_root_dir / "data" / "deep").mkdir()
    (jp_root_dir / "data" / "deep" / "more.csv").write_text("x\n")
    (jp_root_dir / "lib.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 1\n")
    (jp_root_dir / "plot.png").write_bytes(PNG)
    (jp_root_dir / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (jp_root_dir / ".env").write_text("SECRET=1\n")
    (jp_root_dir / "readonly").mkdir()
    (jp_root_dir / "readonly" / "keep.txt").write_text("kept\n")
    make_notebook("analysis.ipynb", cells=["import pandas"])
    return jp_root_dir


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


async def test_agent_lists_reads_and_pages_through_files(server_url, jp_auth_header, tree):
    async with connect(server_url, jp_auth_header) as agent:
        top = (await ok(agent, "list_files"))["entries"]
        assert {e["path"]: e["type"] for e in top} == {
            "analysis.ipynb": "notebook",
            "blob.bin": "file",
            "data": "directory",
            "lib.py": "file",
            "plot.png": "file",
            "readonly": "directory",
        }  # .env is hidden on this server
        csvs = await ok(agent, "list_files", path="data", pattern="*.csv", recursive=True)
        assert [e["path"] for e in csvs["entries"]] == ["data/table.csv", "data/deep/more.csv"]
        assert csvs["next_offset"] is None

        first = await agent.call_tool("read_file", {"path": "lib.py", "limit": 2})
        assert first.content[0].text.splitlines()[:2] == ["     1\tdef f():", "     2\t    return 1"]
        assert first.structured_content["total_lines"] == 6 and first.structured_content["more"]
        rest = await ok(agent, "read_file", path="lib.py", offset=5)
        assert rest["content"].splitlines() == ["     5\tdef g():", "     6\t    return 1"]
        assert not rest["more"]


async def test_list_files_pages_a_large_folder(server_url, jp_auth_header, jp_root_dir):
    for i in range(250):
        (jp_root_dir / f"f{i:03}.txt").write_text("x")
    async with connect(server_url, jp_auth_header) as agent:
        page1 = await ok(agent, "list_files")
        page2 = await ok(agent, "list_files", offset=page1["next_offset"])
    assert len(page1["entries"]) == 200 and page2["next_offset"] is None
    names = [e["path"] for e in page1["entries"] + page2["entries"]]
    assert names == [f"f{i:03}.txt" for i in range(250)]


async def test_agent_writes_edits_renames_and_deletes(server_url, jp_auth_header, tree):
    async with connect(server_url, jp_auth_header) as agent:
        created = await ok(agent, "write_file", path="new/sub/notes.md", content="# Notes\nTODO\n")
        assert created["created"] and (tree / "new/sub/notes.md").read_text() == "# Notes\nTODO\n"

        edited = await ok(
            agent, "edit_file", path="lib.py", old_string="return 1", new_string="return 2", replace_all=True
        )
        assert edited["replacements"] == 2
        assert (tree / "lib.py").read_text() == "def f():\n    return 2\n\n\ndef g():\n    return 2\n"

        await ok(agent, "write_file", path="lib.py", content="x = 1\n")
        assert (tree / "lib.py").read_text() == "x = 1\n"

        await ok(agent, "rename_path", path="new/sub/notes.md", new_path="docs/notes.md")
        assert (tree / "docs/notes.md").exists() and not (tree / "new/sub/notes.md").exists()
        await ok(agent, "delete_path", path="docs/notes.md")
        assert not (tree / "docs/notes.md").exists()


async def test_download_gives_text_base64_and_images(server_url, jp_auth_header, tree):
    async with connect(server_url, jp_auth_header) as agent:
        text = await ok(agent, "download_file", path="data/table.csv")
        assert text["content"] == "a,b\n1,2\n3,4\n" and not text["base64"]
        blob = await ok(agent, "download_file", path="blob.bin")
        assert blob["base64"] and base64.b64decode(blob["content"]) == bytes(range(256)) * 4
        image = await agent.call_tool("download_file", {"path": "plot.png"})
        assert not image.is_error
        assert [(b.type, getattr(b, "mime_type", None)) for b in image.content] == [
            ("text", None),
            ("image", "image/png"),
        ]
        assert base64.b64decode(image.content[1].data) == PNG


async def test_every_bad_request_is_a_clear_error_and_changes_nothing(server_url, jp_auth_header, tree):
    (tree / "big.txt").write_text("y" * (MAX_FILE + 1))
    (tree / "big.bin").write_bytes(b"\x00" * (MAX_DOWNLOAD + 1))
    before = snapshot(tree)
    async with connect(server_url, jp_auth_header) as agent:
        cases = [
            (("read_file", {"path": "../etc/passwd"}), "inside the Jupyter server root"),
            (("read_file", {"path": "/etc/passwd"}), "is absolute"),
            (("read_file", {"path": ".env"}), "hidden"),
            (("write_file", {"path": ".env", "content": "SECRET=2"}), "hidden"),
            (("read_file", {"path": "blob.bin"}), "download_file"),
            (("read_file", {"path": "analysis.ipynb"}), "get_notebook"),
            (
                ("edit_file", {"path": "analysis.ipynb", "old_string": "pandas", "new_string": "numpy"}),
                "notebook",
            ),
            (("write_file", {"path": "analysis.ipynb", "content": "{}"}), "notebook"),
            (("read_file", {"path": "big.txt"}), "limit"),
            (("download_file", {"path": "big.bin"}), "limit"),
            (("write_file", {"path": "x.txt", "content": "z" * (MAX_FILE + 1)}), "limit"),
            (("read_file", {"path": "missing.txt"}), "list_files"),
            (("read_file", {"path": "data"}), "folder"),
            (("edit_file", {"path": "lib.py", "old_string": "nope", "new_string": "x"}), "not found"),
            (("edit_file", {"path": "lib.py", "old_string": "return 1", "new_string": "x"}), "2 times"),
            (("write_file", {"path": "lib.py", "content": "", "overwrite": False}), "overwrite"),
            (("write_file", {"path": "readonly/new.txt", "content": "x"}), "Permission denied"),
            (("write_file", {"path": "readonly/keep.txt", "content": "x"}), "Permission denied"),
            (("rename_path", {"path": "lib.py", "new_path": "data/table.csv"}), "already exists"),
            (("rename_path", {"path": "data", "new_path": "data/deep/data"}), "into itself"),
            (("rename_path", {"path": "lib.py", "new_path": "../lib.py"}), "inside the Jupyter server root"),
            (("delete_path", {"path": ""}), "root"),
            (("delete_path", {"path": "nothing.txt"}), "Nothing at"),
            (("list_files", {"path": "nowhere"}), "No folder"),
        ]
        for (tool, arguments), expected in cases:
            message = await fails(agent, tool, **arguments)
            assert expected in message, (tool, arguments, message)
    assert snapshot(tree) == before


async def test_edit_reaches_an_open_editor_tab_live_and_keeps_the_persons_typing(
    server_url, jp_auth_header, tree
):
    async with (
        TextPeer(server_url, jp_auth_header, "lib.py") as tab,
        connect(server_url, jp_auth_header) as agent,
    ):
        tab.type_at(len(tab.text), "# typed in the tab, not saved yet\n")
        await tab.flush()
        # The agent reads what the tab shows, not the older file on disk.
        assert "typed in the tab" in (await ok(agent, "read_file", path="lib.py"))["content"]

        await ok(agent, "edit_file", path="lib.py", old_string="def g", new_string="def h")
        expected = "def f():\n    return 1\n\n\ndef h():\n    return 1\n# typed in the tab, not saved yet\n"
        await tab.wait_for_text(expected)

        await ok(agent, "write_file", path="lib.py", content=expected + "z = 3\n")
        await tab.wait_for_text(expected + "z = 3\n")
    with anyio.fail_after(10):  # the collaboration layer saves the shared text
        while (tree / "lib.py").read_text() != expected + "z = 3\n":
            await anyio.sleep(0.1)


async def test_renaming_a_notebook_keeps_its_kernel_session(server_url, jp_auth_header, tree):
    async with httpx.AsyncClient(headers=jp_auth_header, timeout=30) as http:
        created = await http.post(
            f"{server_url}api/sessions",
            json={
                "path": "analysis.ipynb",
                "name": "analysis.ipynb",
                "type": "notebook",
                "kernel": {"name": "python3"},
            },
        )
        assert created.status_code == 201
        session = created.json()
        try:
            async with connect(server_url, jp_auth_header) as agent:
                moved = await ok(
                    agent, "rename_path", path="analysis.ipynb", new_path="work/analysis-v2.ipynb"
                )
            assert moved["sessions_moved"] == 1
            sessions = (await http.get(f"{server_url}api/sessions")).json()
            assert [(s["id"], s["path"], s["kernel"]["id"]) for s in sessions] == [
                (session["id"], "work/analysis-v2.ipynb", session["kernel"]["id"])
            ]
            assert (
                "".join(json.loads((tree / "work/analysis-v2.ipynb").read_text())["cells"][0]["source"])
                == "import pandas"
            )
        finally:
            await http.delete(f"{server_url}api/sessions/{session['id']}")
