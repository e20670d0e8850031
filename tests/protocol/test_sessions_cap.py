"""One client cannot lock others out by opening sessions (issue 9, finding 6)."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import httpx
import pytest
from jupyter_server.auth import IdentityProvider, User
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation
from traitlets.config import Config

from ..support.mcp_client import RAW_HEADERS, RAW_INITIALIZE, STATELESS, connect, ok
from ..support.panel import PanelAPI

INIT = RAW_INITIALIZE
ACCEPT = RAW_HEADERS
TOKENS = {"alice-token": "alice", "bob-token": "bob", "carol-token": "carol"}


class ThreeUsers(IdentityProvider):
    """Three people, each with a token of their own, as on a JupyterHub with shared servers."""

    async def get_user_token(self, handler):
        name = TOKENS.get(self.get_token(handler) or "")
        return User(name) if name else None


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path) -> Config:
    jp_server_config.ServerApp.identity_provider_class = ThreeUsers
    jp_server_config.MCPExtensionApp.policy_file = str(tmp_path / "policy.json")
    jp_server_config.MCPExtensionApp.max_sessions_per_user = 3
    jp_server_config.MCPExtensionApp.max_sessions = 6
    return jp_server_config


def headers(token: str, session: str | None = None) -> dict[str, str]:
    h = {**ACCEPT, "Authorization": f"token {token}"}
    if session:
        h |= {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    return h


async def open_session(http: httpx.AsyncClient, url: str, token: str) -> httpx.Response:
    return await http.post(url, headers=headers(token), json=INIT)


async def alive(http: httpx.AsyncClient, url: str, token: str, session: str) -> bool:
    pong = await http.post(
        url, headers=headers(token, session), json={"jsonrpc": "2.0", "id": 9, "method": "ping"}
    )
    assert pong.status_code in (200, 404), pong.text
    return pong.status_code == 200


async def test_a_flood_of_initializes_costs_only_the_flooders_own_sessions(server_url):
    url = f"{server_url}mcp"
    async with httpx.AsyncClient(timeout=30) as http:
        bob = (await open_session(http, url, "bob-token")).headers["mcp-session-id"]
        alice = []
        for _ in range(12):
            opened = await open_session(http, url, "alice-token")
            assert opened.status_code == 200, opened.text
            alice.append(opened.headers["mcp-session-id"])
        # Alice keeps her newest three; her oldest idle ones were closed to make room.
        assert [await alive(http, url, "alice-token", s) for s in alice] == [False] * 9 + [True] * 3
        # Bob, who opened his session before the flood, still has it, and can open more.
        assert await alive(http, url, "bob-token", bob)
        more = await open_session(http, url, "bob-token")
        assert more.status_code == 200 and await alive(http, url, "bob-token", more.headers["mcp-session-id"])


async def test_at_the_total_cap_the_oldest_idle_session_goes(server_url):
    url = f"{server_url}mcp"
    async with httpx.AsyncClient(timeout=30) as http:
        opened = [
            (token, (await open_session(http, url, token)).headers["mcp-session-id"])
            for token in ["alice-token"] * 3 + ["bob-token"] * 3
        ]
        # The server holds 6: Carol, who has none, gets the place of the oldest idle session of all.
        carol = await open_session(http, url, "carol-token")
        assert carol.status_code == 200
        assert [await alive(http, url, t, s) for t, s in opened] == [False] + [True] * 5
        # At the cap again, Carol's next session replaces her own oldest idle one, not someone else's.
        carol_again = await open_session(http, url, "carol-token")
        assert carol_again.status_code == 200
        assert not await alive(http, url, "carol-token", carol.headers["mcp-session-id"])
        assert [await alive(http, url, t, s) for t, s in opened[1:]] == [True] * 5


async def test_busy_sessions_are_not_closed_and_the_refusal_says_why(server_url):
    url = f"{server_url}mcp"
    async with httpx.AsyncClient(timeout=30) as http:
        sessions = [
            (await open_session(http, url, "alice-token")).headers["mcp-session-id"] for _ in range(3)
        ]
        streams = []
        for s in sessions:  # each holds a GET stream open: busy, not idle
            await http.post(
                url,
                headers=headers("alice-token", s),
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            )
            request = http.build_request(
                "GET", url, headers=headers("alice-token", s) | {"Accept": "text/event-stream"}
            )
            stream = await http.send(request, stream=True)
            assert stream.status_code == 200
            streams.append(stream)
        refused = await open_session(http, url, "alice-token")
        assert refused.status_code == 503
        message = refused.json()["error"]["message"]
        assert "3 MCP sessions open and busy" in message and "max_sessions_per_user" in message
        # A client that ends its session (DELETE) frees its place at once.
        ended = await http.delete(url, headers=headers("alice-token", sessions[0]))
        assert ended.status_code == 200
        opened = await open_session(http, url, "alice-token")
        assert opened.status_code == 200, opened.text
        assert [await alive(http, url, "alice-token", s) for s in sessions[1:]] == [True, True]
        for stream in streams:
            await stream.aclose()


ALICE = {"Authorization": "token alice-token"}


def sessionless(stack: AsyncExitStack, server_url: str, name: str):
    """A 2026-07-28 client of Alice's named ``name`` (its clientInfo), closed with the stack."""
    info = Implementation(name=name, version="1")
    return stack.enter_async_context(connect(server_url, ALICE, STATELESS, client_info=info))


