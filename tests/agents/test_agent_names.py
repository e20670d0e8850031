"""The name the person approved is the name everyone sees: an agent with a credential of its own (a
minted token, or signed in through OAuth) is shown under the credential's name in presence, the
journal (the feed and the review marks read it), the sessions list and approval cards; what its MCP
client calls itself may follow in brackets, never replace it. An agent on the person's own token keeps
its client's name, and the panel's Agents list says which names nobody could check."""

from __future__ import annotations

import httpx
from mcp_types import Implementation

from ..auth.test_agent_tokens import mint
from ..support.mcp_client import connect, ok
from ..support.oauth_flow import Flow, person_logged_in
from ..support.yclient import YPeer
from .test_presence import agent_state

BOB = Implementation(name="Your Colleague Bob", version="1")
APPROVED = "Auth Bot (Your Colleague Bob)"


async def names_seen(server_url, headers, person: YPeer, panel, path: str, client=BOB) -> dict[str, str]:
    """What each place says of the agent that inserts a cell: presence in the room (as a tab sees it),
    the journal entry, and the agent's session in the panel."""
    async with connect(server_url, headers, client_info=client) as agent:
        await ok(agent, "insert_cells", path=path, cells=[{"source": "z = 3"}], index=0)
        state = await agent_state(person)
        (session,) = (await panel.get("sessions"))["sessions"]
    entry = await panel.entry("insert_cells")
    return {
        "presence": state["user"]["display_name"],
        "journal": entry["client"],
        "session": session.get("name"),
        "session_display": session["display_name"],
    }


async def test_a_minted_agent_is_seen_under_the_name_the_person_gave_it(
    server_url, jp_auth_header, panel, make_notebook
):
    path = make_notebook("named.ipynb", cells=["x = 1"])
    _, bearer = await mint(panel, "Auth Bot", "full")
    async with YPeer(server_url, jp_auth_header, path) as person:
        seen = await names_seen(server_url, bearer, person, panel, path)
    assert seen == {
        "presence": f"{APPROVED} (agent)",
        "journal": APPROVED,
        "session": APPROVED,
        "session_display": f"{APPROVED} (agent)",
    }
    (listed,) = (await panel.get("agents"))["agents"]
    assert listed["name"] == "Auth Bot" and listed["name_verified"] is None  # the person named it


async def test_a_signed_in_agent_is_seen_under_its_registered_name_marked_unverified(
    server_url, jp_auth_header, panel, make_notebook
):
    path = make_notebook("signed.ipynb", cells=["x = 1"])
    async with (
        httpx.AsyncClient(follow_redirects=False, timeout=30) as host,
        person_logged_in(server_url, jp_auth_header["Authorization"].split()[-1]) as browser,
    ):
        flow = Flow(server_url, host)
        await flow.discover()
        got = await flow.tokens(browser, await flow.register(client_name="Auth Bot"))
    bearer = {"Authorization": f"Bearer {got['access_token']}"}
    async with YPeer(server_url, jp_auth_header, path) as person:
        seen = await names_seen(server_url, bearer, person, panel, path)
    assert seen["presence"] == f"{APPROVED} (agent)" and seen["journal"] == seen["session"] == APPROVED
    (listed,) = (await panel.get("agents"))["agents"]
    assert listed["name"] == "Auth Bot" and listed["client"] == "Auth Bot"


async def test_the_agents_list_says_whether_a_name_was_checked(panel, jp_serverapp):
    """What the sign-in records (a fetched document, or a client that named itself) the panel is told,
    and draws "unverified" for the latter."""
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    for name, verified in (("Checked", True), ("Self-named", False)):
        app.tokens.create(name, "someone", "read-only", client=name, client_id=name, name_verified=verified)
    listed = {a["name"]: a["name_verified"] for a in (await panel.get("agents"))["agents"]}
    assert listed == {"Checked": True, "Self-named": False}


async def test_the_same_name_has_no_brackets_and_the_persons_token_keeps_the_clients_name(
    server_url, jp_auth_header, panel, make_notebook
):
    path = make_notebook("same.ipynb", cells=["x = 1"])
    _, bearer = await mint(panel, "Claude Code", "full")
    claude = Implementation(name="claude-code", title="Claude Code", version="2")
    async with YPeer(server_url, jp_auth_header, path) as person:
        seen = await names_seen(server_url, bearer, person, panel, path, client=claude)
    assert seen["presence"] == "Claude Code (agent)" and seen["journal"] == seen["session"] == "Claude Code"
    async with YPeer(server_url, jp_auth_header, path) as person:
        seen = await names_seen(server_url, jp_auth_header, person, panel, path)
    assert seen["presence"] == "Your Colleague Bob (agent)"
    assert seen["journal"] == seen["session"] == "Your Colleague Bob"
