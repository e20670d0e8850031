"""A person's typing is never erased by an agent's whole-text write: the write is rebased onto what
the person changed since the agent read, or refused with nothing written.

The person is a second Yjs client in the room, as a JupyterLab tab is; the agent is the SDK's client.
After each story: every keystroke of the person is there, the agent's change is there or its call
failed and changed nothing, and the file Jupyter saves matches the live document.
"""

from __future__ import annotations

import asyncio
import random
import re
from pathlib import Path

import anyio
import pytest

from ..support.keystrokes import type_until
from ..support.mcp_client import STATELESS, call, connect, fails, ok, text
from ..support.yclient import YPeer, browser_user
from ..support.ytext import TextPeer
from .test_live_editing import source_of, wait_on_disk

ADA = browser_user("Ada Lovelace")
CELL = "a = 1\nb = 2\nc = 3"


async def saved_as_live(root: Path, path: str, person: YPeer) -> None:
    """Jupyter saves what the room holds: the file ends up with the person's view of every cell."""
    await person.flush()
    live = person.sources()
    await wait_on_disk(root, path, lambda cells: [source_of(c) for c in cells] == live, timeout=15)


@pytest.mark.parametrize(
    ("story", "typed_at", "typed", "agent_source", "expected"),
    [
        # the person adds a line at the end; the agent changes another line
        ("another line", len(CELL), "\nd = 4", "a = 10\nb = 2\nc = 3", "a = 10\nb = 2\nc = 3\nd = 4"),
        # the person comments line 2 at its end; the agent renames at its start
        ("same line", CELL.index("\nc"), "  # ok", "a = 1\nbeta = 2\nc = 3", "a = 1\nbeta = 2  # ok\nc = 3"),
        # the person changes the last line's number; the agent appends a line after it
        ("line after", len(CELL), "0", "a = 1\nb = 2\nc = 3\nd = 4", "a = 1\nb = 2\nc = 30\nd = 4"),
    ],
)
async def test_update_cell_keeps_what_the_person_typed_since_the_read(
    make_notebook, jp_root_dir, story, typed_at, typed, agent_source, expected, person_and_agent
):
    path = make_notebook("story1.ipynb", cells=[CELL, "other = 0"])
    async with person_and_agent(path, user=ADA) as (person, agent):
        (cell, _) = (await ok(agent, "read_cells", path=path))["cells"]
        assert len(cell["rev"]) == 8
        person.insert_text(0, typed_at, typed)
        await person.flush()

        result = await ok(agent, "update_cell", path=path, cell_id=cell["id"], source=agent_source)
        assert result["source"] == expected and result["merged"], story
        await person.wait_for(lambda nb: person.sources()[0] == expected)
        await saved_as_live(jp_root_dir, path, person)


async def test_update_cell_at_the_place_the_person_changed_fails_and_writes_nothing(
    make_notebook, jp_root_dir, person_and_agent
):
    path = make_notebook("clash.ipynb", cells=[CELL])
    async with person_and_agent(path, user=ADA) as (person, agent):
        (cell,) = (await ok(agent, "read_cells", path=path))["cells"]
        person.insert_text(0, CELL.index("\nc"), "0")  # b = 20
        await person.flush()

        message = await fails(
            agent, "update_cell", path=path, cell_id=cell["id"], source="a = 1\nb = 3\nc = 3"
        )
        assert "Nothing was written" in message and "b = 20" in message and "line 2" in message
        assert "Ada Lovelace" in message and "read_cells" in message
        await asyncio.sleep(0.3)
        assert person.sources() == ["a = 1\nb = 20\nc = 3"]

        # Read again, redo: it lands.
        again = (await ok(agent, "read_cells", path=path))["cells"][0]
        await ok(
            agent, "update_cell", path=path, cell_id=cell["id"], source=again["source"].replace("20", "3")
        )
        await person.wait_for(lambda nb: person.sources() == ["a = 1\nb = 3\nc = 3"])
        await saved_as_live(jp_root_dir, path, person)


