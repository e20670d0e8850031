"""Every agent change is journaled, and a person can revert it in the live notebook: exactly that
change goes, every later edit that does not depend on it stays, and a conflict is refused."""

from __future__ import annotations

import asyncio
import json

import pytest

from ..support.mcp_client import STATELESS, connect, fails, ok
from ..support.ytext import TextPeer


def kinds(entry: dict) -> list[tuple[str, str | None]]:
    return [(c["kind"], c["cell_id"]) for c in entry["changes"]]


async def test_every_kind_of_change_is_journaled(server_url, jp_auth_header, make_notebook, panel):
    path = make_notebook("j.ipynb", cells=["a = 1", "b = 2"])
    async with connect(server_url, jp_auth_header) as agent:
        a, b = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        (new,) = (await ok(agent, "insert_cells", path=path, cells=[{"source": "c = 3"}]))["cell_ids"]
        await ok(agent, "update_cell", path=path, cell_id=a, old_string="1", new_string="10")
        await ok(agent, "move_cell", path=path, cell_id=new, index=0)
        await ok(agent, "execute_cells", path=path, cell_ids=[a], timeout=60)
        await ok(agent, "delete_cells", path=path, cell_ids=[b])
        await ok(agent, "write_file", path="notes.txt", content="hello\n")
        await ok(agent, "edit_file", path="notes.txt", old_string="hello", new_string="hi")
        await ok(agent, "get_notebook", path=path)  # reads are not journaled

    entries = await panel.journal()
    assert [e["tool"] for e in entries] == [
        "edit_file", "write_file", "delete_cells", "execute_cells", "move_cell", "update_cell", "insert_cells",
    ]  # fmt: skip
    by_tool = {e["tool"]: e for e in entries}
    assert kinds(by_tool["insert_cells"]) == [("insert", new)]
    assert by_tool["insert_cells"]["changes"][0]["after"] == "c = 3"
    update = by_tool["update_cell"]["changes"]
    assert update == [{"cell_id": a, "kind": "update", "before": "a = 1", "after": "a = 10"}]
    assert kinds(by_tool["move_cell"]) == [("move", new)]
    assert kinds(by_tool["execute_cells"]) == [("outputs", a)]
    assert by_tool["execute_cells"]["note"] == "kernel state cannot be undone"
    assert kinds(by_tool["delete_cells"]) == [("delete", b)]
    assert by_tool["delete_cells"]["changes"][0]["before"] == "b = 2"
    assert by_tool["write_file"]["changes"][0] | {"kind": "file"} == {
        "cell_id": None, "kind": "file", "before": None, "after": "hello\n",
    }  # fmt: skip
    assert by_tool["edit_file"]["changes"][0]["before"] == "hello\n"
    assert by_tool["edit_file"]["changes"][0]["after"] == "hi\n"
    first = entries[-1]
    assert first["path"] == path and first["outcome"] == "ok" and first["revertible"]
    assert first["user"] and first["agent"] and first["duration_ms"] >= 0
    assert first["time"].endswith("Z") and first["cell_ids"] == [new]
    assert [e["id"] for e in entries] == sorted((e["id"] for e in entries), reverse=True)
    assert len(await panel.journal(limit=2)) == 2


async def test_a_failed_call_is_journaled_with_its_error(server_url, jp_auth_header, make_notebook, panel):
    path = make_notebook("f.ipynb", cells=["x = 1"])
    async with connect(server_url, jp_auth_header) as agent:
        result = await agent.call_tool("update_cell", {"path": path, "cell_id": "nope", "source": "y"})
        assert result.is_error
    (entry,) = await panel.journal()
    assert entry["outcome"] == "error" and "No cell with id 'nope'" in entry["error"]
    assert entry["changes"] == [] and not entry["revertible"]


