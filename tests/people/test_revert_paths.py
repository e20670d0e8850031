"""Regression tests for issue 18 (findings 3, 4, 5, 6a, 9b, 9c of the hostile review): a revert is held
to the tools' path rules, folders are judged by what they hold, big files are journaled as what they
are, the journal is bounded in everything it keeps, and errors carry no server path.

The "second process" changing the file system under the agent is the test itself (``os.symlink``,
``os.remove`` on ``jp_root_dir``), as another program of the person's would.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest
from traitlets.config import Config

from jupyter_mcp_ext.documents import secrets

from ..support.mcp_client import connect, fails, ok
from ..support.yclient import GlobalAwarenessPeer


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    # Hidden files served, as many set it: the deny-list alone keeps .kube/config and .git/config away.
    jp_server_config.ContentsManager.allow_hidden = True
    return jp_server_config


# -- finding 3: reverts skip the path rules -----------------------------------------------------------


async def test_a_revert_never_writes_a_secret_a_link_now_leads_to(
    server_url, jp_auth_header, jp_root_dir, panel
):
    (jp_root_dir / "notes.txt").write_text("alpha\n")
    (jp_root_dir / "secret.pem").write_text("-----BEGIN KEY-----\nbeta\n")
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "edit_file", path="notes.txt", old_string="alpha", new_string="beta")
        os.remove(jp_root_dir / "notes.txt")  # another process swaps the file for a link to the secret
        os.symlink("secret.pem", jp_root_dir / "notes.txt")
        assert "denied_files" in await fails(agent, "read_file", path="notes.txt")
    result = await panel.revert((await panel.entry("edit_file"))["id"], status=409)
    assert "denied_files" in result["conflicts"][0]["reason"]
    assert (jp_root_dir / "secret.pem").read_text() == "-----BEGIN KEY-----\nbeta\n"


async def test_a_revert_never_creates_a_file_outside_the_root(
    server_url, jp_auth_header, jp_root_dir, tmp_path, panel
):
    outside = tmp_path / "outside"
    outside.mkdir()
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "write_file", path="gone.txt", content="draft\n")
        await ok(agent, "delete_path", path="gone.txt")
    os.symlink(outside / "planted.txt", jp_root_dir / "gone.txt")  # a dangling link out of the root
    result = await panel.revert((await panel.entry("delete_path"))["id"], status=409)
    assert "outside the Jupyter server root" in result["conflicts"][0]["reason"]
    assert not (outside / "planted.txt").exists()
    assert str(tmp_path) not in json.dumps(result)


async def test_a_revert_of_a_rename_never_moves_a_secret(server_url, jp_auth_header, jp_root_dir, panel):
    (jp_root_dir / "draft.txt").write_text("text\n")
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "rename_path", path="draft.txt", new_path="final.txt")
    os.remove(jp_root_dir / "final.txt")  # another process puts a folder of keys in its place
    (jp_root_dir / "final.txt").mkdir()
    (jp_root_dir / "final.txt" / "server.key").write_text("KEY")
    result = await panel.revert((await panel.entry("rename_path"))["id"], status=409)
    assert "denied_files" in result["conflicts"][0]["reason"]
    assert (jp_root_dir / "final.txt" / "server.key").read_text() == "KEY"
    assert not (jp_root_dir / "draft.txt").exists()


# -- finding 4: the deny-list judges a folder by what it holds ----------------------------------------


async def test_a_folder_holding_a_secret_is_neither_deleted_nor_renamed(
    server_url, jp_auth_header, jp_root_dir
):
    for name, text in {
        "keys/server.pem": "CERT",
        ".kube/config": "token: s3cr3t",
        "proj/.git/config": "url = https://user:pat@host",
        "stuff/config": "plain",
    }.items():
        (jp_root_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (jp_root_dir / name).write_text(text)
    async with connect(server_url, jp_auth_header) as agent:
        message = await fails(agent, "delete_path", path="keys")
        assert "denied_files" in message and "keys/server.pem" in message, message
        assert "denied_files" in await fails(agent, "rename_path", path=".kube", new_path="kubex")
        assert "denied_files" in await fails(agent, "rename_path", path="proj", new_path="project")
        assert "denied_files" in await fails(agent, "rename_path", path="proj/.git", new_path="proj/git")
        assert "denied_files" in await fails(agent, "delete_path", path="proj")
        # the new name would make a plain file a denied one (stuff/config -> .kube/config)
        (jp_root_dir / ".kube" / "config").unlink()
        (jp_root_dir / ".kube").rmdir()
        assert "denied_files" in await fails(agent, "rename_path", path="stuff", new_path=".kube")
        assert "No file" in await fails(agent, "read_file", path="kubex/config")
        await ok(agent, "rename_path", path="stuff", new_path="things")  # an ordinary folder moves
    assert (jp_root_dir / "keys/server.pem").read_text() == "CERT"
    assert (jp_root_dir / "proj/.git/config").exists()
    assert (jp_root_dir / "things/config").read_text() == "plain"


async def test_a_folder_too_large_to_check_is_refused_with_a_clear_message(
    server_url, jp_auth_header, jp_root_dir, monkeypatch
):
    monkeypatch.setattr(secrets, "MAX_TREE_ENTRIES", 50)
    for i in range(60):
        (jp_root_dir / "big" / f"d{i % 3}").mkdir(parents=True, exist_ok=True)
        (jp_root_dir / "big" / f"d{i % 3}" / f"f{i}.txt").write_text("x")
    async with connect(server_url, jp_auth_header) as agent:
        message = await fails(agent, "delete_path", path="big")
        assert "more than 50 entries" in message and "Nothing was" in message, message
        await ok(agent, "delete_path", path="big/d0")  # 20 files: checked, and nothing secret
    assert (jp_root_dir / "big" / "d1").exists() and not (jp_root_dir / "big" / "d0").exists()


# -- finding 5: big files journaled wrong -------------------------------------------------------------


BIG = 3_500_000


async def test_an_overwrite_of_a_file_too_big_to_keep_is_journaled_as_not_revertible(
    server_url, jp_auth_header, jp_root_dir, panel
):
    (jp_root_dir / "big.txt").write_text("a" * BIG)
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "write_file", path="big.txt", content="b" * BIG)
        same_size = await panel.entry("write_file")
        await ok(agent, "write_file", path="big.txt", content="tiny")
    tiny = await panel.entry("write_file")
    assert tiny["id"] != same_size["id"]
    for entry in (same_size, tiny):
        (change,) = entry["changes"]
        assert change["before"] is not None and "not kept" in change["before"], change  # never a creation
        assert not entry["revertible"] and "too large" in change["why"]
    result = await panel.revert(tiny["id"], status=409)
    assert "too large" in result["conflicts"][0]["reason"]
    assert (jp_root_dir / "big.txt").read_text() == "tiny"  # the person's file is still there


# -- finding 6a: the journal's byte bound counts everything it keeps ----------------------------------


HUGE_PATH = "p" * 4_000_000


async def test_refused_calls_with_huge_paths_are_journaled_compactly(server_url, jp_auth_header, panel):
    await panel.post("policy", {"mode": "read-only"})
    async with connect(server_url, jp_auth_header) as agent:
        for _ in range(30):
            assert "read-only" in await fails(agent, "write_file", path=HUGE_PATH, content="x")
    response = await panel.http.get(panel.base + "journal")
    entries = response.json()["entries"]
    assert len(entries) == 30 and all(e["outcome"] == "denied" for e in entries)
    assert len(response.content) < 200_000, len(response.content)
    assert all(len(e["path"]) < 2000 and "more characters" in e["path"] for e in entries)


class TestEveryFieldCounts:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        jp_server_config.MCPExtensionApp.journal_bytes = 20_000
        return jp_server_config

    async def test_paths_and_errors_count_toward_the_journals_bytes(self, server_url, jp_auth_header, panel):
        await panel.post("policy", {"mode": "read-only"})
        async with connect(server_url, jp_auth_header) as agent:
            for n in range(60):
                await fails(agent, "write_file", path=f"{n}" + "q" * 5000, content="x")
        entries = await panel.journal()
        assert 0 < len(entries) < 60  # the oldest went: each refused call holds its (cut) path


# -- findings 9b and 9c: revert's input and errors -----------------------------------------------------


async def test_a_revert_takes_integer_ids_only(server_url, jp_auth_header, panel):
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "write_file", path="one.txt", content="1")
    entry = await panel.entry("write_file")
    for body, field in (
        ({"entry": entry["id"] + 0.9}, "entry"),
        ({"entry": True}, "entry"),
        ({"entry": str(entry["id"])}, "entry"),
        ({"agent": entry["agent"], "since": 1.5}, "since"),
        ({"agent": entry["agent"], "since": False}, "since"),
    ):
        response = await panel.http.post(panel.base + "revert", json=body)
        assert response.status_code == 400 and field in response.json()["message"], (body, response.text)
    assert not (await panel.entry("write_file"))["reverted"]


async def test_concurrent_reverts_answer_without_server_paths(server_url, jp_auth_header, jp_root_dir, panel):
    async with connect(server_url, jp_auth_header) as agent:
        for n in range(5):
            await ok(agent, "write_file", path=f"made{n}.txt", content="new\n")
    entries = [e for e in await panel.journal() if e["tool"] == "write_file"]
    for entry in entries:
        responses = await asyncio.gather(
            *(panel.http.post(panel.base + "revert", json={"entry": entry["id"]}) for _ in range(4))
        )
        for response in responses:
            assert response.status_code in (200, 409), response.text
            assert (
                str(jp_root_dir) not in response.text and os.path.realpath(jp_root_dir) not in response.text
            )
        assert sum(entry["id"] in r.json().get("reverted", []) for r in responses) == 1
    assert not list(Path(jp_root_dir).glob("made*.txt"))


async def test_tool_errors_and_the_journal_carry_no_server_path(
    server_url, jp_auth_header, jp_root_dir, panel
):
    (jp_root_dir / "plain.txt").write_text("x")
    (jp_root_dir / "d").mkdir()
    async with connect(server_url, jp_auth_header) as agent:
        texts = [  # the contents manager's message names the folder it could not create, on disk
            await fails(agent, "write_file", path="plain.txt/inner.txt", content="x"),
            await fails(agent, "create_notebook", path="plain.txt/n.ipynb"),
            await fails(agent, "rename_path", path="d", new_path="plain.txt/d"),
        ]
    errors = [e["error"] for e in await panel.journal()]
    assert len(errors) == 3 and all("Not a directory" in text for text in texts + errors), texts + errors
    for text in texts + errors:
        assert str(jp_root_dir) not in text and os.path.realpath(jp_root_dir) not in text, text


async def test_a_revert_the_file_system_refuses_is_a_conflict_without_server_paths(
    server_url, jp_auth_header, jp_root_dir, panel
):
    (jp_root_dir / "sub").mkdir()
    (jp_root_dir / "sub" / "x.txt").write_text("keep me\n")
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "delete_path", path="sub/x.txt")
    shutil.rmtree(jp_root_dir / "sub")  # another process puts a file where the folder was
    (jp_root_dir / "sub").write_text("a file now")
    response = await panel.http.post(
        panel.base + "revert", json={"entry": (await panel.entry("delete_path"))["id"]}
    )
    assert response.status_code == 409, response.text
    assert "could not be put back" in response.json()["conflicts"][0]["reason"], response.text
    assert str(jp_root_dir) not in response.text and os.path.realpath(jp_root_dir) not in response.text


# -- found alongside 6a: an agent's huge path was broadcast to every browser as its presence ----------


async def test_a_huge_path_is_never_shown_as_where_an_agent_is(server_url, jp_auth_header, jp_root_dir):
    (jp_root_dir / "real.txt").write_text("x\n")

    def agents(peer: GlobalAwarenessPeer) -> list[dict]:
        return [s for s in peer.remote_states().values() if s and s.get("user", {}).get("bot")]

    async with (
        GlobalAwarenessPeer(server_url, jp_auth_header) as lobby,
        connect(server_url, jp_auth_header) as agent,
    ):
        await ok(agent, "read_file", path="real.txt")
        await lobby.wait_for(
            lambda _: [s for s in agents(lobby) if s["current"] == "editor:real.txt"], timeout=10
        )
        await fails(agent, "read_file", path="p" * 1_000_000)
        # not where the agent claims to be: it leaves the collaborators panel (no 1 MB state for each tab)
        await lobby.wait_for(lambda _: not agents(lobby), timeout=10)