async def test_emoji_and_combining_marks_at_the_merge_points(make_notebook, jp_root_dir, person_and_agent):
    source = "icon = '😀'\nname = 'cafe\u0301'"
    path = make_notebook("unicode.ipynb", cells=[source])
    async with person_and_agent(path, user=ADA) as (person, agent):
        (cell,) = (await ok(agent, "read_cells", path=path))["cells"]
        person.insert_text(
            0, source.index("😀") + 1, "👍🏽"
        )  # a surrogate pair in the browser, and a modifier
        person.insert_text(0, len(person.sources()[0]) - 1, "\u0300")  # a second combining mark on the e
        await person.flush()
        renamed = source.replace("icon", "symbol").replace("name", "label")
        await ok(agent, "update_cell", path=path, cell_id=cell["id"], source=renamed)
        expected = "symbol = '😀👍🏽'\nlabel = 'cafe\u0301\u0300'"
        await person.wait_for(lambda nb: person.sources() == [expected])
        await saved_as_live(jp_root_dir, path, person)


async def test_a_revision_names_the_text_the_change_was_made_from(make_notebook, person_and_agent):
    path = make_notebook("rev.ipynb", cells=[CELL])
    async with person_and_agent(path, user=ADA) as (person, agent):
        (first,) = (await ok(agent, "read_cells", path=path))["cells"]
        person.insert_text(0, len(CELL), "\nd = 4")
        await person.flush()
        (second,) = (await ok(agent, "read_cells", path=path))["cells"]  # now the last read has d = 4
        assert second["rev"] != first["rev"]
        # A text made from the first read, said so: d = 4 is not taken for something the agent removed.
        await ok(
            agent,
            "update_cell",
            path=path,
            cell_id=first["id"],
            source="a = 9\nb = 2\nc = 3",
            rev=first["rev"],
        )
        await person.wait_for(lambda nb: person.sources() == ["a = 9\nb = 2\nc = 3\nd = 4"])

        message = await fails(
            agent, "update_cell", path=path, cell_id=first["id"], source="x", rev="0badc0de"
        )
        assert "not one this server knows" in message and "read_cells" in message
        assert person.sources() == ["a = 9\nb = 2\nc = 3\nd = 4"]


async def test_another_cell_and_cells_the_agent_never_read(make_notebook, person_and_agent):
    path = make_notebook("cells.ipynb", cells=["x = 1", "y = 2"])
    async with person_and_agent(path, user=ADA) as (person, agent):
        _, second = (await ok(agent, "get_notebook", path=path))["cells"]
        person.insert_text(0, 5, "1")
        await person.flush()
        # The agent never read cell 2's source: its text replaces it, in the fewest splices.
        result = await ok(agent, "update_cell", path=path, cell_id=second["id"], source="y = 3")
        assert result["merged"] == []
        await person.wait_for(lambda nb: person.sources() == ["x = 11", "y = 3"])


