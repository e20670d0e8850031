"""Completions offer notebook paths, cell ids and kernel names as a person fills in a prompt or the
notebook URI, newest first and bounded, and never anything the tools would refuse to open."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from jupyter_server.auth import Authorizer
from mcp.shared.exceptions import MCPError
from mcp_types import PromptReference, ResourceTemplateReference
from traitlets.config import Config

from jupyter_mcp_ext.documents.finder import notebooks_starting_with
from jupyter_mcp_ext.documents.secrets import DEFAULT_DENIED, DeniedFiles
from jupyter_mcp_ext.tools.resources import TEMPLATE

from ..support.mcp_client import MODES, connect

FIX = PromptReference(name="fix_failing_cell")
CLEAN = PromptReference(name="clean_run")
NOTEBOOK = ResourceTemplateReference(uri=TEMPLATE)


def age(root: Path, path: str, seconds_ago: float) -> None:
    when = time.time() - seconds_ago
    os.utime(root / path, (when, when))


@pytest.mark.parametrize("mode", MODES)
async def test_paths_come_newest_first_for_prompts_and_the_notebook_template(
    server_url, jp_auth_header, make_notebook, jp_root_dir, mode
):
    for path, ago in [
        ("analysis/model.ipynb", 300),
        ("analysis/more/deep.ipynb", 10),
        ("anatomy.ipynb", 100),
    ]:
        make_notebook(path)
        age(jp_root_dir, path, ago)
    make_notebook("other/x.ipynb")
    (jp_root_dir / "analysis" / "notes.txt").write_text("not a notebook")
    async with connect(server_url, jp_auth_header, mode) as client:
        assert client.server_capabilities.completions is not None
        for ref in (FIX, CLEAN, PromptReference(name="explain_notebook"), NOTEBOOK):
            done = (await client.complete(ref, {"name": "path", "value": "ana"})).completion
            assert done.values == ["analysis/more/deep.ipynb", "anatomy.ipynb", "analysis/model.ipynb"]
            assert (done.total, done.has_more) == (3, False)
        inside = (await client.complete(NOTEBOOK, {"name": "path", "value": "analysis/m"})).completion
        assert inside.values == ["analysis/more/deep.ipynb", "analysis/model.ipynb"]
        everything = (await client.complete(NOTEBOOK, {"name": "path", "value": ""})).completion
        assert sorted(everything.values) == sorted(
            ["analysis/model.ipynb", "analysis/more/deep.ipynb", "anatomy.ipynb", "other/x.ipynb"]
        )
        none = (await client.complete(NOTEBOOK, {"name": "path", "value": "zzz"})).completion
        assert (none.values, none.total, none.has_more) == ([], 0, False)


@pytest.mark.parametrize("mode", MODES)
async def test_cell_ids_of_the_named_notebook_and_kernel_names(
    server_url, jp_auth_header, make_notebook, mode
):
    path = make_notebook(
        "cells.ipynb", cells=[{"id": "load-data", "source": "1"}, {"id": "plot", "source": "2"}]
    )
    make_notebook(".secret/hidden.ipynb", cells=[{"id": "load-hidden", "source": "1"}])
    make_notebook("my_credentials.ipynb", cells=[{"id": "load-key", "source": "1"}])
    async with connect(server_url, jp_auth_header, mode) as client:
        ids = await client.complete(FIX, {"name": "cell_id", "value": ""}, {"path": path})
        assert ids.completion.values == ["load-data", "plot"]
        ids = await client.complete(FIX, {"name": "cell_id", "value": "lo"}, {"path": path})
        assert (ids.completion.values, ids.completion.total) == (["load-data"], 1)
        for other in ("gone.ipynb", ".secret/hidden.ipynb", "my_credentials.ipynb", "../cells.ipynb", None):
            context = {"path": other} if other else None
            nothing = await client.complete(FIX, {"name": "cell_id", "value": "lo"}, context)
            assert nothing.completion.values == [], other
        kernels = (await client.complete(CLEAN, {"name": "kernel_name", "value": "py"})).completion
        assert kernels.values[0] == "python3" and all(k.startswith("py") for k in kernels.values)


async def test_prompts_take_the_completed_arguments(server_url, jp_auth_header, make_notebook):
    path = make_notebook("p.ipynb", cells=[{"id": "broken", "source": "1/0"}])
    async with connect(server_url, jp_auth_header) as client:
        listed = {
            p.name: [(a.name, a.required) for a in p.arguments] for p in (await client.list_prompts()).prompts
        }
        assert listed["fix_failing_cell"] == [("path", True), ("cell_id", None)]
        assert listed["clean_run"] == [("path", True), ("kernel_name", None)]
        fix = await client.get_prompt("fix_failing_cell", {"path": path, "cell_id": "broken"})
        assert "The cell to fix is broken" in fix.messages[0].content.text
        run = await client.get_prompt("clean_run", {"path": path, "kernel_name": "python3"})
        assert "kernel 'python3'" in run.messages[0].content.text
        with pytest.raises(MCPError, match="No cell 'nope'"):
            await client.get_prompt("fix_failing_cell", {"path": path, "cell_id": "nope"})
        with pytest.raises(MCPError, match="No kernel named 'cobol'"):
            await client.get_prompt("clean_run", {"path": path, "kernel_name": "cobol"})
        with pytest.raises(MCPError, match="has no argument 'colour'"):
            await client.get_prompt("explain_notebook", {"path": path, "colour": "red"})


async def test_never_offered_outside_the_root_denied_or_hidden(
    server_url, jp_auth_header, make_notebook, jp_root_dir, tmp_path
):
    make_notebook("visible.ipynb")
    make_notebook(".hidden.ipynb")
    make_notebook(".private/in_hidden_folder.ipynb")
    make_notebook("keys/aws_credentials.ipynb")
    make_notebook("__pycache__/cached.ipynb")  # the contents manager's hide_globs
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.ipynb").write_text((jp_root_dir / "visible.ipynb").read_text())
    (jp_root_dir / "link").symlink_to(outside, target_is_directory=True)
    (jp_root_dir / "up").symlink_to(jp_root_dir, target_is_directory=True)  # a loop back up
    async with connect(server_url, jp_auth_header) as client:
        offered = (await client.complete(NOTEBOOK, {"name": "path", "value": ""})).completion.values
        assert offered == ["visible.ipynb"]
        for prefix in ("../", "/", "/etc", "~", "link/", ".private/", ".h", "keys/", "a\x00b", "C:/x"):
            done = (await client.complete(NOTEBOOK, {"name": "path", "value": prefix})).completion
            assert done.values == [], prefix


class TestHiddenAllowed:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Config) -> Config:
        jp_server_config.ContentsManager.allow_hidden = True
        return jp_server_config

    async def test_hidden_notebooks_are_offered_when_the_server_serves_them(
        self, server_url, jp_auth_header, make_notebook
    ):
        make_notebook(".private/nb.ipynb")
        make_notebook("keys/.env.ipynb")  # still a secret
        async with connect(server_url, jp_auth_header) as client:
            done = (await client.complete(NOTEBOOK, {"name": "path", "value": ".p"})).completion
            assert done.values == [".private/nb.ipynb"]
            denied = (await client.complete(NOTEBOOK, {"name": "path", "value": "keys/"})).completion
            assert denied.values == []


async def test_at_most_a_hundred_values_with_an_honest_total(server_url, jp_auth_header, make_notebook):
    for n in range(130):
        make_notebook(f"many/nb{n:03}.ipynb")
    async with connect(server_url, jp_auth_header) as client:
        done = (await client.complete(NOTEBOOK, {"name": "path", "value": "many/"})).completion
    assert (len(done.values), done.total, done.has_more) == (100, 130, True)


async def test_bad_references_and_huge_values_are_clear_errors(server_url, jp_auth_header, make_notebook):
    make_notebook("a.ipynb")
    async with connect(server_url, jp_auth_header) as client:
        with pytest.raises(MCPError, match="Unknown prompt 'write_my_thesis'"):
            await client.complete(PromptReference(name="write_my_thesis"), {"name": "path", "value": ""})
        with pytest.raises(MCPError, match="No resource template 'file:///"):
            await client.complete(
                ResourceTemplateReference(uri="file:///{path}"), {"name": "path", "value": ""}
            )
        with pytest.raises(MCPError, match="has no argument 'colour'; its arguments are path, cell_id"):
            await client.complete(FIX, {"name": "colour", "value": ""})
        with pytest.raises(MCPError, match="over 1024 characters"):
            await client.complete(NOTEBOOK, {"name": "path", "value": "a" * 100_000})
        # The server is still fine.
        done = (await client.complete(NOTEBOOK, {"name": "path", "value": "a"})).completion
        assert done.values == ["a.ipynb"]


class NoContentsRead(Authorizer):
    def is_authorized(self, handler, user, action, resource) -> bool:
        return resource != "contents"


class TestNotPermitted:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Config) -> Config:
        jp_server_config.ServerApp.authorizer_class = NoContentsRead
        return jp_server_config

    async def test_a_user_who_may_not_read_contents_is_offered_nothing(
        self, server_url, jp_auth_header, make_notebook
    ):
        make_notebook("a.ipynb")
        async with connect(server_url, jp_auth_header) as client:
            with pytest.raises(MCPError, match="may not read contents"):
                await client.complete(NOTEBOOK, {"name": "path", "value": ""})


async def test_the_walk_stops_at_its_bounds_and_says_so(tmp_path):
    """A huge tree: the walk gives up after its entry or time budget, off the event loop."""

    class Contents:  # the two things the finder asks of a contents manager on a local disk
        root_dir = str(tmp_path)
        allow_hidden = False

        def should_list(self, name: str) -> bool:
            return True

    for n in range(300):
        (tmp_path / f"nb{n:03}.ipynb").write_text("{}")
    denied, walks = DeniedFiles(DEFAULT_DENIED), asyncio.Semaphore(2)
    whole = await notebooks_starting_with("", Contents(), denied, walks)
    assert (len(whole.notebooks), whole.complete) == (300, True)
    cut = await notebooks_starting_with("", Contents(), denied, walks, max_entries=50)
    assert (len(cut.notebooks), cut.complete) == (50, False)
    late = await notebooks_starting_with("", Contents(), denied, walks, max_seconds=0)
    assert late.complete is False


class TestConformanceFixture:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Config) -> Config:
        jp_server_config.MCPExtensionApp.conformance_tools = True
        return jp_server_config

    async def test_the_suites_prompt_is_listed_completed_and_filled_in(self, server_url, jp_auth_header):
        fixture = PromptReference(name="test_prompt_with_arguments")
        async with connect(server_url, jp_auth_header) as client:
            assert "test_prompt_with_arguments" in [p.name for p in (await client.list_prompts()).prompts]
            done = (await client.complete(fixture, {"name": "arg1", "value": "test"})).completion
            assert (done.values, done.total, done.has_more) == ([], 0, False)
            got = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
            assert got.messages[0].content.text == "Prompt with arguments: arg1='a', arg2='b'"


async def test_the_suites_prompt_is_not_there_by_default(server_url, jp_auth_header):
    async with connect(server_url, jp_auth_header) as client:
        assert "test_prompt_with_arguments" not in [p.name for p in (await client.list_prompts()).prompts]
        with pytest.raises(MCPError, match="Unknown prompt"):
            await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
