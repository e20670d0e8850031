"""A person with the notebook open sees each agent as a collaborator of its own: named after its
client, with its own colour and a caret in the cell it works on, listed in the global awareness room
as JupyterLab's collaborators panel reads it; and an agent leaves when its session ends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp_types import Implementation
from pycrdt import Assoc, StickyIndex

from ..support.mcp_client import STATELESS, connect, ok, text
from ..support.yclient import GlobalAwarenessPeer, YPeer, browser_user
from ..support.ytext import TextPeer

CLAUDE = Implementation(name="claude-code", version="2.1.0", title="Claude Code")
CODEX = Implementation(name="codex", version="0.9")


def agents_seen(peer: YPeer) -> dict[int, dict[str, Any]]:
    """The agents' awareness states a tab has, by awareness client id."""
    return {
        cid: state
        for cid, state in peer.remote_states().items()
        if state and state.get("user", {}).get("bot")
    }


async def agent_state(peer: YPeer, check=lambda state: True, timeout: float = 10.0) -> dict[str, Any]:
    """The one agent state in the tab, once ``check`` holds for it."""

    def found(_nb: Any) -> dict[str, Any] | None:
        states = [s for s in agents_seen(peer).values() if check(s)]
        return states[0] if len(states) == 1 else None

    return await peer.wait_for(found, timeout=timeout)


def caret_offset(peer: YPeer, state: dict[str, Any], cell_id: str) -> int:
    """Where the state's caret is in the tab's copy of the cell (UTF-16 units, like the browser)."""
    (cursor,) = state["cursors"]
    head = cursor["head"]
    assert set(head) == {"type", "tname", "item", "assoc"}  # the browser needs every key
    assert cursor["anchor"] == head and cursor["empty"] and cursor["primary"]
    (ycell,) = [c for c in peer.notebook.ycells if c["id"] == cell_id]
    with peer.ydoc.transaction() as txn:
        return StickyIndex.from_json(head, ycell["source"]).get_index(txn)


def presence(jp_serverapp: Any) -> Any:
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    return app.services.presence


async def test_the_agent_is_a_collaborator_with_its_caret_in_the_cell_it_edits(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("work/a.ipynb", cells=["x = 1", "", "y = 2"])
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        GlobalAwarenessPeer(server_url, jp_auth_header) as lobby,
    ):
        async with connect(server_url, jp_auth_header, client_info=CLAUDE) as agent:
            ids = [c["id"] for c in person.notebook.ycells]
            await ok(agent, "update_cell", path=path, cell_id=ids[2], source="y = 'é😀'")
            state = await agent_state(person, lambda s: s["mcp"]["cell_id"] == ids[2])
            user = state["user"]
            assert user["name"] == user["display_name"] == "Claude Code (agent)" and user["initials"] == "CC"
            assert user["username"].startswith("mcp-agent-") and user["username"] != person.user["username"]
            assert user["color"].startswith("#") and user["bot"] is True
            assert state["mcp"]["state"] == "idle" and state["autosave"] is True
            # After the last character, counted in UTF-16 as the browser does: é is 1, 😀 is 2.
            assert caret_offset(person, state, ids[2]) == len("y = 'é") + 2 + 1

            # An empty cell has no character to stick to: the caret sticks to the cell's text.
            await ok(agent, "update_cell", path=path, cell_id=ids[1], metadata={"tags": ["t"]})
            state = await agent_state(person, lambda s: s["mcp"]["cell_id"] == ids[1])
            assert (
                state["cursors"][0]["head"]["type"] is not None and caret_offset(person, state, ids[1]) == 0
            )

            made = await ok(agent, "insert_cells", path=path, cells=[{"source": "z = 3"}], index=0)
            state = await agent_state(person, lambda s: s["mcp"]["cell_id"] == made["cell_ids"][0])
            assert caret_offset(person, state, made["cell_ids"][0]) == 5

            # The collaborators panel's room: who, and the notebook it is in.
            listed = await agent_state(lobby)
            assert listed["user"] == user and listed["current"] == f"notebook:{path}"
            assert listed["documents"] == [path]
        # Its session ended: it left both rooms.
        await person.wait_for(lambda _nb: not agents_seen(person))
        await lobby.wait_for(lambda _nb: not agents_seen(lobby))


