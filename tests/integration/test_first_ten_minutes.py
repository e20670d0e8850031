"""What a new user meets first: errors that say what to do, a quiet log, empty notebooks that stay
empty, bodies as large as the file limit, and streams that survive a dropped connection."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import httpx
import httpx2
import nbformat
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from ..support.mcp_client import RAW_HEADERS, connect, ok, raw_session
from ..support.yclient import YPeer

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def token_of(jp_auth_header: dict[str, str]) -> str:
    return jp_auth_header["Authorization"].split()[-1]


# --- errors that say what to do -------------------------------------------------------------


@pytest.mark.parametrize(
    ("auth", "status", "says"),
    [
        # Nothing sent: MCP's authorization spec wants a 401 naming the resource metadata (OAuth).
        ({}, 401, "needs authorization"),
        ({"Authorization": "token wrong"}, 403, "was not accepted"),
        ({"Authorization": "Bearer wrong"}, 403, "was not accepted"),
    ],
    ids=["no-token", "wrong-token", "wrong-bearer"],
)
async def test_a_request_without_a_valid_token_is_told_how_to_send_one(server_url, auth, status, says):
    async with httpx.AsyncClient() as http:
        for method in ("POST", "GET", "DELETE"):
            response = await http.request(
                method, f"{server_url}mcp", headers={**RAW_HEADERS, **auth}, json=PING
            )
            assert response.status_code == status, (method, response.status_code)
            if status == 401:
                challenge = response.headers["WWW-Authenticate"]
                assert (
                    challenge
                    == f'Bearer resource_metadata="{server_url}.well-known/oauth-protected-resource/mcp"'
                )

            message = response.json()["error"]["message"]
            assert says in message and "'Authorization: Bearer <token>'" in message, message
            assert "jupyter mcp token create" in message and "Authorization: token" not in message
            assert "xsrf" not in response.text.lower()


async def test_a_cookie_authenticated_post_keeps_its_xsrf_protection(server_url, jp_auth_header):
    async with httpx.AsyncClient() as http:
        login = await http.get(f"{server_url}api/status", params={"token": token_of(jp_auth_header)})
        assert login.status_code == 200 and http.cookies
        response = await http.post(f"{server_url}mcp", headers=RAW_HEADERS, json=PING)
    assert response.status_code == 403
    assert "xsrf" in response.text.lower()


async def test_a_token_in_the_query_string_works(server_url, jp_auth_header, make_notebook):
    make_notebook("q.ipynb")
    url = f"{server_url}mcp?token={token_of(jp_auth_header)}"
    http = httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=60))
    async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        listed = await ok(client, "list_notebooks")
    assert [n["path"] for n in listed["notebooks"]] == ["q.ipynb"]


# --- quiet logs -----------------------------------------------------------------------------


async def test_oauth_discovery_elsewhere_is_answered_404_without_a_warning(server_url, jp_http_port, caplog):
    # This server's own discovery answers (test_oauth.py); the host-root paths of another base_url do not.
    origin = f"http://127.0.0.1:{jp_http_port}"
    probes = [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/mcp",
        "/.well-known/openid-configuration",
    ]
    caplog.set_level(logging.DEBUG)
    async with httpx.AsyncClient() as http:
        for path in probes:
            response = await http.get(origin + path)
            assert response.status_code == 404, path
            assert response.json()["error"] == "not_found"
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING and "well-known" in r.getMessage()]
    assert loud == []
    assert any("well-known" in r.getMessage() for r in caplog.records)  # still logged, at debug


# --- create_notebook leaves exactly the cells it was given ---------------------------------


def cells_on_disk(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells]


async def until(condition, timeout: float = 10.0) -> None:
    """Wait for ``condition``; a file caught mid-save (empty, half written) counts as not yet."""
    for _ in range(int(timeout / 0.1)):
        try:
            if condition():
                return
        except (ValueError, OSError):  # nbformat's NotJSONError is a ValueError
            pass
        await asyncio.sleep(0.1)
    assert condition()


async def test_an_empty_notebook_stays_empty_when_a_tab_opens_it_first(
    server_url, jp_auth_header, jp_root_dir: Path
):
    async with connect(server_url, jp_auth_header) as client:
        created = await ok(client, "create_notebook", path="empty.ipynb")
        assert created["cell_ids"] == []
        async with YPeer(server_url, jp_auth_header, "empty.ipynb") as person:
            await person.wait_for(lambda nb: len(nb.ycells) == 0, timeout=10)
            outline = await ok(client, "get_notebook", path="empty.ipynb")
            assert outline["cells"] == []
            inserted = await ok(client, "insert_cells", path="empty.ipynb", cells=[{"source": "x = 1"}])
            assert len(inserted["cell_ids"]) == 1
            assert await person.wait_for(lambda nb: [str(c["source"]) for c in nb.ycells], timeout=10) == [
                "x = 1"
            ]
    await until(lambda: cells_on_disk(jp_root_dir / "empty.ipynb") == ["x = 1"])


async def test_an_empty_notebook_stays_empty_when_the_agent_opens_it_first(
    server_url, jp_auth_header, jp_root_dir: Path
):
    async with connect(server_url, jp_auth_header) as client:
        await ok(client, "create_notebook", path="e2.ipynb")
        assert (await ok(client, "get_notebook", path="e2.ipynb"))["cells"] == []
        async with YPeer(server_url, jp_auth_header, "e2.ipynb") as person:
            await asyncio.sleep(0.5)
            assert len(person.notebook.ycells) == 0
        await asyncio.sleep(1.5)  # past the save delay: nothing was added and saved
    await until(lambda: cells_on_disk(jp_root_dir / "e2.ipynb") == [])


async def test_a_filler_cell_is_not_taken_from_a_notebook_that_has_cells(
    server_url, jp_auth_header, make_notebook, jp_root_dir: Path
):
    # A real empty trusted cell on disk is the person's, not jupyter_ydoc's filler: it stays.
    make_notebook("one.ipynb", cells=[{"cell_type": "code", "source": "", "metadata": {"trusted": True}}])
    async with connect(server_url, jp_auth_header) as client:
        assert len((await ok(client, "get_notebook", path="one.ipynb"))["cells"]) == 1


# --- bodies as large as the file limit, and nothing buffered before authentication -------------


async def test_a_9_mb_write_file_under_the_10_mb_limit_is_a_tool_call(
    server_url, jp_auth_header, jp_root_dir: Path
):
    content = ("0123456789abcdef" * 64 + "\n") * 8800  # about 9 MB
    assert 9_000_000 < len(content) < 10_000_000
    async with connect(server_url, jp_auth_header) as client:
        written = await ok(client, "write_file", path="big.txt", content=content)
    assert written["path"] == "big.txt"
    assert (jp_root_dir / "big.txt").read_text() == content


async def raw_request(
    port: int, path: str, headers: dict[str, str], timeout: float = 10
) -> tuple[int, bytes]:
    """Send only a request's headers (announcing a body that never comes); return the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        writer.write(head.encode())
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), timeout)
        rest = await asyncio.wait_for(reader.read(4096), timeout)
        return int(status_line.split()[1]), rest
    finally:
        writer.close()