async def test_revert_an_update_keeps_a_persons_later_typing_in_the_same_cell(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("u.ipynb", cells=["total = price * 2\nprint(total)"])
    async with person_and_agent(path) as (person, agent):
        (cell,) = (await ok(agent, "get_notebook", path=path))["cells"]
        await ok(
            agent, "update_cell", path=path, cell_id=cell["id"], old_string="* 2", new_string="* 3 + tax"
        )
        await person.wait_for(lambda nb: "tax" in person.sources()[0])
        person.insert_text(0, 0, "# person's note\n")  # typed after the agent's change
        person.insert_text(0, len(person.sources()[0]), "\nprint('done')")
        await person.flush()

        result = await panel.revert((await panel.entry("update_cell"))["id"])
        assert result["reverted"] and result["conflicts"] == []
        expected = "# person's note\ntotal = price * 2\nprint(total)\nprint('done')"
        await person.wait_for(lambda nb: person.sources() == [expected])
    entry = await panel.entry("update_cell")
    assert entry["reverted"] and not entry["revertible"]


async def test_revert_an_insert_keeps_a_persons_later_edit_elsewhere(make_notebook, panel, person_and_agent):
    path = make_notebook("i.ipynb", cells=["a = 1", "b = 2"])
    async with person_and_agent(path) as (person, agent):
        a, _ = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(
            agent, "insert_cells", path=path, after=a, cells=[{"source": "junk()"}, {"source": "more()"}]
        )
        await person.wait_for(lambda nb: len(person.sources()) == 4)
        person.insert_text(3, 5, "0")  # b = 20, after the insert
        await person.flush()

        await panel.revert((await panel.entry("insert_cells"))["id"])
        await person.wait_for(lambda nb: person.sources() == ["a = 1", "b = 20"])


async def test_revert_a_delete_puts_the_cell_back_where_it_was(make_notebook, panel, person_and_agent):
    path = make_notebook("d.ipynb", cells=["a = 1", "b = 2", "c = 3"])
    async with person_and_agent(path) as (person, agent):
        _, b, _ = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "execute_cells", path=path, cell_ids=[b], timeout=60)
        await ok(agent, "delete_cells", path=path, cell_ids=[b])
        await person.wait_for(lambda nb: person.sources() == ["a = 1", "c = 3"])
        person.insert_text(1, 5, "0")  # c = 30
        await person.flush()

        await panel.revert((await panel.entry("delete_cells"))["id"])
        await person.wait_for(lambda nb: person.sources() == ["a = 1", "b = 2", "c = 30"])
        restored = person.notebook.ycells[1]
        assert restored["id"] == b
        assert restored["execution_count"] is not None  # the deleted cell came back whole


async def test_revert_a_move_keeps_a_persons_later_edit(make_notebook, panel, person_and_agent):
    path = make_notebook("m.ipynb", cells=["a = 1", "b = 2", "c = 3"])
    async with person_and_agent(path) as (person, agent):
        a, _, _ = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "move_cell", path=path, cell_id=a, index=2)
        await person.wait_for(lambda nb: person.sources() == ["b = 2", "c = 3", "a = 1"])
        person.insert_text(2, 5, "00")  # a = 100, in the moved cell
        await person.flush()

        await panel.revert((await panel.entry("move_cell"))["id"])
        await person.wait_for(lambda nb: person.sources() == ["a = 100", "b = 2", "c = 3"])


async def test_revert_a_run_clears_its_outputs_and_says_the_kernel_keeps_its_state(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("r.ipynb", cells=["print('hi')", "x = 1"])
    async with person_and_agent(path) as (person, agent):
        run, _ = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "execute_cells", path=path, cell_ids=[run], timeout=60)
        await person.wait_for(lambda nb: len(person.notebook.ycells[0]["outputs"]) == 1)
        person.insert_text(1, 5, "0")
        await person.flush()

        result = await panel.revert((await panel.entry("execute_cells"))["id"])
        assert "kernel state cannot be undone" in result["note"]
        await person.wait_for(
            lambda nb: len(nb.ycells[0]["outputs"]) == 0 and nb.ycells[0]["execution_count"] is None
        )
        assert person.sources() == ["print('hi')", "x = 10"]