async def test_each_session_writes_from_its_own_read_and_stateless_calls_from_the_users(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("sessions.ipynb", cells=[CELL])
    async with (
        YPeer(server_url, jp_auth_header, path, user=ADA) as person,
        connect(server_url, jp_auth_header) as early,
        connect(server_url, jp_auth_header) as late,
        connect(server_url, jp_auth_header, mode=STATELESS) as stateless,
    ):
        (cell,) = (await ok(early, "read_cells", path=path))["cells"]
        person.insert_text(0, len(CELL), "\nd = 4")
        await person.flush()
        await ok(late, "read_cells", path=path)  # another session saw d = 4: not the early one's base
        await ok(early, "update_cell", path=path, cell_id=cell["id"], source=CELL.replace("a = 1", "a = 2"))
        await person.wait_for(lambda nb: person.sources() == ["a = 2\nb = 2\nc = 3\nd = 4"])

        (cell,) = (await ok(stateless, "read_cells", path=path))["cells"]
        person.insert_text(0, 0, "# top\n")
        await person.flush()
        await ok(stateless, "update_cell", path=path, cell_id=cell["id"], source=cell["source"] + "\ne = 5")
        await person.wait_for(lambda nb: person.sources() == ["# top\na = 2\nb = 2\nc = 3\nd = 4\ne = 5"])


# -- a notebook written back as a percent script ----------------------------------------------


async def test_write_notebook_text_leaves_a_cell_the_agent_did_not_change_as_the_person_has_it(
    make_notebook, jp_root_dir, person_and_agent
):
    path = make_notebook("story2.ipynb", cells=["import math", "r = 2\narea = math.pi * r"])
    async with person_and_agent(path, user=ADA) as (person, agent):
        script = (await ok(agent, "get_notebook", path=path, format="py:percent"))["text"]
        person.insert_text(0, len("import math"), "\nimport numpy as np")
        person.insert_text(1, len("r = 2\narea = math.pi * r"), " ** 2")
        await person.flush()

        # The agent changes only the first line of cell 2, and sends the whole script back.
        result = await ok(agent, "write_notebook_text", path=path, text=script.replace("r = 2", "r = 3"))
        assert [m.split(":")[0] for m in result["merged"]] == [result["cell_ids"][1]]
        expected = ["import math\nimport numpy as np", "r = 3\narea = math.pi * r ** 2"]
        await person.wait_for(lambda nb: person.sources() == expected)
        await saved_as_live(jp_root_dir, path, person)


async def test_write_notebook_text_with_a_clash_writes_nothing_at_all(make_notebook, person_and_agent):
    path = make_notebook("story2b.ipynb", cells=["x = 1", "y = 2"])
    async with person_and_agent(path, user=ADA) as (person, agent):
        script = (await ok(agent, "get_notebook", path=path, format="py:percent"))["text"]
        person.insert_text(0, 5, "0")  # x = 10
        await person.flush()
        clash = script.replace("x = 1", "x = 5").replace("y = 2", "y = 6")
        message = await fails(agent, "write_notebook_text", path=path, text=clash)
        assert "Nothing was written" in message and "x = 10" in message and "Ada Lovelace" in message
        await asyncio.sleep(0.3)
        assert person.sources() == ["x = 10", "y = 2"]  # the change to y did not land either


async def test_cells_deleted_or_added_by_the_person_since_the_read(
    make_notebook, jp_root_dir, person_and_agent
):
    path = make_notebook("cells2.ipynb", cells=["keep = 1", "gone = 2", "edited = 3"])
    async with person_and_agent(path, user=ADA) as (person, agent):
        script = (await ok(agent, "get_notebook", path=path, format="py:percent"))["text"]
        person_ids_before = [str(c["id"]) for c in person.notebook.ycells]
        with person.ydoc.transaction():
            del person.notebook.ycells[1]  # the person deletes "gone"
            person.notebook.append_cell({"cell_type": "code", "source": "mine = 4", "metadata": {}})
        await person.flush()

        # Changing the deleted cell is a conflict, not a resurrection.
        message = await fails(
            agent, "write_notebook_text", path=path, text=script.replace("gone = 2", "gone = 22")
        )
        assert "was deleted" in message and "Nothing was written" in message
        assert person.sources() == ["keep = 1", "edited = 3", "mine = 4"]

        # Left as it was read, it stays deleted; the person's new cell stays too.
        gone_id = person_ids_before[1]
        result = await call(
            agent, "write_notebook_text", path=path, text=script.replace("edited = 3", "edited = 33")
        )
        assert not result.is_error, text(result)
        assert f"not restored, deleted since your read: {gone_id}" in text(result)
        assert "kept cells added since your read" in text(result)
        await person.wait_for(lambda nb: person.sources() == ["keep = 1", "edited = 33", "mine = 4"])
        await saved_as_live(jp_root_dir, path, person)


async def test_a_cell_a_person_is_typing_in_is_not_deleted_without_force(make_notebook, person_and_agent):
    path = make_notebook("busy.ipynb", cells=["first = 1", "second = 2"])
    async with person_and_agent(path, user=ADA) as (person, agent):
        first, second = (await ok(agent, "get_notebook", path=path))["cells"]
        person.insert_text(1, 10, "0")
        await person.flush()

        message = await fails(agent, "delete_cells", path=path, cell_ids=[first["id"], second["id"]])
        assert f"cell {second['id']}" in message and "Ada Lovelace" in message and "force=true" in message
        assert len(person.notebook.ycells) == 2  # all or nothing: the first one is still there too

        script = f'# %% id="{first["id"]}"\nfirst = 1\n'
        message = await fails(agent, "write_notebook_text", path=path, text=script)
        assert "force=true" in message and second["id"] in message

        await ok(agent, "delete_cells", path=path, cell_ids=[second["id"]], force=True)
        await person.wait_for(lambda nb: person.sources() == ["first = 1"])


# -- text files ------------------------------------------------------------------------------


async def test_write_file_keeps_a_line_typed_in_the_editor_tab(server_url, jp_auth_header, jp_root_dir):
    (jp_root_dir / "notes.py").write_text("x = 1\ny = 2\n")
    async with (
        TextPeer(server_url, jp_auth_header, "notes.py", user=ADA) as tab,
        connect(server_url, jp_auth_header) as agent,
    ):
        read = await ok(agent, "read_file", path="notes.py")
        tab.type_at(len(tab.text), "z = 3  # typed in the tab\n")
        await tab.flush()
        written = await ok(agent, "write_file", path="notes.py", content="x = 10\ny = 2\n")
        assert written["merged"] == ["line 3"]
        expected = "x = 10\ny = 2\nz = 3  # typed in the tab\n"
        await tab.wait_for_text(expected)

        tab.type_at(len("x = 10"), "0")  # "x = 100", where the agent changes 10 to 11 next
        await tab.flush()
        # Its first read's revision, which its own write replaced: the base is what it wrote.
        message = await fails(
            agent, "write_file", path="notes.py", content="x = 11\ny = 2\n", rev=read["rev"]
        )
        assert "Nothing was written" in message and "x = 100" in message and "Ada Lovelace" in message
        assert tab.text == expected.replace("10", "100")
    with anyio.fail_after(15):
        while (jp_root_dir / "notes.py").read_text() != expected.replace("10", "100"):
            await anyio.sleep(0.1)


async def test_write_file_on_a_file_open_nowhere_keeps_a_change_made_on_disk(
    server_url, jp_auth_header, jp_root_dir
):
    target = jp_root_dir / "script.py"
    target.write_text("def f():\n    return 1\n")
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "read_file", path="script.py")
        target.write_text("def f():\n    return 1\n\n\ndef g():  # added in a terminal\n    return 2\n")
        result = await ok(agent, "write_file", path="script.py", content="def f():\n    return 42\n")
        assert result["merged"]
        assert (
            target.read_text()
            == "def f():\n    return 42\n\n\ndef g():  # added in a terminal\n    return 2\n"
        )
        target.write_text("def f():\n    return 43\n")  # changed where the agent changes it again
        message = await fails(agent, "write_file", path="script.py", content="def f():\n    return 0\n")
        assert "return 43" in message
        assert target.read_text() == "def f():\n    return 43\n"


