"""A journal entry is exactly the agent's change: a person's typing that lands while the agent's call
is still in flight (after its edit, before the call ends) is not in the entry, and undoing the entry
leaves it where it is."""

from __future__ import annotations

import asyncio

from pycrdt import Text

from ..support.mcp_client import connect, ok
from ..support.ytext import TextPeer


async def test_a_persons_typing_landing_as_the_agents_file_edit_is_applied_survives_its_undo(
    server_url, jp_auth_header, jp_root_dir, jp_serverapp, panel
):
    (jp_root_dir / "race.py").write_text("alpha = 1\nbeta = 2\n")
    ext = jp_serverapp.web_app.settings["jupyter_server_ydoc"]
    async with (
        TextPeer(server_url, jp_auth_header, "race.py") as tab,
        connect(server_url, jp_auth_header) as agent,
    ):
        await tab.wait_for_text("alpha = 1\nbeta = 2\n")
        room = await ext.get_document(path="race.py", content_type="file", file_format="text", copy=False)
        loop = asyncio.get_running_loop()
        typed: list[bytes] = []

        def the_person_types(_event) -> None:
            """The moment the agent's splice lands in the room (its first change since), the person
            types at the top; the room takes their update on its next turn of the loop, while the
            agent's call has not ended."""
            if typed:
                return
            state = tab.ydoc.get_state()
            tab.type_at(0, "# typed meanwhile\n")  # sent over the tab's websocket too
            typed.append(tab.ydoc.get_update(state))
            loop.call_soon(room.ydoc.apply_update, typed[0])

        text = room.ydoc.get("source", type=Text)
        subscription = text.observe(the_person_types)
        try:
            await ok(agent, "edit_file", path="race.py", old_string="beta = 2", new_string="beta = 20")
        finally:
            text.unobserve(subscription)
        assert typed
        await tab.wait_for_text("# typed meanwhile\nalpha = 1\nbeta = 20\n")

        entry = await panel.entry("edit_file")
        (change,) = entry["changes"]  # the agent's splice alone: the person's line is on neither side
        assert (change["before"], change["after"]) == ("alpha = 1\nbeta = 2\n", "alpha = 1\nbeta = 20\n")
        assert (await panel.revert(entry["id"]))["reverted"] == [entry["id"]]
        await tab.wait_for_text("# typed meanwhile\nalpha = 1\nbeta = 2\n")


async def test_a_persons_typing_in_a_cell_the_agent_inserted_and_is_running_is_not_undone_with_it(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("run.ipynb", cells=["a = 1"])
    async with person_and_agent(path) as (person, agent):
        await ok(agent, "execute_code", path=path, code="1")  # the kernel is up
        source = "import time\ntime.sleep(1.5)"
        call = asyncio.create_task(
            agent.call_tool("insert_and_execute", {"path": path, "source": source, "timeout": 30})
        )
        await person.wait_for(lambda nb: len(person.sources()) == 2 and person.sources()[1] == source)
        person.insert_text(1, 0, "# mine\n")  # while the agent's call still runs its cell
        await person.flush()
        assert not call.done()
        assert not (await call).is_error

        entry = await panel.entry("insert_and_execute")
        insert = next(c for c in entry["changes"] if c["kind"] == "insert")
        assert insert["after"] == source  # as the agent inserted it
        result = await panel.revert(entry["id"], status=409)  # undoing it would delete the person's line
        assert "edited since" in result["conflicts"][0]["reason"]
        await asyncio.sleep(0.2)
        assert person.sources() == ["a = 1", "# mine\n" + source]