async def test_a_conflicting_revert_is_refused_and_changes_nothing(make_notebook, panel, person_and_agent):
    path = make_notebook("c.ipynb", cells=["limit = 1"])
    async with person_and_agent(path) as (person, agent):
        (cell,) = (await ok(agent, "get_notebook", path=path))["cells"]
        await ok(agent, "update_cell", path=path, cell_id=cell["id"], source="limit = 500")
        await person.wait_for(lambda nb: person.sources() == ["limit = 500"])
        person.insert_text(0, 9, "_")  # limit = 5_00: the person edited inside the agent's change
        await person.flush()

        entry = await panel.entry("update_cell")
        result = await panel.revert(entry["id"], status=409)
        assert result["reverted"] == []
        assert result["conflicts"] == [
            {
                "entry": entry["id"],
                "cell_id": cell["id"],
                "reason": "the text the agent wrote has been edited since",
            }
        ]
        await person.flush()
        await asyncio.sleep(0.2)
        assert person.sources() == ["limit = 5_00"]
    assert not (await panel.entry("update_cell"))["reverted"]


async def test_revert_all_of_an_agents_changes_since_a_point(make_notebook, panel, person_and_agent):
    path = make_notebook("s.ipynb", cells=["a = 1"])
    async with person_and_agent(path) as (person, agent):
        (a,) = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "update_cell", path=path, cell_id=a, source="a = 2")  # kept: before the point
        (new,) = (await ok(agent, "insert_cells", path=path, cells=[{"source": "b = 1"}]))["cell_ids"]
        await ok(agent, "update_cell", path=path, cell_id=new, source="b = 2")
        await ok(agent, "update_cell", path=path, cell_id=a, source="a = 3")
        await person.wait_for(lambda nb: person.sources() == ["a = 3", "b = 2"])
        entries = await panel.journal()
        since = (await panel.entry("insert_cells"))["id"]
        result = await panel.post("revert", {"agent": entries[0]["agent"], "since": since})
        assert sorted(result["reverted"]) == [e["id"] for e in entries[::-1] if e["id"] >= since]
        await person.wait_for(lambda nb: person.sources() == ["a = 2"])
    me = (await panel.http.get(panel.base.replace("api/mcp/", "api/me"))).json()["identity"]
    by = {e["id"]: e["reverted_by"] for e in await panel.journal()}
    assert by[since - 1] is None  # before the point: not reverted, by no one
    for entry_id in result["reverted"]:  # the person who reverted, as Jupyter knows them
        assert by[entry_id]["user"] == me["username"] and by[entry_id]["name"] == me["display_name"]


async def test_the_journal_says_who_reverted_an_entry_and_when(
    server_url, jp_auth_header, make_notebook, panel
):
    path = make_notebook("who.ipynb")
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "insert_cells", path=path, cells=[{"source": "x = 1"}])
    entry = await panel.entry("insert_cells")
    assert entry["reverted_by"] is None
    await panel.revert(entry["id"])
    me = (await panel.http.get(panel.base.replace("api/mcp/", "api/me"))).json()["identity"]
    entry = await panel.entry("insert_cells")
    assert entry["reverted"] and entry["reverted_by"]["user"] == me["username"]
    assert entry["reverted_by"]["name"] == me["display_name"] and entry["reverted_by"]["at"] >= entry["time"]


async def test_revert_a_file_write_keeps_a_later_edit(server_url, jp_auth_header, jp_root_dir, panel):
    (jp_root_dir / "conf.txt").write_text("alpha\nbeta\n")
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "edit_file", path="conf.txt", old_string="beta", new_string="gamma")
        (jp_root_dir / "conf.txt").write_text("# header\nalpha\ngamma\n")  # a later change by someone else
        await ok(agent, "write_file", path="new.txt", content="draft")
    await panel.revert((await panel.entry("edit_file"))["id"])
    assert (jp_root_dir / "conf.txt").read_text() == "# header\nalpha\nbeta\n"
    await panel.revert((await panel.entry("write_file"))["id"])
    assert not (jp_root_dir / "new.txt").exists()