# -- typing at 20 keystrokes a second through a burst of whole-text writes ----------------------


async def test_every_keystroke_survives_a_burst_of_whole_cell_writes(
    make_notebook, jp_root_dir, person_and_agent
):
    path = make_notebook("burst.ipynb", cells=["# notes\ncount = 0\ntotal = 0"])
    typed = "  # the person keeps typing here, 😀 and é\u0301 included"
    async with person_and_agent(path, user=ADA) as (person, agent):
        (cell,) = (await ok(agent, "read_cells", path=path))["cells"]
        end_of_line_1 = len("# notes")
        written: list[int] = []
        failed = n = landed = 0
        typing = asyncio.create_task(  # until 5 of the agent's writes landed while the person typed
            type_until(lambda i, ch: person.insert_text(0, end_of_line_1 + i, ch), typed, lambda: landed >= 5)
        )
        mine = cell["source"]
        while not typing.done():
            n += 1
            if n % 2:  # every other write re-reads first; the others build on the agent's own text
                mine = (await ok(agent, "read_cells", path=path, cell_ids=[cell["id"]]))["cells"][0]["source"]
            lines = mine.split("\n")
            lines[1], lines[2] = f"count = {n}", f"total = {n * 10}"
            mine = "\n".join(lines)
            result = await agent.call_tool(
                "update_cell", {"path": path, "cell_id": cell["id"], "source": mine}
            )
            if result.is_error:
                failed += 1
            else:
                written.append(n)
                landed += not typing.done()
        typed = await typing
        await person.flush()
        last = written[-1]
        expected = f"# notes{typed}\ncount = {last}\ntotal = {last * 10}"
        await person.wait_for(lambda nb: person.sources() == [expected])
        assert landed >= 5 and failed == 0, (written, failed)
        await saved_as_live(jp_root_dir, path, person)


