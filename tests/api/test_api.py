"""The panel's API under /api/mcp/: Jupyter's auth and authorizer guard every route, and changes
reach the panel on Jupyter's event bus (/api/events/subscribe), never by polling."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from httpx_ws import aconnect_ws
from jupyter_server.auth import Authorizer
from traitlets.config import Config

from ..support.mcp_client import connect, ok

SCHEMA_ID = "https://jupyter-mcp-ext.readthedocs.io/events/activity"
READS = ["info", "sessions", "journal", "policy", "approvals", "agents"]
WRITES = [
    ("policy", {"mode": "ask"}),
    ("revert", {"entry": 1}),
    ("approvals/ap-1", {"decision": "deny"}),
    ("stop", {}),
]


async def test_every_route_answers_with_jupyter_auth(panel, server_url, jp_auth_header):
    for route in READS:
        await panel.get(route)
    info = await panel.get("info")
    assert info["url"] == f"{server_url}mcp" and info["token_required"] is True
    assert set(info["snippets"]) == {"claude", "codex", "cursor", "vscode", "json"}
    # The set-ups are the URL alone (the host signs in); the file-based ones also come with a slot
    # for a minted agent token, which the panel fills; Claude Code's command line has none.
    assert all(info["url"] in s and "<TOKEN>" not in s for s in info["snippets"].values())
    assert set(info["token_snippets"]) == {"codex", "cursor", "vscode", "json"}
    assert all("Bearer <TOKEN>" in s and info["url"] in s for s in info["token_snippets"].values())
    # Nothing hands out the person's Jupyter token any more: set-ups never carry it.
    assert (await panel.http.get(panel.base + "token")).status_code == 404
    assert await panel.get("sessions") == {"sessions": []}
    assert await panel.post("stop") == {"cancelled": 0, "interrupted": 0, "sessions_ended": 0}


async def test_every_route_refuses_a_request_without_credentials(server_url):
    async with httpx.AsyncClient(follow_redirects=False) as http:
        for route in READS:
            response = await http.get(f"{server_url}api/mcp/{route}")
            assert response.status_code == 403, route
        for route, body in WRITES:
            response = await http.post(f"{server_url}api/mcp/{route}", json=body)
            assert response.status_code == 403, route


async def test_a_cookie_post_without_xsrf_is_refused(server_url, jp_auth_header):
    token = jp_auth_header["Authorization"].split()[-1]
    async with httpx.AsyncClient() as http:
        assert (await http.get(f"{server_url}api/status", params={"token": token})).status_code == 200
        assert (await http.get(f"{server_url}api/mcp/policy")).status_code == 200  # the cookie reads
        response = await http.post(f"{server_url}api/mcp/policy", json={"mode": "off"})
        assert response.status_code == 403
        assert (await http.get(f"{server_url}api/mcp/policy")).json() == {"mode": "full"}


async def test_bad_requests_say_what_is_wrong(panel):
    response = await panel.http.post(panel.base + "revert", json={})
    assert response.status_code == 400 and "entry" in response.text
    response = await panel.http.post(panel.base + "revert", json={"entry": 999})
    assert response.status_code == 404
    response = await panel.http.post(panel.base + "approvals/ap-999", json={"decision": "maybe"})
    assert response.status_code == 400
    response = await panel.http.post(panel.base + "policy", content=b"not json")
    assert response.status_code == 400


class ReviewerAuthorizer(Authorizer):
    """A person who may read and write files but not run code: may review, not stop nor mint agents."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return resource != "kernels"


class TestReviewer:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Config) -> Config:
        jp_server_config.ServerApp.authorizer_class = ReviewerAuthorizer
        return jp_server_config

    async def test_the_authorizer_decides_per_route(self, panel):
        await panel.get("journal")
        await panel.post("policy", {"mode": "ask"})
        minted = await panel.http.post(panel.base + "agents", json={"name": "x", "policy": "read-only"})
        assert minted.status_code == 403
        assert (await panel.http.post(panel.base + "stop", json={})).status_code == 403


async def test_the_panel_hears_of_journal_policy_and_approval_changes_on_the_event_bus(
    server_url, jp_auth_header, make_notebook, panel
):
    path = make_notebook("ev.ipynb", cells=["x = 1"])
    events: list[dict] = []
    ws_url = server_url.replace("http://", "ws://") + "api/events/subscribe"
    async with httpx.AsyncClient(headers=jp_auth_header) as http, aconnect_ws(ws_url, http) as ws:

        async def next_event(kind: str) -> dict:
            async with asyncio.timeout(20):
                while True:
                    event = json.loads(await ws.receive_text())
                    if event["schema_id"] == SCHEMA_ID:
                        events.append(event)
                        if event["kind"] == kind:
                            return event

        async with connect(server_url, jp_auth_header) as agent:
            (cell,) = (await ok(agent, "get_notebook", path=path))["cells"]
            await ok(agent, "update_cell", path=path, cell_id=cell["id"], source="x = 2")
        entry = (await panel.journal())[0]
        assert (await next_event("journal"))["id"] == str(entry["id"])
        await panel.revert(entry["id"])
        assert (await next_event("journal"))["id"] == str(entry["id"])  # it is now reverted
        await panel.post("checkpoints", {"name": "before the refactor"}, status=201)
        assert (await next_event("checkpoint"))["id"] == "before the refactor"
        await panel.post("policy", {"mode": "ask"})
        assert (await next_event("policy"))["id"] == "ask"
        async with connect(server_url, jp_auth_header) as agent:
            call = asyncio.create_task(agent.call_tool("execute_code", {"path": path, "code": "1"}))
            approval_id = (await next_event("approval"))["id"]
            assert [a["id"] for a in (await panel.get("approvals"))["approvals"]] == [approval_id]
            await panel.post(f"approvals/{approval_id}", {"decision": "deny"})
            assert (await next_event("approval"))["id"] == approval_id  # no longer waiting
            assert (await call).is_error
    # what changed and which, a count to notice a lost one, and for the journal what a mark needs
    assert all(set(e) - {"entry"} == {"schema_id", "kind", "id", "seq"} for e in events), events
    assert all(("entry" in e) == (e["kind"] == "journal") for e in events), events
    assert not any("x = 2" in json.dumps(e) for e in events)  # no text of the notebook


async def test_sessions_list_each_agent_and_the_journal_names_it(
    server_url, jp_auth_header, make_notebook, panel
):
    path = make_notebook("who.ipynb", cells=["x = 1"])
    async with connect(server_url, jp_auth_header) as first, connect(server_url, jp_auth_header) as second:
        await ok(first, "insert_cells", path=path, cells=[{"source": "a"}])
        await ok(second, "insert_cells", path=path, cells=[{"source": "b"}])
        sessions = (await panel.get("sessions"))["sessions"]
        assert len(sessions) == 2 and all(s["path"] == path for s in sessions)
        entries = await panel.journal()
        assert {e["agent"] for e in entries} == {s["id"] for s in sessions}
        mine = await panel.journal(agent=entries[0]["agent"])
        assert [e["changes"][0]["after"] for e in mine] == ["b"]
        (agent,) = [s for s in sessions if s["id"] == entries[0]["agent"]]
        assert entries[0]["client"] == (agent["client"].get("title") or agent["client"]["name"])
        assert entries[0]["client"] and entries[0]["user"] == agent["user"]
