"""The two sides of a cell's in-cell diff (``GET /api/mcp/review/diff``): the original is the cell with
the agents' pending changes taken back out, so what the person typed since is on both sides and the
diff shows only the agents' work; an original that cannot be exact says so; a settled, unknown or
missing cell is refused with what to do."""

from __future__ import annotations

import httpx

from ..auth.test_agent_tokens import mint
from ..support.mcp_client import ok


async def _when(panel, path: str, cell_id: str, current: str) -> dict:
    """The diff once the server's document holds ``current`` (the person's typing is on its way)."""

    async def probe() -> dict | None:
        diff = await _diff(panel, path, cell_id)
        return diff if diff["current"] == current else None

    return await panel.until(probe)


async def _diff(panel, path: str, cell_id: str, status: int = 200) -> dict:
    response = await panel.http.get(panel.base + "review/diff", params={"path": path, "cell_id": cell_id})
    assert response.status_code == status, response.text
    return response.json()


async def test_the_original_is_the_cell_without_the_agents_changes_and_keeps_the_persons_typing(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("d.ipynb", cells=["a = 1\nb = 2\nc = 3\nd = 4", "other = 1"])
    async with person_and_agent(path) as (person, agent):
        a, other = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "update_cell", path=path, cell_id=a, old_string="a = 1", new_string="a = 10")
        await ok(agent, "update_cell", path=path, cell_id=a, old_string="d = 4", new_string="d = 40")
        await person.wait_for(lambda nb: person.sources()[0].endswith("d = 40"))
        person.insert_text(0, len("a = 10\nb = 2\n"), "# mine\n")  # the person types between them
        await person.flush()
        now = "a = 10\nb = 2\n# mine\nc = 3\nd = 40"
        await person.wait_for(lambda nb: person.sources()[0] == now)

        diff = await _when(panel, path, a, now)
        assert diff["original"] == "a = 1\nb = 2\n# mine\nc = 3\nd = 4"  # only the agent's two changes differ
        assert diff["exact"] is True and len(diff["entries"]) == 2

        made = await ok(agent, "insert_cells", path=path, cells=[{"source": "new()"}])
        added = await _diff(panel, path, made["cell_ids"][0])
        assert (added["original"], added["current"]) == ("", "new()")  # all of an added cell is the agent's

        missing = await _diff(panel, path, other, status=409)  # changed by nobody
        assert f"No agent change to the text of cell {other} waits for review" in missing["message"]
        await panel.post("keep", {"path": path, "cell_id": a})
        kept = await _diff(panel, path, a, status=409)
        assert "waits for review" in kept["message"]
        await _diff(panel, path, "", status=400)


async def test_an_original_that_cannot_be_exact_is_the_text_before_and_says_so(
    make_notebook, panel, person_and_agent
):
    path = make_notebook("x.ipynb", cells=["rate = 1"])
    async with person_and_agent(path) as (person, agent):
        (a,) = (c["id"] for c in (await ok(agent, "get_notebook", path=path))["cells"])
        await ok(agent, "update_cell", path=path, cell_id=a, old_string="1", new_string="2")
        await person.wait_for(lambda nb: person.sources() == ["rate = 2"])
        person.insert_text(0, 8, "5")  # rate = 25: over what the agent wrote
        await person.flush()
        await person.wait_for(lambda nb: person.sources() == ["rate = 25"])
        diff = await _when(panel, path, a, "rate = 25")
        assert (diff["original"], diff["exact"]) == ("rate = 1", False)


async def test_the_diff_route_takes_people_only(server_url, panel):
    _, bearer = await mint(panel)
    async with httpx.AsyncClient(headers=bearer) as http:
        response = await http.get(
            f"{server_url}api/mcp/review/diff", params={"path": "a.ipynb", "cell_id": "x"}
        )
    assert response.status_code == 403 and "only people" in response.text