async def test_an_oversized_body_is_refused_from_its_headers(server_url, jp_http_port, jp_auth_header):
    path = server_url.split(str(jp_http_port), 1)[1] + "mcp"
    status, rest = await raw_request(
        jp_http_port, path, {**RAW_HEADERS, **jp_auth_header, "Content-Length": str(500_000_000)}
    )
    assert status == 413
    assert b"max_file_bytes" in rest


async def test_an_unauthenticated_body_is_refused_before_it_is_read(server_url, jp_http_port):
    path = server_url.split(str(jp_http_port), 1)[1] + "mcp"
    status, rest = await raw_request(jp_http_port, path, {**RAW_HEADERS, "Content-Length": str(100_000_000)})
    assert status == 401
    assert b"needs authorization" in rest


async def test_a_chunked_body_over_the_limit_gets_413(server_url, jp_auth_header):
    async def chunks():
        for _ in range(25):
            yield b"x" * 1_000_000  # 25 MB, over the 21 MB a 10 MB file limit allows

    async with httpx.AsyncClient(timeout=60) as http:
        response = await http.post(
            f"{server_url}mcp", headers={**RAW_HEADERS, **jp_auth_header}, content=chunks()
        )
    assert response.status_code == 413
    assert "max_file_bytes" in response.json()["error"]["message"]


