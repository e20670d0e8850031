"""A sessionless (2026-07-28) client hears of notebook changes through ``subscriptions/listen`` as a
handshake-era client does through ``resources/subscribe``, from the same one watcher per file."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from jupyter_mcp_ext.tools.resources import MAX_SUBSCRIPTIONS, notebook_uri

from ..integration.test_reliability_findings import watcher_tasks
from ..support.mcp_client import STATELESS, connect, ok
from ..support.yclient import YPeer


@asynccontextmanager
async def listener(server_url: str, headers: dict[str, str], uri: str) -> AsyncIterator[list[str]]:
    """A 2026 client listening for ``uri``; yields the URIs of the events it has received so far."""
    heard: list[str] = []
    async with (
        connect(server_url, headers, STATELESS) as client,
        client.listen(resource_subscriptions=[uri]) as subscription,
    ):

        async def collect() -> None:
            async for event in subscription:
                heard.append(event.uri)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(collect)
            yield heard
            tasks.cancel_scope.cancel()


@asynccontextmanager
async def subscriber(server_url: str, headers: dict[str, str], uri: str) -> AsyncIterator[list[str]]:
    """A handshake-era client subscribed to ``uri``."""
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            heard.append(message.params.uri)

    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60))
    transport = streamable_http_client(f"{server_url}mcp", http_client=http)
    async with http, Client(transport, mode="legacy", message_handler=on_message) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated in 2026, still the handshake-era way
            await client.subscribe_resource(uri)
        yield heard


async def until(condition: Any, timeout: float = 5.0) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await asyncio.sleep(0.05)


async def test_listeners_and_a_subscriber_each_hear_another_agents_edit_once(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("shared.ipynb", cells=[{"id": "c1", "source": "x = 1"}])
    uri = notebook_uri(path)
    async with connect(server_url, jp_auth_header, STATELESS) as editor:
        async with AsyncExitStack() as stack:
            first = await stack.enter_async_context(listener(server_url, jp_auth_header, uri))
            second = await stack.enter_async_context(listener(server_url, jp_auth_header, uri))
            legacy = await stack.enter_async_context(subscriber(server_url, jp_auth_header, uri))
            assert len(watcher_tasks()) == 1
            # No room holds the notebook: the agent's edit opens one and changes it at once.
            await ok(editor, "update_cell", path=path, cell_id="c1", source="x = 2")
            await until(lambda: first and second and legacy)
            await asyncio.sleep(0.8)  # one watcher for the file: no second notification follows
            assert (first, second, legacy) == ([uri], [uri], [uri])
        # Every listen stream and the session ended: the watcher goes with them.
        await until(lambda: not watcher_tasks())


async def test_one_listener_leaving_keeps_the_others_informed(server_url, jp_auth_header, make_notebook):
    path = make_notebook("kept.ipynb", cells=[{"id": "c1", "source": "x = 1"}])
    uri = notebook_uri(path)
    async with listener(server_url, jp_auth_header, uri) as staying:
        async with listener(server_url, jp_auth_header, uri):
            pass
        async with connect(server_url, jp_auth_header, STATELESS) as editor:
            await ok(editor, "update_cell", path=path, cell_id="c1", source="x = 3")
            await until(lambda: staying == [uri])


async def test_a_listen_for_what_the_caller_may_not_read_is_refused(
    server_url, jp_auth_header, make_notebook
):
    make_notebook("my_credentials.ipynb")
    async with connect(server_url, jp_auth_header, STATELESS) as client:
        for uri, reason in [
            ("notebook:///my_credentials.ipynb", "looks like a secret"),
            ("notebook:///gone.ipynb", "No notebook at 'gone.ipynb'"),
            ("notebook:///../up.ipynb", r"'\.\.' segment"),
        ]:
            with pytest.raises(MCPError, match=reason):
                async with client.listen(resource_subscriptions=[uri]):
                    pass
        many = [
            f"notebook:///n{i}.ipynb" for i in range(MAX_SUBSCRIPTIONS + 1)
        ]  # refused before any is resolved
        with pytest.raises(MCPError, match=f"at most {MAX_SUBSCRIPTIONS:,} notebooks"):
            async with client.listen(resource_subscriptions=many):
                pass
        assert not watcher_tasks()


async def test_a_person_opening_the_notebook_is_no_change_but_their_typing_is(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("opened.ipynb", cells=[{"id": "c1", "source": "x = 1"}])
    uri = notebook_uri(path)
    async with listener(server_url, jp_auth_header, uri) as heard:
        await asyncio.sleep(0.3)  # the watcher has seen the file with no room
        async with YPeer(server_url, jp_auth_header, path) as person:
            await asyncio.sleep(1.5)  # the watcher has found the room: the same notebook
            assert heard == []
            person.insert_text(0, 5, "0")
            await person.flush()
            await until(lambda: heard == [uri])