async def test_sessionless_clients_count_toward_the_cap_one_per_client_name(server_url):
    """A 2026 client holds no MCP session; its agent (token + client name) is its session here."""
    async with AsyncExitStack() as stack, PanelAPI(server_url, ALICE) as panel:
        for n in range(6):
            await ok(await sessionless(stack, server_url, f"agent-{n}"), "list_files")
        listed = [s["client"]["name"] for s in (await panel.get("sessions"))["sessions"]]
    # One token, six client names: her three newest agents are listed; the older ones were closed.
    assert listed == ["agent-3", "agent-4", "agent-5"]


async def test_a_sessionless_client_sending_made_up_session_ids_is_still_counted(server_url):
    """The SDK serves a 2026 request outside any session whatever Mcp-Session-Id it carries."""
    async with AsyncExitStack() as stack, PanelAPI(server_url, ALICE) as panel:
        for n in range(5):
            made_up = {**ALICE, "Mcp-Session-Id": f"made-up-{n}"}
            info = Implementation(name="same-agent", version="1")
            client = await stack.enter_async_context(
                connect(server_url, made_up, STATELESS, client_info=info)
            )
            await ok(client, "list_files")
        listed = [s["client"]["name"] for s in (await panel.get("sessions"))["sessions"]]
    assert listed == ["same-agent"]


async def test_a_session_id_naming_someone_elses_sessionless_agent_does_not_end_it(server_url):
    bob = {"Authorization": "token bob-token"}
    async with (
        connect(server_url, bob, STATELESS, client_info=Implementation(name="bobs", version="1")) as agent,
        PanelAPI(server_url, bob) as panel,
        httpx.AsyncClient(timeout=30) as http,
    ):
        await ok(agent, "list_files")
        (listed,) = (await panel.get("sessions"))["sessions"]
        for method in ("POST", "DELETE"):  # Alice presents "the session" of Bob's agent
            sent = await http.request(
                method,
                f"{server_url}mcp",
                headers=headers("alice-token", f"sessionless:{listed['id']}"),
                json={"jsonrpc": "2.0", "id": 9, "method": "ping"},
            )
            assert sent.status_code == 404
        still = (await panel.get("sessions"))["sessions"]
    assert [s["id"] for s in still] == [listed["id"]]


async def test_busy_sessionless_clients_are_not_closed_and_the_refusal_says_why(server_url, make_notebook):
    path = make_notebook("cap.ipynb")
    async with AsyncExitStack() as stack, PanelAPI(server_url, ALICE) as panel:
        # Three agents busy (each waiting for a person's approval) are not closed to make room.
        await panel.post("policy", {"mode": "ask"})
        waiting = [
            asyncio.create_task(a.call_tool("execute_code", {"path": path, "code": "1"}))
            for a in [await sessionless(stack, server_url, f"busy-{n}") for n in range(3)]
        ]

        async def three_waiting():
            return len((await panel.get("approvals"))["approvals"]) == 3

        await panel.until(three_waiting)
        try:
            await (await sessionless(stack, server_url, "one-more")).call_tool("list_files", {})
            refusal = ""
        except MCPError as err:
            refusal = str(err)
        await panel.post("policy", {"mode": "full"})
        for approval in (await panel.get("approvals"))["approvals"]:
            await panel.post(f"approvals/{approval['id']}", {"decision": "deny"})
        await asyncio.gather(*waiting)
        listed = [s["client"]["name"] for s in (await panel.get("sessions"))["sessions"]]
    assert "max_sessions_per_user" in refusal and "one session per client name" in refusal, refusal
    assert listed == ["busy-0", "busy-1", "busy-2"]