# --- resumable streams ---------------------------------------------------------------------


def sse_events(text: str) -> list[dict[str, str]]:
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            name, _, value = line.partition(":")
            fields[name] = fields.get(name, "") + value.removeprefix(" ")
        if fields:
            events.append(fields)
    return events


async def test_a_dropped_stream_resumes_with_the_long_calls_result(server_url, jp_auth_header, make_notebook):
    make_notebook("long.ipynb")
    url = f"{server_url}mcp"
    version = "2025-11-25"  # the first with the priming event a resuming client needs
    async with httpx.AsyncClient(headers={**RAW_HEADERS, **jp_auth_header}, timeout=60) as http:
        session = await raw_session(http, url, version)
        await http.post(url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {
                "name": "execute_code",
                "arguments": {"path": "long.ipynb", "code": "import time; time.sleep(3); print('finished')"},
            },
        }
        # The first event is the priming event: an id, no data, and the retry interval.
        async with http.stream("POST", url, headers=session, json=call) as stream:
            first = b""
            async for chunk in stream.aiter_bytes():
                first += chunk
                if b"\n\n" in first.replace(b"\r\n", b"\n"):
                    break
        # ...and then the connection drops (a proxy cutting it), long before the call ends.
        priming = sse_events(first.decode())[0]
        assert priming["id"] and priming.get("data", "") == "" and priming["retry"] == "1000"
        await asyncio.sleep(1)  # the retry interval: the call is still running
        # Reconnect as a client does: with the last event id seen, again after each stream that ends
        # without the result (a replay that finds the call still running ends once it has caught up).
        last, text = priming["id"], ""
        for _ in range(30):
            resume = {**session, "Accept": "text/event-stream", "Last-Event-ID": last}
            async with http.stream("GET", url, headers=resume) as resumed:
                assert resumed.status_code == 200
                async for chunk in resumed.aiter_text():
                    text += chunk
                    if '"id":7' in text and text.replace("\r\n", "\n").endswith("\n\n"):
                        break
            if '"id":7' in text:
                break
            last = next((e["id"] for e in reversed(sse_events(text)) if e.get("id")), last)
            await asyncio.sleep(1)  # the retry interval
    events = [e for e in sse_events(text) if e.get("data")]
    results = [json.loads(e["data"]) for e in events if '"id":7' in e["data"]]
    assert results, text
    assert not results[0]["result"]["isError"]
    assert "finished" in json.dumps(results[0]["result"])
    assert all(e["id"] for e in events)


class TestInJupyterLab:
    """The empty notebook opened by a person in JupyterLab (headless Chromium), not only by a Yjs peer."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config, tmp_path: Path):
        from ..support.browser import with_lab

        return with_lab(jp_server_config, tmp_path / "lab-settings", starts_kernel=False)  # it runs no code

    async def test_the_agents_first_insert_replaces_the_blank_cell_jupyterlab_shows(
        self, server_url, jp_auth_header, jp_root_dir: Path
    ):
        from playwright.async_api import expect

        from ..support.browser import CHROMIUM, lab_tab

        if not CHROMIUM.exists():
            pytest.skip(f"no Chromium at {CHROMIUM}")
        async with connect(server_url, jp_auth_header) as agent:
            await ok(agent, "create_notebook", path="fresh.ipynb")
            async with lab_tab(server_url, token_of(jp_auth_header), "fresh.ipynb") as tab:
                # JupyterLab keeps one cell on screen: it adds its own blank cell to an empty notebook.
                await expect(tab.cells).to_have_count(1)
                await asyncio.sleep(1.5)  # past the save delay
                # The agent's first insert replaces that placeholder instead of landing after it.
                inserted = await ok(
                    agent, "insert_cells", path="fresh.ipynb", cells=[{"source": "first = 1"}]
                )
                assert inserted["index"] == 0
                await expect(tab.cells).to_have_count(1)
                await expect(tab.lines(0)).to_have_text(["first = 1"])
                outline = await ok(agent, "get_notebook", path="fresh.ipynb")
                assert [c["id"] for c in outline["cells"]] == inserted["cell_ids"]
                await until(lambda: cells_on_disk(jp_root_dir / "fresh.ipynb") == ["first = 1"])
