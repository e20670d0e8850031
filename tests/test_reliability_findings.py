"""Regression tests for findings 5 and 9 of the hostile review (issue 9): subscriptions that outlived
their session, runs another user could read, progress without a run id, and secrets served to agents."""

from __future__ import annotations

import asyncio
import resource
import warnings
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from jupyter_server.auth import IdentityProvider, User
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from traitlets.config import Config

from jupyter_mcp_ext.tools.resources import notebook_uri

from .mcp_client import connect
from .yclient import YPeer

IDLE_SECONDS = 2.0


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    # A session with no request in flight for this long is closed by the SDK (a client that vanished).
    jp_server_config.MCPExtensionApp.session_idle_timeout = IDLE_SECONDS
    jp_server_config.ServerApp.identity_provider_class = TwoUsers
    return jp_server_config


class TwoUsers(IdentityProvider):
    """The test token is 'alice'; ``Authorization: token bob-<token>`` is another person (bob)."""

    async def get_user_token(self, handler: Any) -> User | None:
        given, token = self.get_token(handler), handler.token
        if not token or not given:
            return None
        return User("alice") if given == token else User("bob") if given == f"bob-{token}" else None


def bob(headers: dict[str, str]) -> dict[str, str]:
    return {"Authorization": headers["Authorization"].replace("token ", "token bob-")}


# -- finding 5: subscriptions outlive their session ------------------------------------------------


def watcher_tasks() -> list[asyncio.Task[Any]]:
    """The extension's watcher tasks running in the server's loop (the test's loop here)."""
    return [
        t
        for t in asyncio.all_tasks()
        if t.get_name().startswith("jupyter-mcp-ext") and "watch" in t.get_name()
    ]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def idle_cpu(seconds: float = 2.0) -> float:
    """CPU the server's process spends while nobody calls it."""
    before = cpu_seconds()
    await asyncio.sleep(seconds)
    return cpu_seconds() - before


async def subscribe_quietly(client: Client, uri: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated in 2026, still the handshake-era way
        await client.subscribe_resource(uri)


MANY = 200


@pytest.fixture
def many_notebooks(make_notebook) -> list[str]:
    return [make_notebook(f"many/nb{i:03}.ipynb", cells=[f"x = {i}"]) for i in range(MANY)]


async def test_a_sessions_subscriptions_end_with_it(server_url, jp_auth_header, many_notebooks):
    baseline = await idle_cpu()
    async with connect(server_url, jp_auth_header) as agent:
        for path in many_notebooks:
            await subscribe_quietly(agent, notebook_uri(path))
        assert watcher_tasks(), "subscriptions are watched"
        assert len(watcher_tasks()) == 1, "one task watches every file"
    # The client closed its session (HTTP DELETE): nothing of it keeps running.
    with anyio.fail_after(5):
        while watcher_tasks():
            await asyncio.sleep(0.05)
    spent = await idle_cpu()
    assert spent < baseline + 0.1, f"{spent:.2f} CPU-s in 2 s after the session ended (idle: {baseline:.2f})"


async def raw_session(server_url: str, headers: dict[str, str]) -> tuple[httpx2.AsyncClient, dict[str, str]]:
    """A client speaking the handshake over bare HTTP, which can vanish without a DELETE."""
    http = httpx2.AsyncClient(timeout=30)
    base = {**headers, "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    answer = await http.post(f"{server_url}mcp", json=init, headers=base)
    assert answer.status_code == 200, answer.text
    session = {
        **base,
        "Mcp-Session-Id": answer.headers["mcp-session-id"],
        "Mcp-Protocol-Version": "2025-06-18",
    }
    notified = await http.post(
        f"{server_url}mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session
    )
    assert notified.status_code == 202
    return http, session


async def test_a_vanished_clients_subscriptions_end_when_its_session_goes_idle(
    server_url, jp_auth_header, many_notebooks
):
    http, session = await raw_session(server_url, jp_auth_header)
    try:
        for i, path in enumerate(many_notebooks[:50]):
            request = {
                "jsonrpc": "2.0",
                "id": 10 + i,
                "method": "resources/subscribe",
                "params": {"uri": notebook_uri(path)},
            }
            answer = await http.post(f"{server_url}mcp", json=request, headers=session)
            assert answer.status_code == 200 and '"result"' in answer.text, answer.text
    finally:
        await http.aclose()
    assert watcher_tasks()
    # No DELETE: the client is just gone. The SDK closes the session once idle, and its watchers go.
    with anyio.fail_after(IDLE_SECONDS + 5):
        while watcher_tasks():
            await asyncio.sleep(0.1)


async def test_subscribers_share_a_watcher_and_one_leaving_keeps_the_others(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("shared.ipynb", cells=["x = 1"])
    uri = notebook_uri(path)
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            heard.append(message.params.uri)

    http = httpx2.AsyncClient(headers=jp_auth_header, timeout=httpx2.Timeout(30, read=60))
    transport = streamable_http_client(f"{server_url}mcp", http_client=http)
    async with (
        http,
        Client(transport, mode="legacy", message_handler=on_message) as stays,
        YPeer(server_url, jp_auth_header, path) as person,
    ):
        await subscribe_quietly(stays, uri)
        async with connect(server_url, jp_auth_header) as leaves:
            await subscribe_quietly(leaves, uri)
            assert len(watcher_tasks()) == 1
        await asyncio.sleep(0.3)
        person.insert_text(0, 5, "0")
        await person.flush()
        with anyio.fail_after(5):
            while heard != [uri]:
                await asyncio.sleep(0.05)
        assert len(watcher_tasks()) == 1
    with anyio.fail_after(5):
        while watcher_tasks():
            await asyncio.sleep(0.05)
