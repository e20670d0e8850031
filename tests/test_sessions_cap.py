"""One client cannot lock others out by opening sessions (issue 9, finding 6)."""

from __future__ import annotations

import httpx
import pytest
from jupyter_server.auth import IdentityProvider, User
from traitlets.config import Config

from .mcp_client import RAW_HEADERS, RAW_INITIALIZE

INIT = RAW_INITIALIZE
ACCEPT = RAW_HEADERS
TOKENS = {"alice-token": "alice", "bob-token": "bob", "carol-token": "carol"}


class ThreeUsers(IdentityProvider):
    """Three people, each with a token of their own, as on a JupyterHub with shared servers."""

    async def get_user_token(self, handler):
        name = TOKENS.get(self.get_token(handler) or "")
        return User(name) if name else None


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    jp_server_config.ServerApp.identity_provider_class = ThreeUsers
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
