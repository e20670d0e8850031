"""Review state kept on the server: Keep per entry, per cell and per notebook, shared by everyone who
reads the journal; Undo and Keep that find a change already settled answer 409 and change nothing;
named checkpoints, and "undo all since" one that stops at the first conflict; an agent reading a cell a
person undid is told so in one line."""

from __future__ import annotations

import httpx

from ..auth.test_agent_tokens import mint
from ..support.mcp_client import connect, ok, text


async def _update(agent, path: str, cell_id: str, old: str, new: str) -> None:
    await ok(agent, "update_cell", path=path, cell_id=cell_id, old_string=old, new_string=new)


async def test_keep_and_undo_of_a_settled_change_are_refused_with_who_and_nothing_changes(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("k.ipynb", cells=["a = 1", "b = 2"])
    async with person_and_agent(path) as (person, agent):
        a, b = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await _update(agent, path, a, "1", "10")
        await _update(agent, path, b, "2", "20")
        await person.wait_for(lambda nb: person.sources() == ["a = 10", "b = 20"])
        first, second = sorted((await panel.journal()), key=lambda e: e["id"])
        assert first["review"] == {"state": "pending", "by": None, "cells": {}}

        assert (await panel.post("keep", {"entries": [first["id"]]}))["kept"] == [first["id"]]
        kept = next(e for e in await panel.journal() if e["id"] == first["id"])
        assert kept["review"]["state"] == "kept" and kept["review"]["by"]["user"]  # who, for every reader
        assert kept["review"]["by"]["at"].endswith("Z")

        again = await panel.post("keep", {"entries": [first["id"]]}, status=409)
        assert "already kept by" in again["message"] and "Nothing was changed" in again["message"]
        undo_kept = await panel.revert(first["id"], status=409)
        assert undo_kept["reverted"] == [] and "was kept by" in undo_kept["conflicts"][0]["reason"]

        assert (await panel.revert(second["id"]))["reverted"] == [second["id"]]
        await person.wait_for(lambda nb: person.sources() == ["a = 10", "b = 2"])
        twice = await panel.revert(second["id"], status=409)
        assert "already undone by" in twice["conflicts"][0]["reason"]
        keep_undone = await panel.post("keep", {"entries": [second["id"]]}, status=409)
        assert "already undone" in keep_undone["message"]
        assert person.sources() == ["a = 10", "b = 2"]  # nothing changed by the refusals
        entries = {e["id"]: e["review"]["state"] for e in await panel.journal()}
        assert entries == {first["id"]: "kept", second["id"]: "undone"}  # the refused Keep kept nothing


async def test_keep_per_cell_then_the_rest_and_an_undo_across_a_kept_cell_is_refused(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("c.ipynb", cells=["x = 0"])
    async with person_and_agent(path) as (person, agent):
        await ok(agent, "get_notebook", path=path)
        made = await ok(agent, "insert_cells", path=path, cells=[{"source": "p = 1"}, {"source": "q = 2"}])
        p, q = made["cell_ids"]
        await person.wait_for(lambda nb: len(person.sources()) == 3)
        entry = await panel.entry("insert_cells")

        await panel.post("keep", {"path": path, "cell_id": p})
        review = (await panel.entry("insert_cells"))["review"]
        assert review["state"] == "pending" and list(review["cells"]) == [p]
        again = await panel.post("keep", {"path": path, "cell_id": p}, status=409)
        assert f"No agent change waits for review in cell {p}" in again["message"]
        refused = await panel.revert(entry["id"], status=409)
        assert f"its change to cell {p} was kept" in refused["conflicts"][0]["reason"]
        assert len(person.sources()) == 3  # nothing undone

        await panel.post("keep", {"path": path, "cell_id": q})
        assert (await panel.entry("insert_cells"))["review"]["state"] == "kept"
        nothing = await panel.post("keep", {"path": path}, status=409)  # Keep all: nothing left
        assert "No agent change waits for review" in nothing["message"]


async def test_undo_in_one_cell_reverts_its_changes_newest_first_and_keeps_the_persons_typing(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("u1.ipynb", cells=["rate = 1", "keep = 1"])
    async with person_and_agent(path) as (person, agent):
        a, b = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await _update(agent, path, a, "1", "2")
        await _update(agent, path, a, "rate = 2", "rate = 2 * 3")
        await _update(agent, path, b, "1", "5")  # another cell: stays
        made = await ok(agent, "insert_cells", path=path, cells=[{"source": "p()"}, {"source": "q()"}])
        await person.wait_for(lambda nb: len(person.sources()) == 4)
        person.insert_text(0, 0, "# mine\n")
        await person.flush()

        result = await panel.post("revert", {"path": path, "cell_id": a})
        assert len(result["reverted"]) == 2 and result["conflicts"] == []
        await person.wait_for(lambda nb: person.sources()[:2] == ["# mine\nrate = 1", "keep = 5"])
        again = await panel.post("revert", {"path": path, "cell_id": a}, status=409)
        assert "No agent change waits for review in cell" in again["message"]
        wide = await panel.post("revert", {"path": path, "cell_id": made["cell_ids"][0]}, status=409)
        assert "changed other cells too" in wide["message"]
        assert len(person.sources()) == 4  # nothing changed
        await panel.post("revert", {"cell_id": a}, status=400)


async def test_keep_all_of_a_notebook_and_bad_bodies(make_notebook, panel, server_url, jp_auth_header):
    path = make_notebook("all.ipynb", cells=["a = 1", "b = 2"])
    async with connect(server_url, jp_auth_header) as agent:
        a, b = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await _update(agent, path, a, "1", "3")
        await _update(agent, path, b, "2", "4")
    assert len((await panel.post("keep", {"path": path}))["kept"]) == 2
    assert {e["review"]["state"] for e in await panel.journal(path=path)} == {"kept"}
    for body in [{}, {"entries": []}, {"entries": [True]}, {"entries": "1"}, {"path": ""}]:
        await panel.post("keep", body, status=400)
    await panel.post("keep", {"entries": [999]}, status=404)


async def test_undo_all_since_a_checkpoint_goes_newest_first_and_stops_at_the_first_conflict(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("cp.ipynb", cells=["x = 1", "y = 1"])
    async with person_and_agent(path) as (person, agent):
        x, y = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await _update(agent, path, x, "1", "2")  # before the checkpoint: stays
        made = await panel.post("checkpoints", {"name": "before the refactor"}, status=201)
        assert made["name"] == "before the refactor" and made["by"]["user"]
        await _update(agent, path, y, "1", "2")  # e2: left alone, behind the conflict
        await _update(agent, path, y, "y = 2", "y = 3")  # e3: the person edits its text -> conflict
        await _update(agent, path, x, "x = 2", "x = 2  # tidy")  # e4: undone
        await person.wait_for(lambda nb: person.sources()[1] == "y = 3")
        person.insert_text(1, 4, "3")  # y = 33: over what e3 wrote
        await person.flush()
        e2, e3, e4 = sorted(e["id"] for e in await panel.journal())[1:]

        result = await panel.post("checkpoints/undo", {"name": "before the refactor"})
        assert result["reverted"] == [e4] and result["left"] == [e2]
        assert [c["entry"] for c in result["conflicts"]] == [e3] and result["conflicts"][0]["cell_id"] == y
        await person.wait_for(lambda nb: person.sources() == ["x = 2", "y = 33"])

        dup = await panel.post("checkpoints", {"name": "before the refactor"}, status=409)
        assert "exists" in dup["message"]
        listed = (await panel.get("checkpoints"))["checkpoints"]
        assert [c["name"] for c in listed] == ["before the refactor"]
        await panel.post("checkpoints/undo", {"name": "nope"}, status=404)
        await panel.post("checkpoints", {"name": "x" * 201}, status=400)


async def test_an_agent_reading_a_cell_a_person_undid_is_told_which_change_and_by_whom(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("told.ipynb", cells=["rate = 0.1", "other = 1"])
    async with person_and_agent(path) as (person, agent):
        rate, other = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await _update(agent, path, rate, "0.1", "0.2")
        entry = await panel.entry("update_cell")
        await panel.revert(entry["id"])
        await person.wait_for(lambda nb: person.sources()[0] == "rate = 0.1")

        read = await agent.call_tool("read_cells", {"path": path, "cell_ids": [rate]})
        head = text(read).splitlines()[:2]  # beside the "[open by: ...]" line
        first = next(line for line in head if line.startswith("[undone by people"))
        assert f"your update_cell of {rate} (entry {entry['id']})" in first
        by = (await panel.entry("update_cell"))["reverted_by"]
        assert f"by {by['name']} at {by['at']}" in first
        assert read.structured_content["undone"][0]["entry"] == entry["id"]
        outline = text(await agent.call_tool("get_notebook", {"path": path}))
        assert "[undone by people" in outline
        elsewhere = text(await agent.call_tool("read_cells", {"path": path, "cell_ids": [other]}))
        assert "undone" not in elsewhere  # only where it matters


async def test_review_routes_refuse_agent_credentials(server_url, panel):
    _, bearer = await mint(panel)
    async with httpx.AsyncClient(headers=bearer) as http:
        for route, body in [
            ("keep", {"entries": [1]}),
            ("checkpoints", {"name": "x"}),
            ("checkpoints/undo", {"name": "x"}),
        ]:
            response = await http.post(f"{server_url}api/mcp/{route}", json=body)
            assert response.status_code == 403 and "only people" in response.text, route
        assert (await http.get(f"{server_url}api/mcp/checkpoints")).status_code == 403
    assert (await panel.get("checkpoints"))["checkpoints"] == []