async def test_revert_a_rename_and_a_delete_of_files(
    server_url, jp_auth_header, make_notebook, jp_root_dir, panel
):
    path = make_notebook("keep.ipynb", cells=["important = 42"])
    (jp_root_dir / "data.csv").write_text("a,b\n1,2\n")
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "rename_path", path="data.csv", new_path="old/data.csv")
        await ok(agent, "delete_path", path=path)
    assert not (jp_root_dir / path).exists()
    deleted = await panel.entry("delete_path")
    assert deleted["changes"][0]["kind"] == "file" and deleted["changes"][0]["after"] is None
    await panel.revert(deleted["id"])
    cells = json.loads((jp_root_dir / path).read_text())["cells"]
    assert ["".join(c["source"]) for c in cells] == ["important = 42"]
    await panel.revert((await panel.entry("rename_path"))["id"])
    assert (jp_root_dir / "data.csv").read_text() == "a,b\n1,2\n"
    assert not (jp_root_dir / "old" / "data.csv").exists()


async def test_a_notebook_rewritten_as_text_is_journaled_cell_by_cell_and_reverted(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("t.ipynb", cells=["a = 1", "b = 2", "c = 3"])
    async with person_and_agent(path) as (person, agent):
        a, b, c = (x["id"] for x in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(
            agent, "write_notebook_text", path=path, text=f'# %% id="{a}"\na = 1\n\n# %% id="{c}"\nc = 30\n'
        )
        await person.wait_for(lambda nb: person.sources() == ["a = 1", "c = 30"])
        entry = await panel.entry("write_notebook_text")
        assert sorted(kinds(entry)) == [("delete", b), ("update", c)]
        person.insert_text(0, 0, "# mine\n")
        await person.flush()
        await panel.revert(entry["id"])
        await person.wait_for(lambda nb: person.sources() == ["# mine\na = 1", "b = 2", "c = 3"])


async def test_a_run_that_outlives_its_call_is_journaled_and_only_its_cells(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("late.ipynb", cells=["import time\ntime.sleep(1.5)\nprint('late')", "y = 1"])
    async with person_and_agent(path) as (person, agent):
        slow, _ = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "execute_code", path=path, code="1")  # the kernel is up
        await person.wait_for(lambda nb: True)
        call = asyncio.create_task(
            agent.call_tool("execute_cells", {"path": path, "cell_ids": [slow], "timeout": 0.5})
        )
        await person.wait_for(lambda nb: nb.ycells[0].get("execution_state") == "running")
        person.insert_text(1, 5, "0")  # the person edits another cell while the agent's run goes on
        await person.flush()
        assert not (await call).is_error
        entry = await panel.entry("execute_cells")
        assert entry["changes"] == [{"cell_id": slow, "kind": "outputs", "before": None, "after": "running"}]
        await person.wait_for(lambda nb: len(nb.ycells[0]["outputs"]) == 1, timeout=20)

        await panel.revert(entry["id"])
        await person.wait_for(lambda nb: len(nb.ycells[0]["outputs"]) == 0)
        assert person.sources()[1] == "y = 10"


async def test_a_stateless_client_is_journaled_and_gated_too(
    server_url, jp_auth_header, make_notebook, panel
):
    path = make_notebook("sl.ipynb", cells=["x = 1"])
    async with connect(server_url, jp_auth_header, mode=STATELESS) as agent:
        (cell,) = (await ok(agent, "get_notebook", path=path))["cells"]
        await ok(agent, "update_cell", path=path, cell_id=cell["id"], source="x = 2")
        await panel.post("policy", {"mode": "off"})
        assert "paused by the user" in await fails(agent, "get_notebook", path=path)
    entry = await panel.entry("update_cell")
    assert entry["agent"] and entry["user"] and entry["outcome"] == "ok"
    assert entry["changes"][0]["after"] == "x = 2"


async def test_what_cannot_be_undone_is_marked_and_refused(server_url, jp_auth_header, make_notebook, panel):
    path = make_notebook("co.ipynb", cells=["print(1)"])
    async with connect(server_url, jp_auth_header) as agent:
        (cell,) = (await ok(agent, "get_notebook", path=path))["cells"]
        await ok(agent, "execute_cells", path=path, cell_ids=[cell["id"]], timeout=60)
        await ok(agent, "clear_outputs", path=path)
        entry = await panel.entry("clear_outputs")
        assert entry["changes"][0]["kind"] == "outputs" and not entry["revertible"]
        result = await panel.revert(entry["id"], status=409)
        assert "cannot be brought back" in result["conflicts"][0]["reason"]
        await ok(agent, "create_notebook", path="fresh.ipynb")
        assert not (await panel.entry("create_notebook"))["revertible"]


async def test_revert_counts_characters_not_bytes(make_notebook, panel, person_and_agent):
    path = make_notebook("uni.ipynb", cells=["s = 'café ☕'\nt = 1"])
    async with person_and_agent(path) as (person, agent):
        (cell,) = (await ok(agent, "get_notebook", path=path))["cells"]
        await ok(agent, "update_cell", path=path, cell_id=cell["id"], old_string="☕", new_string="🍵 thé")
        await person.wait_for(lambda nb: "thé" in person.sources()[0])
        person.insert_text(0, 0, "# ünïcode\n")
        person.insert_text(0, len(person.sources()[0]), "0")  # t = 10
        await person.flush()
        await panel.revert((await panel.entry("update_cell"))["id"])
        await person.wait_for(lambda nb: person.sources() == ["# ünïcode\ns = 'café ☕'\nt = 10"])


async def test_a_person_typing_in_an_inserted_cell_makes_its_revert_a_conflict(
    server_url, jp_auth_header, make_notebook, panel, person_and_agent
):
    path = make_notebook("ic.ipynb", cells=["a = 1"])
    async with person_and_agent(path) as (person, agent):
        await ok(agent, "insert_cells", path=path, cells=[{"source": "draft()"}])
        await person.wait_for(lambda nb: len(person.sources()) == 2)
        person.insert_text(1, 0, "keep_")  # the person builds on the agent's cell
        await person.flush()
        entry = await panel.entry("insert_cells")
        result = await panel.revert(entry["id"], status=409)
        assert "edited since" in result["conflicts"][0]["reason"]
        await asyncio.sleep(0.2)
        assert person.sources() == ["a = 1", "keep_draft()"]


class TestBoundedJournal:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        jp_server_config.MCPExtensionApp.journal_size = 3
        return jp_server_config

    async def test_the_oldest_entries_are_dropped_first(
        self, server_url, jp_auth_header, make_notebook, panel
    ):
        path = make_notebook("b.ipynb")
        async with connect(server_url, jp_auth_header) as agent:
            for n in range(5):
                await ok(agent, "insert_cells", path=path, cells=[{"source": f"cell_{n}"}])
        entries = await panel.journal()
        assert [e["changes"][0]["after"] for e in entries] == ["cell_4", "cell_3", "cell_2"]
        response = await panel.http.post(panel.base + "revert", json={"entry": 1})
        assert response.status_code == 404 and "Journal entry 1 is too old to revert" in response.text
        response = await panel.http.post(panel.base + "revert", json={"entry": 99})
        assert response.status_code == 404 and "No journal entry 99" in response.text


class TestJournalBoundedInBytes:
    """An entry holds whole cells (a rewrite of big cells holds them twice): the journal is bounded in
    bytes too, or an agent rewriting big cells fills the person's server's memory."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        jp_server_config.MCPExtensionApp.journal_bytes = 1_000_000
        return jp_server_config

    async def test_the_oldest_entries_go_once_the_bytes_are_spent_and_a_revert_says_why(
        self, server_url, jp_auth_header, make_notebook, panel
    ):
        path = make_notebook("big.ipynb")
        async with connect(server_url, jp_auth_header) as agent:
            for n in range(6):  # 300 KB each: three fit in 1 MB
                await ok(
                    agent, "insert_cells", path=path, cells=[{"source": f"c{n} = '" + "x" * 300_000 + "'"}]
                )
        entries = await panel.journal()
        assert [e["changes"][0]["after"][:2] for e in entries] == ["c5", "c4", "c3"]
        response = await panel.http.post(panel.base + "revert", json={"entry": entries[-1]["id"] - 1})
        assert response.status_code == 404 and "too old to revert" in response.text
        assert "journal_bytes" in response.text
        result = await panel.post("revert", {"agent": entries[0]["agent"], "since": 0})
        assert sorted(result["reverted"]) == sorted(e["id"] for e in entries)
        assert "too old to revert" in result["note"]

    async def test_an_entry_larger_than_the_journal_is_kept_for_review_but_not_for_revert(
        self, server_url, jp_auth_header, make_notebook, panel
    ):
        path = make_notebook("huge.ipynb")
        async with connect(server_url, jp_auth_header) as agent:
            await ok(agent, "insert_cells", path=path, cells=[{"source": "small = 1"}])
            await ok(agent, "insert_cells", path=path, cells=[{"source": "x" * 600_000}])
            cell_id = (await ok(agent, "get_notebook", path=path))["cells"][1]["id"]
            await ok(agent, "update_cell", path=path, cell_id=cell_id, source="y" * 600_000)
        rewrite, insert, small = await panel.journal()
        assert rewrite["changes"][0]["after"].startswith("yyyy") and not rewrite["revertible"]
        assert "more characters" in rewrite["changes"][0]["before"]  # cut as the API always shows it
        assert insert["revertible"] and small["revertible"]  # the entries before it stay
        result = await panel.revert(rewrite["id"], status=409)
        assert "too large to keep for a revert" in result["conflicts"][0]["reason"]


async def test_reverting_a_merged_write_keeps_what_the_person_typed_before_and_after_it(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("m.ipynb", cells=["a = 1\nb = 2"])
    async with person_and_agent(path) as (person, agent):
        (cell,) = (await ok(agent, "read_cells", path=path))["cells"]
        person.insert_text(0, 0, "# mine\n")  # typed after the agent's read, before its write
        await person.flush()
        result = await ok(agent, "update_cell", path=path, cell_id=cell["id"], source="a = 1\nb = 20")
        assert result["source"] == "# mine\na = 1\nb = 20" and result["merged"]

        entry = await panel.entry("update_cell")
        (change,) = entry["changes"]  # the agent's change alone: the person's line is on both sides
        assert (change["before"], change["after"]) == ("# mine\na = 1\nb = 2", "# mine\na = 1\nb = 20")

        await person.wait_for(lambda nb: person.sources()[0].endswith("b = 20"))
        person.insert_text(0, len(person.sources()[0]), "\nc = 3")  # typed after the write
        await person.flush()
        assert (await panel.revert(entry["id"]))["reverted"] == [entry["id"]]
        await person.wait_for(lambda nb: person.sources() == ["# mine\na = 1\nb = 2\nc = 3"])


async def test_revert_a_file_open_in_an_editor_tab_keeps_the_tabs_later_typing(
    server_url, jp_auth_header, jp_root_dir, panel
):
    (jp_root_dir / "tab.py").write_text("alpha = 1\nbeta = 2\n")
    async with (
        TextPeer(server_url, jp_auth_header, "tab.py") as tab,
        connect(server_url, jp_auth_header) as agent,
    ):
        await ok(agent, "edit_file", path="tab.py", old_string="beta = 2", new_string="beta = 20")
        await tab.wait_for_text("alpha = 1\nbeta = 20\n")
        tab.type_at(0, "# typed in the tab\n")
        tab.type_at(len(tab.text), "gamma = 3\n")
        await tab.flush()
        entry = await panel.entry("edit_file")
        assert (await panel.revert(entry["id"]))["reverted"] == [entry["id"]]
        await tab.wait_for_text("# typed in the tab\nalpha = 1\nbeta = 2\ngamma = 3\n")