async def test_every_keystroke_survives_a_burst_of_script_and_file_writes(
    server_url, jp_auth_header, make_notebook, jp_root_dir
):
    path = make_notebook("burst2.ipynb", cells=["title = 'x'", "n = 0"])
    (jp_root_dir / "log.txt").write_text("head\nn = 0\n")
    typed = " typed at twenty keys a second"
    async with (
        YPeer(server_url, jp_auth_header, path, user=ADA) as person,
        TextPeer(server_url, jp_auth_header, "log.txt", user=ADA) as tab,
        connect(server_url, jp_auth_header) as agent,
    ):
        script = (await ok(agent, "get_notebook", path=path, format="py:percent"))["text"]
        await ok(agent, "read_file", path="log.txt")
        at_cell, at_file = len("title = 'x'"), len("head")

        def keystroke(i: int, ch: str) -> None:
            person.insert_text(0, at_cell + i, ch)
            tab.type_at(at_file + i, ch)

        n = landed = 0
        typing = asyncio.create_task(type_until(keystroke, typed, lambda: landed >= 5))
        while not typing.done():
            n += 1
            await ok(agent, "write_notebook_text", path=path, text=script.replace("n = 0", f"n = {n}"))
            await ok(agent, "write_file", path="log.txt", content=f"head\nn = {n}\n")
            landed += not typing.done()
        typed = await typing
        await person.wait_for(lambda nb: person.sources() == [f"title = 'x'{typed}", f"n = {n}"])
        await tab.wait_for_text(f"head{typed}\nn = {n}\n")
        assert landed >= 5
        await saved_as_live(jp_root_dir, path, person)
    with anyio.fail_after(15):
        while (jp_root_dir / "log.txt").read_text() != f"head{typed}\nn = {n}\n":
            await anyio.sleep(0.1)


class Surface:
    """One whole-text writer under test: what the person edits, what the agent reads and writes."""

    def __init__(self, kind: str, agent, path: str, person) -> None:
        self.kind, self.agent, self.path, self.person = kind, agent, path, person
        self.cell_id = ""

    def texts(self) -> list[str]:
        return [self.person.text] if self.kind == "file" else self.person.sources()

    def type_at_random(self, rng: random.Random, letter: str) -> None:
        if self.kind == "file":
            self.person.type_at(rng.randint(0, len(self.person.text)), letter)
            return
        cell = rng.randrange(len(self.person.sources()))
        self.person.insert_text(cell, rng.randint(0, len(self.person.sources()[cell])), letter)

    async def read(self) -> str:
        if self.kind == "cell":
            (cell,) = (await ok(self.agent, "read_cells", path=self.path, cell_ids=[self.cell_id]))["cells"]
            return cell["source"]
        if self.kind == "script":
            return (await ok(self.agent, "get_notebook", path=self.path, format="py:percent"))["text"]
        numbered = (await ok(self.agent, "read_file", path=self.path))["content"]
        return "".join(line.split("\t", 1)[1] + "\n" for line in numbered.split("\n"))

    async def write(self, text: str):
        if self.kind == "cell":
            return await call(self.agent, "update_cell", path=self.path, cell_id=self.cell_id, source=text)
        if self.kind == "script":
            return await call(self.agent, "write_notebook_text", path=self.path, text=text)
        return await call(self.agent, "write_file", path=self.path, content=text)


