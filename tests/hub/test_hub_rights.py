"""Under JupyterHub an agent holds what its person chose and what the Hub lets the person do now: a
share or a role's right removed at the Hub ends within the bound (one second here), refreshing does
not revive it, and the server's owner is not cut off by their own logout.
"""

from __future__ import annotations

import asyncio
from contextlib import closing

import httpx
import pytest

from ..support.mcp_client import connect, fails, ok
from .agents import SHARED, bearer, share, signed_in_agent, unshare, until_refused
from .harness import Hub

pytest.importorskip("jupyterhub", reason="the test extra installs JupyterHub")

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def hub(agents_hub: Hub) -> Hub:
    return agents_hub


async def test_a_sharees_agent_is_refused_once_the_share_is_removed_and_refreshing_does_not_revive_it(
    hub: Hub, alice: str
):
    share(hub, "erin", SHARED)
    flow, client, tokens = await signed_in_agent(hub, alice, "erin")
    async with connect(alice, bearer(tokens)) as mcp:
        assert "agents read this" in str(await ok(mcp, "read_file", path="notes.txt"))

    unshare(hub, "erin", SHARED)  # alice stops sharing her server with erin
    said = await until_refused(alice, tokens, "read_file", path="notes.txt")
    assert "JupyterHub no longer lets erin use this server" in said and "sign in again" in said, said

    async with httpx.AsyncClient(timeout=30) as http:
        again = await http.post(
            f"{alice}mcp", headers={**bearer(tokens), "Accept": "application/json"}, json={}
        )
    assert again.status_code == 401 and 'error="invalid_token"' in again.headers["WWW-Authenticate"]
    refreshed = await flow.token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant", refreshed.text


async def test_a_right_taken_back_at_the_hub_is_taken_from_the_agent_and_the_rest_stay(hub: Hub, alice: str):
    share(hub, "frank", SHARED)
    _flow, _client, tokens = await signed_in_agent(hub, alice, "frank")
    async with connect(alice, bearer(tokens)) as mcp:
        await ok(mcp, "write_file", path="by-frank.txt", content="one\n")

    # The Hub takes write from frank (out of the writers' group); read stays.
    left = hub.api("DELETE", "groups/alice-writers/users", json={"users": ["frank"]})
    assert left.status_code == 200, left.text
    said = await until_refused(alice, tokens, "write_file", path="by-frank.txt", content="two\n")
    assert "may not write contents" in said, said
    async with connect(alice, bearer(tokens)) as mcp:
        assert "agents read this" in str(await ok(mcp, "read_file", path="notes.txt"))
        assert "may not write contents" in await fails(mcp, "write_file", path="after.txt", content="x\n")
    assert not (hub.home("alice") / "after.txt").exists()


async def test_the_agent_ends_with_the_hub_login_it_was_allowed_from(hub: Hub, alice: str):
    """Logging out of the Hub ends the browser's login on the server, which the agent's rights hung on."""
    share(hub, "gina", SHARED)
    with closing(await asyncio.to_thread(hub.browser, "gina", alice)) as browser:
        _flow, _client, tokens = await signed_in_agent(hub, alice, "gina", browser)
        async with connect(alice, bearer(tokens)) as mcp:
            await ok(mcp, "read_file", path="notes.txt")
        assert (await asyncio.to_thread(browser.get, f"{hub.url}/hub/logout")).status_code == 200
    said = await until_refused(alice, tokens, "read_file", path="notes.txt")
    assert "JupyterHub no longer vouches for the login gina allowed this agent from" in said, said


async def test_the_owners_agent_outlives_a_sharees_share_and_the_owners_own_logout(hub: Hub, alice: str):
    """The server's owner is vouched for by the server's own Hub token once their browser login is gone:
    their agents keep the rights they chose while the Hub lets them reach their server."""
    share(hub, "erin", SHARED)
    with closing(await asyncio.to_thread(hub.browser, "alice", alice)) as browser:
        _flow, _client, tokens = await signed_in_agent(hub, alice, "alice", browser)
        unshare(hub, "erin", SHARED)
        assert (await asyncio.to_thread(browser.get, f"{hub.url}/hub/logout")).status_code == 200
    await asyncio.sleep(1.5)  # past the bound: the Hub is asked about alice anew
    async with connect(alice, bearer(tokens)) as mcp:
        assert "agents read this" in str(await ok(mcp, "read_file", path="notes.txt"))
        await ok(mcp, "write_file", path="by-alice.txt", content="mine\n")


# -- discovery from the host root ------------------------------------------------------------------
