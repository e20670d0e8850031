"""Cells an agent deleted (issue 20, item 4), on the server: the journal says where each was (the ids of
the cells around it, its index) so a placeholder can stand there; Restore (the entry's revert) puts the
cells back at that place relative to their neighbours, in order, whatever people added since, and by
index when the neighbours are gone too; the journal's event carries all a placeholder needs."""

from __future__ import annotations

import asyncio
import json

import httpx
from httpx_ws import aconnect_ws

from jupyter_mcp_ext.people.journal import Change, Entry
from jupyter_mcp_ext.people.journal_store import from_record, record

from ..support.mcp_client import ok

SCHEMA_ID = "https://jupyter-mcp-ext.readthedocs.io/events/activity"


def _add(person, index: int, source: str) -> None:
    """The person adds a cell at ``index``, as JupyterLab does."""
    nb = person.notebook
    nb.ycells.insert(index, nb.create_ycell({"cell_type": "code", "source": source, "metadata": {}}))


async def test_cells_deleted_together_come_back_together_after_their_neighbour_whatever_was_added_since(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("d.ipynb", cells=["a", "b", "c"])
    async with person_and_agent(path) as (person, agent):
        a, b, c = (cell["id"] for cell in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "delete_cells", path=path, cell_ids=[b, c])
        await person.wait_for(lambda nb: person.sources() == ["a"])
        entry = await panel.entry("delete_cells")
        where = {ch["cell_id"]: ch["where"] for ch in entry["changes"]}
        assert where == {
            b: {"after": a, "before": c, "index": 1, "type": "code"},
            c: {"after": b, "before": None, "index": 2, "type": "code"},
        }
        assert [ch["before"] for ch in entry["changes"]] == ["b", "c"]  # what each held

        # People go on: two cells on top, two at the end (old indices now point elsewhere).
        for i, source in enumerate(["t1", "t2"]):
            _add(person, i, source)
        for i, source in enumerate(["y", "z"]):
            _add(person, 3 + i, source)
        await person.flush()
        assert (await panel.revert(entry["id"]))["reverted"] == [entry["id"]]
        await person.wait_for(lambda nb: len(person.sources()) == 7)
        assert person.sources() == ["t1", "t2", "a", "b", "c", "y", "z"]
        ids = [str(ycell["id"]) for ycell in person.notebook.ycells]
        assert ids[2:5] == [a, b, c]  # the same cells, ids kept


async def test_a_restore_whose_neighbours_were_deleted_since_falls_back_to_the_index(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("n.ipynb", cells=["a", "b", "c", "d"])
    async with person_and_agent(path) as (person, agent):
        a, b, _, _ = (cell["id"] for cell in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "delete_cells", path=path, cell_ids=[b])
        first = await panel.entry("delete_cells")
        await ok(agent, "delete_cells", path=path, cell_ids=[a])  # its neighbour before, by the agent
        await person.wait_for(lambda nb: person.sources() == ["c", "d"])
        del person.notebook.ycells[0]  # and its neighbour after, by the person
        await person.flush()

        assert (await panel.revert(first["id"]))["reverted"] == [first["id"]]
        await person.wait_for(lambda nb: person.sources() == ["d", "b"])  # index 1, as it was
        again = await panel.revert(first["id"], status=409)
        assert "already undone" in again["conflicts"][0]["reason"]


async def test_a_journal_event_carries_the_entry_a_mark_needs_and_its_place_without_any_text(
    make_notebook, panel, person_and_agent, server_url, jp_auth_header
):
    path = make_notebook("ev.ipynb", cells=["secret = 1", "b = 2"])
    ws_url = server_url.replace("http://", "ws://") + "api/events/subscribe"
    async with (
        httpx.AsyncClient(headers=jp_auth_header) as http,
        aconnect_ws(ws_url, http) as ws,
        person_and_agent(path) as (_, agent),
    ):

        async def next_journal() -> dict:
            async with asyncio.timeout(20):
                while True:
                    event = json.loads(await ws.receive_text())
                    if event["schema_id"] == SCHEMA_ID and event["kind"] == "journal":
                        return event

        first, second = (cell["id"] for cell in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "delete_cells", path=path, cell_ids=[first])
        event = await next_journal()
        entry = event["entry"]
        assert event["id"] == str(entry["id"]) and isinstance(event["seq"], int)
        assert entry["path"] == path and entry["tool"] == "delete_cells" and entry["time"].endswith("Z")
        assert entry["review"] == {"state": "pending", "cells": []}
        where = {"after": None, "before": second, "index": 0, "type": "code"}
        assert entry["changes"] == [{"cell_id": first, "kind": "delete", "where": where}]
        assert "secret" not in json.dumps(event)  # no cell's text on the bus

        await panel.post("keep", {"path": path, "cell_id": first})
        kept = await next_journal()
        assert kept["entry"]["review"] == {"state": "kept", "cells": [first]}
        assert kept["seq"] > event["seq"]


def test_a_deleted_cells_place_is_kept_in_the_journal_file_so_a_restart_keeps_its_placeholder():
    cell = {"id": "b", "cell_type": "markdown", "source": "# b", "metadata": {}}
    undo = {"index": 1, "cell": cell, "neighbours": ["a", "c"]}
    entry = Entry(7, 1.0, "s1", "Claude Code", "me", "delete_cells", "d.ipynb")
    entry.changes = [Change("delete", "b", "# b", None, undo)]
    back = from_record(record(entry))
    assert back.changes[0].to_json()["where"] == {"after": "a", "before": "c", "index": 1, "type": "markdown"}
    assert back.summary() == entry.summary()
