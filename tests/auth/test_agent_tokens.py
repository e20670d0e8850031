"""Agent credentials: a token minted for a named agent works at /mcp and nowhere else, carries the
policy the person chose (the server's policy a ceiling), names the agent, and stops at Revoke."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from httpx_ws import WebSocketUpgradeError, aconnect_ws
from mcp_types import Implementation
from traitlets.config import Config

from jupyter_mcp_ext.auth.tokens import MAX_USED_PER_GRANT, TokenStore

from ..support.mcp_client import STATELESS, connect, fails, ok

TIMEOUT = 6.0


@pytest.fixture
def accept_jupyter_token() -> bool:
    return True


@pytest.fixture
def jp_server_config(jp_server_config: Config, accept_jupyter_token: bool) -> Config:
    jp_server_config.MCPExtensionApp.approval_timeout = TIMEOUT
    jp_server_config.MCPExtensionApp.accept_jupyter_token = accept_jupyter_token
    return jp_server_config


async def mint(panel, name: str = "My script", policy: str = "full") -> tuple[dict, dict[str, str]]:
    made = await panel.post("agents", {"name": name, "policy": policy}, status=201)
    return made["agent"], {"Authorization": f"Bearer {made['token']}"}


async def test_a_minted_token_works_at_mcp_and_names_the_agent(server_url, panel, make_notebook):
    path = make_notebook("a.ipynb", cells=["x = 1"])
    agent_record, bearer = await mint(panel, "Nightly report", "full")
    assert agent_record["policy"] == "full" and agent_record["client"] == "token"
    listed = (await panel.get("agents"))["agents"]
    assert [a["name"] for a in listed] == ["Nightly report"] and "token" not in json.dumps(
        listed
    ).lower().replace('"client": "token"', "")
    info = Implementation(name="some-client", version="1")
    async with connect(server_url, bearer, client_info=info) as agent:
        await ok(agent, "get_notebook", path=path)
        (session,) = (await panel.get("sessions"))["sessions"]
        assert session["display_name"] == "Nightly report (some-client) (agent)" and session["user"]
        assert session["credential"] == {
            "kind": "agent",
            "id": agent_record["id"],
            "name": "Nightly report",
            "policy": "full",
        }
        (listed,) = (await panel.get("agents"))["agents"]
        assert [s["id"] for s in listed["sessions"]] == [session["id"]] and listed["last_used"]
        colour = session["color"]
    async with connect(server_url, bearer, mode=STATELESS, client_info=info) as agent:
        await ok(agent, "get_notebook", path=path)
        named = [s for s in (await panel.get("sessions"))["sessions"] if s["id"] != session["id"]]
        assert (
            named[0]["display_name"] == "Nightly report (some-client) (agent)" and named[0]["color"] == colour
        )


async def test_the_persons_token_is_shown_as_full_access(server_url, jp_auth_header, panel):
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "list_files")
        (session,) = (await panel.get("sessions"))["sessions"]
        assert session["credential"] == {"kind": "jupyter", "label": "your Jupyter token: full access"}


@pytest.mark.parametrize("accept_jupyter_token", [False])
async def test_a_server_can_refuse_the_persons_token_at_mcp(server_url, jp_auth_header, panel):
    async with httpx.AsyncClient(headers=jp_auth_header) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        response = await http.post(
            f"{server_url}mcp", json=body, headers={"Accept": "application/json, text/event-stream"}
        )
        assert response.status_code == 403
        assert "accept_jupyter_token" in response.json()["error"]["message"]
        assert (await http.get(f"{server_url}api/contents")).status_code == 200  # the person still works
    _, bearer = await mint(panel)
    async with connect(server_url, bearer) as agent:
        await ok(agent, "list_files")


async def test_an_agent_token_opens_nothing_but_mcp(server_url, panel, make_notebook):
    _, bearer = await mint(panel)
    async with httpx.AsyncClient(headers=bearer, follow_redirects=False) as http:
        for route in ["api/contents", "api/kernels", "api/sessions", "api/terminals", "api/kernelspecs"]:
            response = await http.get(server_url + route)
            assert response.status_code in (401, 403), (route, response.status_code)
        for route, body in [("api/kernels", {}), ("api/terminals", {}), ("api/contents", {"type": "file"})]:
            response = await http.post(server_url + route, json=body)
            assert response.status_code in (401, 403), (route, response.status_code)
        for route in ["info", "sessions", "journal", "policy", "approvals", "agents"]:
            response = await http.get(f"{server_url}api/mcp/{route}")
            assert response.status_code == 403, route
        for route, body in [("policy", {"mode": "full"}), ("agents", {"name": "x"}), ("stop", {})]:
            response = await http.post(f"{server_url}api/mcp/{route}", json=body)
            assert response.status_code == 403, route
        ws = server_url.replace("http", "ws", 1) + "api/collaboration/room/JupyterLab:globalAwareness"
        with pytest.raises(WebSocketUpgradeError) as refused:  # refused at the upgrade
            async with aconnect_ws(ws, http):
                pass
        assert refused.value.response.status_code in (401, 403)
        # As a query parameter or as Jupyter's "token" scheme it is just a wrong Jupyter token.
        token = bearer["Authorization"].split()[1]
        assert (
            await http.get(server_url + "api/contents", params={"token": token}, headers={})
        ).status_code == 403


async def test_the_credential_policy_is_applied_under_the_server_ceiling(server_url, panel, make_notebook):
    path = make_notebook("ro.ipynb", cells=["x = 1"])
    _, read_only = await mint(panel, "Reader", "read-only")
    _, full = await mint(panel, "Writer", "full")
    async with connect(server_url, read_only) as agent:
        await ok(agent, "read_cells", path=path)
        message = await fails(agent, "insert_cells", path=path, cells=[{"source": "y"}])
        assert "read-only" in message and "this agent" in message
    await panel.post("policy", {"mode": "read-only"})  # the server's policy is a ceiling over "full"
    async with connect(server_url, full) as agent:
        assert "read-only" in await fails(agent, "insert_cells", path=path, cells=[{"source": "y"}])
    await panel.post("policy", {"mode": "full"})
    async with connect(server_url, full) as agent:
        await ok(agent, "insert_cells", path=path, cells=[{"source": "y"}])


async def test_an_asking_agent_cannot_approve_itself_and_revoke_stops_it_at_once(
    server_url, panel, make_notebook
):
    path = make_notebook("ask.ipynb")
    record, bearer = await mint(panel, "Runner", "ask")
    async with connect(server_url, bearer) as agent:
        call = asyncio.create_task(agent.call_tool("execute_code", {"path": path, "code": "print(42)"}))
        (approval,) = await panel.until(lambda: _pending(panel))
        async with httpx.AsyncClient(headers=bearer) as http:
            response = await http.post(
                f"{server_url}api/mcp/approvals/{approval['id']}", json={"decision": "approve"}
            )
            assert response.status_code == 403
        await panel.post(f"approvals/{approval['id']}", {"decision": "deny"})
        assert (await call).is_error
        # The person changes the agent's policy: it holds from the agent's next call.
        await panel.post(f"agents/{record['id']}", {"policy": "read-only"})
        assert "read-only" in await fails(agent, "insert_cells", path=path, cells=[{"source": "y"}])
        response = await panel.http.delete(panel.base + f"agents/{record['id']}")
        revoked = time.monotonic()
        assert response.json() == {"revoked": record["id"], "sessions_ended": 1}
    async with httpx.AsyncClient(headers=bearer) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        response = await http.post(
            f"{server_url}mcp", json=body, headers={"Accept": "application/json, text/event-stream"}
        )
    # At once: a token kept in a cache for a while would still have been answered (200), not 401.
    assert time.monotonic() - revoked < 30
    assert response.status_code == 401 and "revoked" in response.json()["error"]["message"]
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert (await panel.get("agents"))["agents"] == []


async def test_revoking_an_agent_ends_its_waiting_calls_even_without_a_session(
    server_url, panel, make_notebook
):
    """A sessionless (2026-07-28) agent's call waiting for approval has no session to end: revoking
    its credential must end the call, so the card cannot be approved for an agent that is gone."""
    path = make_notebook("revoked.ipynb")
    record, bearer = await mint(panel, "Sessionless", "ask")
    _, other = await mint(panel, "Other", "ask")
    async with connect(server_url, bearer, STATELESS) as agent, connect(server_url, other, STATELESS) as kept:
        call = asyncio.create_task(agent.call_tool("execute_code", {"path": path, "code": "print('late')"}))
        theirs = asyncio.create_task(kept.call_tool("execute_code", {"path": path, "code": "print('kept')"}))
        await panel.until(lambda: _count(panel, 2))
        response = await panel.http.delete(panel.base + f"agents/{record['id']}")
        assert response.status_code == 200
        result = await asyncio.wait_for(call, 30)
        assert result.is_error and "revoked this agent's credential" in result.content[0].text
        (left,) = await _pending(panel)  # the other agent's call still waits for the person
        assert left["code"] == "print('kept')"
        await panel.post(f"approvals/{left['id']}", {"decision": "deny"})
        assert (await theirs).is_error


async def _count(panel, n: int) -> bool:
    return len(await _pending(panel)) == n


async def _pending(panel) -> list:
    return (await panel.get("approvals"))["approvals"]


async def test_minting_refuses_what_is_wrong(panel):
    response = await panel.http.post(panel.base + "agents", json={"name": " ", "policy": "full"})
    assert response.status_code == 400 and "needs a name" in response.text
    response = await panel.http.post(panel.base + "agents", json={"name": "x", "policy": "off"})
    assert response.status_code == 400 and "full, ask, read-only" in response.text
    assert (await panel.http.delete(panel.base + "agents/abc123")).status_code == 404


class TestStore:
    def test_tokens_are_kept_hashed_and_survive_a_restart(self, tmp_path):
        path = tmp_path / "agents.json"
        store = TokenStore(path, "/mcp")
        credential, token = store.mint("Bot", "alice", "ask")
        assert token not in path.read_text() and (path.stat().st_mode & 0o777) == 0o600
        again = TokenStore(path, "/mcp")
        assert again.lookup(token).id == credential.id and again.lookup(token).policy == "ask"
        assert TokenStore(path, "/other/mcp").lookup(token) is None  # another server's token
        assert again.revoke(credential.id) and again.lookup(token) is None
        assert TokenStore(path, "/mcp").lookup(token) is None

    def test_expired_tokens_and_reused_refresh_tokens_are_refused(self, tmp_path):
        store = TokenStore(tmp_path / "agents.json", "/mcp")
        credential = store.create("OAuth client", "alice", "full", client="Inspector")
        expired = store.issue(credential, "access", -1)
        assert store.lookup(expired) is None
        access = store.issue(credential, "access", 3600, family="f1")
        refresh = store.issue(credential, "refresh", 3600, family="f1")
        assert store.lookup(refresh) is None  # a refresh token is no access token
        spent = store.rotate(refresh)
        assert spent is not None and spent[1] == "f1"
        newer = store.issue(credential, "refresh", 3600, family="f1")
        assert store.rotate(refresh) is None  # reused after rotation: refused, and the grant ends
        assert store.rotate(newer) is None and store.lookup(access) is None

    def test_a_grant_refreshed_in_a_loop_keeps_two_tokens_and_a_bounded_memory_of_spent_ones(self, tmp_path):
        store = TokenStore(tmp_path / "agents.sqlite", "/mcp")
        credential = store.create("OAuth client", "alice", "full", client="Inspector", client_id="c")
        family = store.begin_grant(credential)
        access = store.issue(credential, "access", 3600, family)
        refresh = store.issue(credential, "refresh", 3600, family)
        first_access, spent = access, []
        for _ in range(300):
            assert store.rotate(refresh) is not None
            spent.append(refresh)
            access = store.issue(credential, "access", 3600, family)
            refresh = store.issue(credential, "refresh", 3600, family)
            assert store.live_tokens(credential.id) == 2
        assert store.lookup(first_access) is None and store.lookup(access) is credential
        remembered = store._db.execute("SELECT COUNT(*) FROM used").fetchone()[0]
        assert remembered == MAX_USED_PER_GRANT
        assert store.rotate(spent[-1]) is None  # a recent spent one, reused: the grant ends
        assert store.lookup(access) is None and store.live_tokens(credential.id) == 0
