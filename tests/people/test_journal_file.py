"""The journal survives a restart: kept in a SQLite file in Jupyter's data folder (owner-only), bounded
like the journal in memory, loaded at start; a revert after a restart is still three-way. A file that is
corrupt, from a newer version or unwritable: the server starts, says so once, and works in memory."""

from __future__ import annotations

import asyncio
import sqlite3
import stat
import threading
import time
from contextlib import AbstractContextManager
from pathlib import Path

import nbformat
import pytest

from jupyter_mcp_ext.people.journal import Change, Journal
from jupyter_mcp_ext.people.journal_store import BATCH_SECONDS, JournalStore

from ..support.mcp_client import connect, ok
from ..support.panel import PanelAPI
from ..support.server_process import TOKEN, server_on
from ..support.yclient import YPeer

AUTH = {"Authorization": f"token {TOKEN}"}


def server(work: Path, *args: str) -> AbstractContextManager[str]:
    """A Jupyter server process on ``work`` (its root, data and state folders kept between starts)."""
    extensions = "{'jupyter_server_ydoc': True, 'jupyter_server_fileid': True, 'jupyter_mcp_ext': True}"
    return server_on(work, f"--ServerApp.jpserver_extensions={extensions}", *args)


def on_disk(work: Path, name: str) -> list[str]:
    try:
        nb = nbformat.read(work / "root" / name, as_version=4)
    except Exception:  # caught while the server writes it
        return []
    return [c.source for c in nb.cells]


async def until(probe, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)


# Three server starts, each bounded by server_process (90 s): on a loaded machine they outlast the
# suite's 120 s per test (one took 129 s beside a busy machine), so this test gets the sum of its bounds.
@pytest.mark.timeout(3 * 90 + 60)
async def test_a_revert_after_a_restart_is_three_way_and_review_state_and_checkpoints_survive(tmp_path):
    work = tmp_path
    (work / "root").mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("total = price * 2\nprint(total)")])
    nbformat.write(nb, work / "root" / "r.ipynb")

    with server(work) as url:
        async with YPeer(url, AUTH, "r.ipynb") as person, connect(url, AUTH) as agent:
            (cell,) = (await ok(agent, "get_notebook", path="r.ipynb"))["cells"]
            await ok(
                agent,
                "update_cell",
                path="r.ipynb",
                cell_id=cell["id"],
                old_string="* 2",
                new_string="* 3 + tax",
            )
            await person.wait_for(lambda _: "tax" in person.sources()[0])
            person.insert_text(0, 0, "# person's note\n")  # typed after the agent's change
            await person.flush()
            await until(lambda: on_disk(work, "r.ipynb")[:1] == [person.sources()[0]])
            async with PanelAPI(url, AUTH) as panel:
                await panel.post("checkpoints", {"name": "before the refactor"}, status=201)
                entry = await panel.entry("update_cell")
    (journal,) = (work / "data" / "jupyter_mcp_ext").glob("journal-*.sqlite")
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600

    with server(work) as url:
        async with PanelAPI(url, AUTH) as panel, YPeer(url, AUTH, "r.ipynb") as person:
            again = await panel.entry("update_cell")
            assert again["id"] == entry["id"] and again["changes"] == entry["changes"]
            assert again["review"]["state"] == "pending" and again["revertible"]
            person.insert_text(0, len(person.sources()[0]), "\nprint('done')")  # typed after the restart
            await person.flush()
            assert (await panel.revert(entry["id"]))["reverted"] == [entry["id"]]
            expected = "# person's note\ntotal = price * 2\nprint(total)\nprint('done')"
            await person.wait_for(lambda _: person.sources() == [expected])
            async with connect(url, AUTH) as agent:  # new ids follow the old ones
                await ok(agent, "update_cell", path="r.ipynb", cell_id=entry["cell_ids"][0], source="x = 1")
            assert (await panel.entry("update_cell"))["id"] > entry["id"]

    with server(work) as url:
        async with PanelAPI(url, AUTH) as panel:
            undone = next(e for e in await panel.journal() if e["id"] == entry["id"])
            assert undone["review"]["state"] == "undone" and undone["reverted_by"]["user"]
            assert [c["name"] for c in (await panel.get("checkpoints"))["checkpoints"]] == [
                "before the refactor"
            ]
            await panel.revert(entry["id"], status=409)  # still undone: said so, nothing changed