async def test_two_agents_are_two_collaborators_and_a_late_tab_sees_them(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("b.ipynb", cells=["x = 1", "y = 2"])
    async with YPeer(server_url, jp_auth_header, path) as first:
        ids = [c["id"] for c in first.notebook.ycells]
        async with (
            connect(server_url, jp_auth_header, client_info=CLAUDE) as claude,
            connect(server_url, jp_auth_header, client_info=CODEX) as codex,
        ):
            await ok(claude, "update_cell", path=path, cell_id=ids[0], source="x = 10")
            await ok(codex, "update_cell", path=path, cell_id=ids[1], source="y = 20")
            await first.wait_for(lambda _nb: len(agents_seen(first)) == 2)
            # A tab and the lobby opened after the agents arrived still see both.
            async with (
                YPeer(server_url, jp_auth_header, path) as late,
                GlobalAwarenessPeer(server_url, jp_auth_header) as lobby,
            ):
                for peer in (late, lobby):
                    # At once, not at the next renewal (every 10 s).
                    await peer.wait_for(lambda _nb, p=peer: len(agents_seen(p)) == 2, timeout=5)
                seen = {s["user"]["name"]: s for s in agents_seen(late).values()}
                assert set(seen) == {"Claude Code (agent)", "codex (agent)"}
                assert seen["Claude Code (agent)"]["mcp"]["cell_id"] == ids[0]
                assert seen["codex (agent)"]["mcp"]["cell_id"] == ids[1]
                assert len({s["user"]["username"] for s in seen.values()}) == 2
                assert len(agents_seen(late)) == 2  # two awareness clients, one per agent
        await first.wait_for(lambda _nb: not agents_seen(first))


async def test_a_tab_opened_after_the_agent_worked_alone_sees_it_where_it_is_now(
    server_url, jp_auth_header, make_notebook, jp_serverapp, ydoc_extension
):
    """With nobody in its rooms the agent's state is not sent (nor worked out) on each call; the
    first tab to come sees it at once, in the cell it worked on last, not where it was first."""
    path = make_notebook("alone.ipynb", cells=["x = 1", "y = 2"])
    slots = presence(jp_serverapp)._slots

    async def worked_alone() -> None:
        """Until the presence loop has taken the agent's last change, nobody being there to see it."""
        with anyio.fail_after(5):
            while not (slots and all(slot.unsent for slot in slots.values())):
                await anyio.sleep(0.05)

    async with connect(server_url, jp_auth_header, client_info=CLAUDE) as agent:
        ids = [c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"]]
        await ok(agent, "update_cell", path=path, cell_id=ids[0], source="x = 10")
        made = (await ok(agent, "insert_cells", path=path, cells=[{"source": "z = 3"}], index=2))["cell_ids"]
        for cell_id in (made[0], ids[1]):  # a tab comes, goes; the agent moves on; another comes
            await worked_alone()
            async with (
                YPeer(server_url, jp_auth_header, path) as tab,
                GlobalAwarenessPeer(server_url, jp_auth_header) as lobby,
            ):
                # At once, not at the next renewal (every 10 s).
                state = await agent_state(tab, lambda s, c=cell_id: s["mcp"]["cell_id"] == c, timeout=5)
                sources = {str(c["id"]): str(c["source"]) for c in tab.notebook.ycells}
                assert caret_offset(tab, state, cell_id) == len(sources[cell_id])  # at the end (ASCII)
                assert (await agent_state(lobby, timeout=5))["current"] == f"notebook:{path}"
            with anyio.fail_after(5):  # the server has seen both leave
                while any(room.clients for room in ydoc_extension.ywebsocket_server.rooms.values()):
                    await anyio.sleep(0.05)
            await ok(agent, "update_cell", path=path, cell_id=ids[1], source="y = 20")


async def test_presence_is_renewed_and_follows_the_people_on_autosave(
    server_url, jp_auth_header, make_notebook, jp_serverapp, jp_root_dir: Path
):
    path = make_notebook("c.ipynb", cells=["x = 1"])
    presence(jp_serverapp).renew_interval = 0.5
    async with YPeer(server_url, jp_auth_header, path) as person:
        person.set_awareness(autosave=False)  # this person turned autosave off
        await person.flush()
        cell_id = person.notebook.ycells[0]["id"]
        async with connect(server_url, jp_auth_header, client_info=CLAUDE) as agent:
            await ok(agent, "update_cell", path=path, cell_id=cell_id, source="x = 'unsaved'")
            state = await agent_state(person)
            assert state["autosave"] is False
            (cid,) = agents_seen(person)
            clock = person.awareness.meta[cid]["clock"]
            # Renewed well within the browser's 30 s timeout, so a tab never drops it.
            await person.wait_for(lambda _nb: person.awareness.meta[cid]["clock"] >= clock + 2, timeout=10)
            await anyio.sleep(2)  # save delay is 0.5 s: the agent's presence did not force a save
            saved = json.loads((jp_root_dir / path).read_text())
            assert "".join(saved["cells"][0]["source"]) == "x = 1"


async def test_an_agent_moving_to_another_notebook_leaves_the_first(
    server_url, jp_auth_header, make_notebook
):
    one = make_notebook("one.ipynb", cells=["a = 1"])
    two = make_notebook("two.ipynb", cells=["b = 1"])
    async with (
        YPeer(server_url, jp_auth_header, one) as person,
        connect(server_url, jp_auth_header, client_info=CLAUDE) as agent,
    ):
        await ok(agent, "get_notebook", path=one)
        await agent_state(person)
        await ok(agent, "get_notebook", path=two)
        await person.wait_for(lambda _nb: not agents_seen(person))


def caret(peer: YPeer, index: int, at: int, assoc: Assoc = Assoc.AFTER) -> list[dict[str, Any]]:
    """``cursors`` as y-codemirror writes them for a caret at ``at`` (UTF-16) in cell ``index``."""
    source = peer.notebook.ycells[index]["source"]
    if at == len(str(source).encode("utf-16-le")) // 2 and assoc == Assoc.AFTER:
        # yjs sticks a caret at the very end to the text itself.
        position = {**StickyIndex.new(source, 0, Assoc.BEFORE).to_json(), "assoc": 0}
    else:
        position = StickyIndex.new(source, at, assoc).to_json()
    position = {"type": None, "tname": None, "item": None, **position}
    return [{"anchor": position, "head": position, "primary": True, "empty": True}]


async def test_the_agent_sees_who_is_in_the_notebook_and_their_cell(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("d.ipynb", cells=["a = 1", "s = 'é😀 x'", ""])
    async with connect(server_url, jp_auth_header, client_info=CLAUDE) as agent:
        alone = await agent.call_tool("get_notebook", {"path": path})
        assert "people" not in alone.structured_content and not text(alone).startswith("[")
        async with (
            YPeer(server_url, jp_auth_header, path, user=browser_user("Alice")) as alice,
            YPeer(server_url, jp_auth_header, path, user=browser_user("Bob")) as bob,
        ):
            ids = [c["id"] for c in alice.notebook.ycells]
            alice.set_awareness(cursors=caret(alice, 1, 8))  # after the emoji's two UTF-16 units
            await ok(
                agent, "update_cell", path=path, cell_id=ids[0], source="a = 2"
            )  # the agent is there too
            outline = await people_in(agent, "get_notebook", path, lambda p: "cell_id" in p.get("Alice", {}))
            assert outline["people"] == [{"name": "Alice", "cell_id": ids[1]}, {"name": "Bob"}] or outline[
                "people"
            ] == [{"name": "Bob"}, {"name": "Alice", "cell_id": ids[1]}]

            bob.set_awareness(cursors=caret(bob, 2, 0))  # an empty cell
            alice.set_awareness(cursors=caret(alice, 0, 5))  # the end of a cell
            result = await people_in(
                agent,
                "read_cells",
                path,
                lambda p: p["Alice"].get("cell_id") == ids[0] and "cell_id" in p["Bob"],
                cell_ids=[ids[0]],
            )
            assert {p["name"]: p.get("cell_id") for p in result["people"]} == {"Alice": ids[0], "Bob": ids[2]}
            assert result["text"].splitlines()[0] in (
                f"[open by: Alice in {ids[0]}, Bob in {ids[2]}]",
                f"[open by: Bob in {ids[2]}, Alice in {ids[0]}]",
            )
        # They closed the notebook: the agent is told nothing, not an empty list.
        alone = await agent.call_tool("read_cells", {"path": path})
        assert "people" not in alone.structured_content and not text(alone).startswith("[")


async def people_in(agent: Any, tool: str, path: str, check, **args: Any) -> dict[str, Any]:
    """The tool's structured result (plus its ``text``) once ``check(people by name)`` holds:
    a tab's awareness reaches the server a moment after the tab sets it."""
    with anyio.fail_after(10):
        while True:
            result = await agent.call_tool(tool, {"path": path, **args})
            people = {p["name"]: p for p in result.structured_content.get("people", [])}
            if len(people) == 2 and check(people):
                return {**result.structured_content, "text": text(result)}
            await anyio.sleep(0.05)


async def test_an_agent_editing_a_file_open_in_an_editor_is_present_there(
    server_url, jp_auth_header, jp_root_dir: Path
):
    (jp_root_dir / "lib.py").write_text("x = 1\n")
    async with (
        TextPeer(server_url, jp_auth_header, "lib.py") as editor,
        GlobalAwarenessPeer(server_url, jp_auth_header) as lobby,
    ):
        async with connect(server_url, jp_auth_header, client_info=CLAUDE) as agent:
            await ok(agent, "edit_file", path="lib.py", old_string="x = 1", new_string="x = 2")
            await editor.wait_for_text("x = 2\n")
            state = await agent_state(editor)
            assert state["user"]["name"] == "Claude Code (agent)" and state["mcp"]["cell_id"] is None
            assert "cursors" not in state
            listed = await agent_state(lobby)
            assert listed["current"] == "editor:lib.py" and listed["documents"] == ["lib.py"]
        await editor.wait_for(lambda _nb: not agents_seen(editor))  # the agent left: the editor sees it


async def test_a_stateless_client_is_present_until_it_has_been_idle_a_while(
    server_url, jp_auth_header, make_notebook, jp_serverapp
):
    path = make_notebook("e.ipynb", cells=["x = 1"])
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    app.services.agents.idle_timeout = 1.0  # agent_idle_timeout
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        connect(server_url, jp_auth_header, STATELESS, client_info=CODEX) as agent,
    ):
        cell_id = person.notebook.ycells[0]["id"]
        await ok(agent, "update_cell", path=path, cell_id=cell_id, source="x = 2")
        state = await agent_state(person)
        assert state["user"]["name"] == "codex (agent)" and state["mcp"]["cell_id"] == cell_id
        # No session to end: it leaves once idle, with the client still connected.
        await person.wait_for(lambda _nb: not agents_seen(person), timeout=10)
        await ok(agent, "read_cells", path=path)
        assert (await agent_state(person))["user"]["name"] == "codex (agent)"


async def test_calls_that_change_nothing_for_the_lobby_send_nothing_there_until_the_renewal(
    server_url, jp_auth_header, make_notebook, jp_serverapp
):
    """An agent editing one notebook call after call is the same collaborator in the same place for
    the collaborators panel: its state there is sent when it changes and renewed, not on every call."""
    path = make_notebook("lobby.ipynb", cells=["x = 1"])
    presence(jp_serverapp).renew_interval = 3600.0
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        GlobalAwarenessPeer(server_url, jp_auth_header) as lobby,
        connect(server_url, jp_auth_header, client_info=CLAUDE) as agent,
    ):
        cell_id = person.notebook.ycells[0]["id"]
        await ok(agent, "update_cell", path=path, cell_id=cell_id, source="x = 0")
        await agent_state(lobby)
        await agent_state(person, lambda s: s["mcp"]["state"] == "idle")
        (cid,) = agents_seen(lobby)
        clock = lobby.awareness.meta[cid]["clock"]
        for n in range(1, 6):
            await ok(agent, "update_cell", path=path, cell_id=cell_id, source=f"x = {n}")
        # The tab still follows every call: its caret comes to where the last edit ended (the edit
        # and the caret reach the tab in two messages, so it is waited for).
        state = await agent_state(
            person,
            lambda s: (
                s["mcp"]["state"] == "idle"
                and str(person.notebook.ycells[0]["source"]) == "x = 5"
                and caret_offset(person, s, cell_id) == len("x = 5")
            ),
        )
        assert caret_offset(person, state, cell_id) == len("x = 5")
        await anyio.sleep(0.5)
        assert lobby.awareness.meta[cid]["clock"] == clock
        # A renewal still sends it, within the browser's 30 s timeout.
        presence(jp_serverapp).renew_interval = 0.2
        await lobby.wait_for(lambda _nb: lobby.awareness.meta[cid]["clock"] > clock, timeout=10)
