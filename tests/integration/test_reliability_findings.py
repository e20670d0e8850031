"""Regression tests for findings 5 and 9 of the hostile review (issue 9): subscriptions that outlived
their session, runs another user could read, progress without a run id, and secrets served to agents."""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import warnings
from pathlib import Path
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

from ..support.mcp_client import RAW_HEADERS, RAW_INITIALIZE, RAW_VERSION, connect, fails, ok
from ..support.yclient import YPeer

IDLE_SECONDS = 2.0


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    # A session with no request in flight for this long is closed by the SDK (a client that vanished).
    jp_server_config.MCPExtensionApp.session_idle_timeout = IDLE_SECONDS
    jp_server_config.ServerApp.identity_provider_class = TwoUsers
    # Hidden files served, as many set it: the deny-list, not the hidden-file rule, keeps .env away.
    jp_server_config.ContentsManager.allow_hidden = True
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
    base = {**headers, **RAW_HEADERS}
    answer = await http.post(f"{server_url}mcp", json=RAW_INITIALIZE, headers=base)
    assert answer.status_code == 200, answer.text
    session = {
        **base,
        "Mcp-Session-Id": answer.headers["mcp-session-id"],
        "Mcp-Protocol-Version": RAW_VERSION,
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


# -- finding 9: run ids in progress, runs tied to their user, secret files --------------------------

SLOW_PRINT = "import time\nfor i in range(4):\n    print('step', i, flush=True)\n    time.sleep(0.5)"


async def test_a_client_that_drops_mid_call_finds_its_run_from_the_first_progress(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("drop.ipynb")
    messages: list[str] = []
    first = asyncio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")
        first.set()

    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "execute_code", path=path, code="1")  # the kernel is up: the run starts at once
        call = asyncio.create_task(
            agent.call_tool("execute_code", {"path": path, "code": SLOW_PRINT}, progress_callback=on_progress)
        )
        with anyio.fail_after(30):
            await first.wait()
        call.cancel()  # the client drops: it never sees the result, only that first notification
        with contextlib.suppress(asyncio.CancelledError):
            await call
    assert messages[0].startswith("execution "), messages
    execution_id = messages[0].split()[1]
    async with connect(server_url, jp_auth_header) as again:
        run = await ok(again, "get_execution", execution_id=execution_id, wait=30)
    assert run["status"] == "ok"
    assert "step 3" in run["cells"][0]["outputs"][0]["text"]


async def test_runs_are_visible_only_to_the_user_who_started_them(server_url, jp_auth_header, make_notebook):
    path = make_notebook("mine.ipynb")
    async with (
        connect(server_url, jp_auth_header) as alice,
        connect(server_url, bob(jp_auth_header)) as other,
    ):
        started = await ok(alice, "execute_code", path=path, code="print('alice was here')")
        execution_id = started["execution_id"]
        assert "No execution" in await fails(other, "get_execution", execution_id=execution_id)
        again = await ok(alice, "get_execution", execution_id=execution_id)
    assert "alice was here" in again["cells"][0]["outputs"][0]["text"]


SECRETS = {
    "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----",
    "keys/server.pem": "-----BEGIN CERTIFICATE-----",
    "deploy/credentials.json": '{"token": "s3cr3t"}',
    "tls/site.KEY": "-----BEGIN PRIVATE KEY-----",
    "proj/.git/config": "[remote]\nurl = https://user:pat@example.com",
}


@pytest.fixture
def secret_files(jp_root_dir: Path) -> Path:
    for name, content in SECRETS.items():
        (jp_root_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (jp_root_dir / name).write_text(content)
    (jp_root_dir / ".env").write_text("API_KEY=s3cr3t")
    (jp_root_dir / ".env.local").write_text("API_KEY=s3cr3t")
    os.symlink(".env", jp_root_dir / "settings.txt")  # a link with an ordinary name, to a secret
    os.symlink("keys", jp_root_dir / "certs")  # a folder link: certs/server.pem is keys/server.pem
    (jp_root_dir / "notes.txt").write_text("ordinary")
    return jp_root_dir


async def test_secret_files_are_refused_by_name_and_through_links(
    server_url, jp_auth_header, make_notebook, secret_files
):
    notebook = make_notebook("aws_credentials.ipynb", cells=["key = 'AKIA...'"])
    async with connect(server_url, jp_auth_header) as agent:
        for path in [*SECRETS, ".env", ".env.local", "settings.txt", "certs/server.pem"]:
            for tool in ("read_file", "download_file"):
                message = await fails(agent, tool, path=path)
                assert "denied_files" in message and "secret" in message, message
                assert "s3cr3t" not in message and "BEGIN" not in message
        assert "denied_files" in await fails(agent, "write_file", path="settings.txt", content="API_KEY=x")
        assert "denied_files" in await fails(
            agent, "edit_file", path="id_rsa", old_string="BEGIN", new_string="x"
        )
        assert "denied_files" in await fails(agent, "rename_path", path="id_rsa", new_path="id.txt")
        assert "denied_files" in await fails(agent, "rename_path", path="notes.txt", new_path="notes.pem")
        assert "denied_files" in await fails(agent, "delete_path", path="keys/server.pem")
        assert "denied_files" in await fails(agent, "get_notebook", path=notebook)
        assert "denied_files" in await fails(agent, "create_notebook", path="credentials.ipynb")
        assert "ordinary" in (await ok(agent, "read_file", path="notes.txt"))["content"]
    assert (secret_files / ".env").read_text() == "API_KEY=s3cr3t"
    assert (secret_files / "id_rsa").exists() and (secret_files / "keys/server.pem").exists()
    assert not (secret_files / "notes.pem").exists()


# -- found by the reliability suite ------------------------------------------------------------------


async def test_huge_argument_lists_and_repeated_ids_are_answered_at_once(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("ids.ipynb", cells=["x = 1", "y = 2"])
    async with connect(server_url, jp_auth_header) as agent:
        cell_id = (await ok(agent, "get_notebook", path=path))["cells"][0]["id"]
        # 5,000 copies of one id: the cell once (it was rendered 5,000 times, freezing the loop ~1 s).
        read = await ok(agent, "read_cells", path=path, cell_ids=[cell_id] * 5_000)
        assert [c["id"] for c in read["cells"]] == [cell_id]
        # 20,000 bad list items: refused before validation built 20,000 errors on the event loop.
        message = await fails(agent, "insert_cells", path=path, cells=list(range(20_000)))
        assert "more than 10000 values" in message
        assert len((await ok(agent, "get_notebook", path=path))["cells"]) == 2