def test_the_file_keeps_the_journals_bounds_in_entries_and_age(tmp_path):
    path = tmp_path / "j.sqlite"
    store = JournalStore(path, max_age=3600)
    store.open()
    journal = Journal(limit=2, max_age=3600)
    journal.on_change(store.put)
    journal.on_drop(store.drop)
    for n in range(3):
        entry = journal.new(agent="a", client="c", user="u", tool="update_cell", path="n.ipynb")
        entry.changes = [Change("update", f"cell{n}", "a", "b", {"type": ["code", "code"]})]
        journal.add(entry)
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE entries SET time = time - 7200 WHERE id = 2")  # aged past max_age
    again = JournalStore(path, max_age=3600)
    loaded = again.open()
    again.close()
    assert [e.id for e in loaded.entries] == [3] and loaded.next_id == 4
    assert loaded.entries[0].changes[0].undo == {"type": ["code", "code"]}


class _CountingCondition(threading.Condition):
    """A real condition that counts its notifications."""

    notified = 0

    def notify(self, n: int = 1) -> None:
        self.notified += 1
        super().notify(n)


def test_a_steady_stream_of_entries_wakes_the_writer_once_per_batch(tmp_path):
    """Issue 21: each put woke the writer thread (a thread switch on the event loop per edit) while it
    was only gathering its batch; now it is woken when it waits for work, and writes them all."""
    path = tmp_path / "j.sqlite"
    store = JournalStore(path)
    store._wake = _CountingCondition()
    store.open()
    journal = Journal(limit=100)
    journal.on_change(store.put)
    for n in range(40):
        entry = journal.new(agent="a", client="c", user="u", tool="update_cell", path="n.ipynb")
        entry.changes = [Change("update", f"cell{n}", "a", "b", {"type": ["code", "code"]})]
        journal.add(entry)
        time.sleep(0.002)  # an agent's pace: all within one batch
    time.sleep(BATCH_SECONDS * 2)
    assert store._wake.notified <= 2
    store.close()
    again = JournalStore(path)
    assert len(again.open().entries) == 40
    again.close()


def test_the_entries_people_undid_are_found_without_a_scan_of_the_journal():
    """Issue 21: every read looked through the whole journal (up to journal_size entries) for the
    agent's undone changes; the journal now keeps those apart, through revert, restore and drop."""
    journal = Journal(limit=3)
    entries = []
    for n in range(3):
        entry = journal.new(agent="a", client="c", user="u", tool="update_cell", path="n.ipynb")
        entry.changes = [Change("update", f"cell{n}", "a", "b", {})]
        journal.add(entry)
        entries.append(entry)
    assert journal.undone() == []
    entries[1].reverted, entries[1].reverted_by = True, {"user": "p", "at": "now"}
    journal.changed(entries[1])
    assert journal.undone() == [entries[1]]
    again = Journal(limit=3)
    again.restore(journal.entries(), journal.next_id)
    assert [e.id for e in again.undone()] == [entries[1].id]
    for _ in range(2):  # the undone entry ages out of the bounds
        journal.add(journal.new(agent="a", client="c", user="u", tool="update_cell", path="n.ipynb"))
    assert journal.undone() == []


@pytest.fixture
def bad(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def journal_path(tmp_path: Path, bad: str) -> Path:
    """A journal file the server cannot use, made before it starts."""
    if bad == "unwritable":  # its folder is a file: as unwritable as it gets, for root too
        (tmp_path / "blocker").write_text("")
        return tmp_path / "blocker" / "journal.sqlite"
    path = tmp_path / "journal.sqlite"
    if bad == "corrupt":
        path.write_bytes(b"this is not a database\x00" * 400)
    else:
        with sqlite3.connect(path) as db:
            db.execute("PRAGMA user_version = 99")
            db.execute("CREATE TABLE future (x)")
    return path


@pytest.fixture
def jp_server_config(jp_server_config, journal_path: Path):
    jp_server_config.MCPExtensionApp.journal_file = str(journal_path)
    return jp_server_config


@pytest.mark.parametrize("bad", ["corrupt", "newer", "unwritable"], indirect=True)
async def test_a_journal_file_it_cannot_use_is_said_once_and_the_journal_works_in_memory(
    bad, journal_path, caplog, make_notebook, panel, server_url, jp_auth_header
):
    before = journal_path.read_bytes() if journal_path.exists() else None
    path = make_notebook("m.ipynb", cells=["a = 1"])
    async with connect(server_url, jp_auth_header) as agent:
        (cell,) = (await ok(agent, "get_notebook", path=path))["cells"]
        await ok(agent, "update_cell", path=path, cell_id=cell["id"], old_string="1", new_string="2")
    entry = await panel.entry("update_cell")
    assert (await panel.revert(entry["id"]))["reverted"] == [entry["id"]]
    records = caplog.get_records("setup") + caplog.records  # the server starts in the setup
    said = [r.getMessage() for r in records if "MCP journal file" in r.getMessage()]
    assert len(said) == 1 and "kept in memory only" in said[0], said
    assert {"corrupt": "cannot be read", "newer": "newer", "unwritable": "cannot be opened"}[bad] in said[0]
    if before is not None:
        assert journal_path.read_bytes() == before  # left as it was, for a person to look at