@pytest.mark.parametrize("kind", ["cell", "script", "file"])
async def test_no_sequence_of_reads_typing_and_whole_writes_loses_a_keystroke(
    server_url, jp_auth_header, make_notebook, jp_root_dir, kind
):
    """Random rounds: the person types capitals anywhere (mid-line too), the agent sometimes reads
    and rewrites lowercase words of the text it knows. Each typed capital must survive; each agent
    write lands whole or fails whole."""
    rng = random.Random(2026)
    start = "alpha beta gamma\ndelta epsilon\nzeta eta theta\niota kappa"
    if kind == "file":
        path = "random.txt"
        (jp_root_dir / path).write_text(start + "\n")
        peer = TextPeer(server_url, jp_auth_header, path, user=ADA)
    else:
        cells = [start] if kind == "cell" else [start, "lambda mu nu\nxi omicron"]
        path = make_notebook("random.ipynb", cells=cells)
        peer = YPeer(server_url, jp_auth_header, path, user=ADA)
    typed: list[str] = []
    async with peer as person, connect(server_url, jp_auth_header) as agent:
        surface = Surface(kind, agent, path, person)
        if kind == "cell":
            surface.cell_id = str(person.notebook.ycells[0]["id"])
        known = await surface.read()
        landed = refused = 0
        for step in range(40):
            for _ in range(rng.randint(0, 3)):
                letter = chr(ord("A") + len(typed) % 26)
                surface.type_at_random(rng, letter)
                typed.append(letter)
            await person.flush()
            if rng.random() < 0.3:
                known = await surface.read()
            words = [m for m in re.finditer(r"[a-z]+", known) if not _on_marker(known, m.start())]
            word = rng.choice(words)
            new_word = rng.choice(["x", "yy", "zeta", word.group()[::-1]] + ([""] if len(words) > 8 else []))
            mine = known[: word.start()] + new_word + known[word.end() :]
            before = surface.texts()
            result = await surface.write(mine)
            await person.flush()
            after = surface.texts()
            if result.is_error:
                refused += 1
                assert "Nothing was written" in text(result) and after == before, (step, text(result))
            else:
                landed += 1
                known = mine
            capitals = sorted(ch for t in after for ch in t if ch.isupper())
            assert capitals == sorted(ch for t in before for ch in t if ch.isupper()), step
        assert capitals == sorted(typed) and landed >= 20, (landed, refused)
        if kind != "file":
            await saved_as_live(jp_root_dir, path, person)
    if kind == "file":
        with anyio.fail_after(15):
            while (jp_root_dir / path).read_text() != after[0]:
                await anyio.sleep(0.1)


def _on_marker(script: str, at: int) -> bool:
    """Whether a position is on a ``# %%`` marker line (the agent keeps those as they are)."""
    return script.startswith("# %%", script.rfind("\n", 0, at) + 1)


async def test_a_cell_added_after_the_outline_is_kept_by_a_script_that_leaves_it_out(
    make_notebook, person_and_agent
):
    path = make_notebook("outline.ipynb", cells=["a = 1", "b = 2"])
    async with person_and_agent(path, user=ADA) as (person, agent):
        first, second = (await ok(agent, "get_notebook", path=path))["cells"]
        person.notebook.append_cell({"cell_type": "code", "source": "mine = 3", "metadata": {}})
        await person.flush()
        script = f'# %% id="{first["id"]}"\na = 10\n\n# %% id="{second["id"]}"\nb = 2\n'
        await ok(agent, "write_notebook_text", path=path, text=script)
        await person.wait_for(lambda nb: person.sources() == ["a = 10", "b = 2", "mine = 3"])
