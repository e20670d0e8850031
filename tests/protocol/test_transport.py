"""The /mcp endpoint speaks MCP the way the SDK's own clients expect, in both protocol eras."""

from __future__ import annotations

import json

import httpx
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from ..support.mcp_client import MODES, RAW_HEADERS, RAW_INITIALIZE, connect, ok

INIT = RAW_INITIALIZE
ACCEPT = RAW_HEADERS


@pytest.mark.parametrize("mode", MODES)
async def test_agent_lists_tools_and_calls_one_in_each_protocol_era(
    server_url, jp_auth_header, make_notebook, mode
):
    make_notebook("hello.ipynb", cells=["print('hi')"])
    async with connect(server_url, jp_auth_header, mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"list_notebooks", "get_notebook", "read_cells", "insert_cells", "update_cell"} <= names
        assert "ids" in (client.instructions or "")
        listed = await ok(client, "list_notebooks")
        assert [n["path"] for n in listed["notebooks"]] == ["hello.ipynb"]


async def test_handshake_session_pings_sets_log_level_and_ends_with_delete(server_url, jp_auth_header):
    async with connect(server_url, jp_auth_header) as client:
        assert client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
        await client.send_ping()
        await client.set_logging_level("warning")
    # A raw session: the id comes back in a header, DELETE ends it, and then it is gone (404).
    async with httpx.AsyncClient(headers={**jp_auth_header, **ACCEPT}) as http:
        opened = await http.post(f"{server_url}mcp", json=INIT)
        assert opened.status_code == 200
        session = opened.headers["mcp-session-id"]
        ended = await http.delete(f"{server_url}mcp", headers={"mcp-session-id": session})
        assert ended.status_code in (200, 204)
        again = await http.post(
            f"{server_url}mcp",
            headers={"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"},
            json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
        )
        assert again.status_code == 404


async def test_session_is_kept_for_a_client_without_a_cookie_jar(server_url, jp_auth_header):
    # Jupyter names each cookie-less token request anew; the session must still be the client's.
    async with httpx.AsyncClient(headers={**jp_auth_header, **ACCEPT}) as http:
        session = (await http.post(f"{server_url}mcp", json=INIT)).headers["mcp-session-id"]
    async with httpx.AsyncClient(headers={**jp_auth_header, **ACCEPT}) as fresh:
        pong = await fresh.post(
            f"{server_url}mcp",
            headers={"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"},
            json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
        )
    assert pong.status_code == 200 and '"result"' in pong.text


async def test_get_stream_opens_as_server_sent_events(server_url, jp_auth_header):
    async with httpx.AsyncClient(headers={**jp_auth_header, **ACCEPT}, timeout=10) as http:
        opened = await http.post(f"{server_url}mcp", json=INIT)
        session = opened.headers["mcp-session-id"]
        headers = {
            "mcp-session-id": session,
            "mcp-protocol-version": "2025-06-18",
            "Accept": "text/event-stream",
        }
        await http.post(
            f"{server_url}mcp",
            headers=headers | {"Accept": ACCEPT["Accept"]},
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        )
        async with http.stream("GET", f"{server_url}mcp", headers=headers) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"[]", json.dumps({"jsonrpc": "2.0", "id": 1}).encode()],
    ids=["broken-json", "empty-batch", "no-method"],
)
async def test_malformed_json_rpc_gets_a_json_rpc_error_not_a_500(server_url, jp_auth_header, body):
    async with httpx.AsyncClient(headers={**jp_auth_header, **ACCEPT}) as http:
        response = await http.post(f"{server_url}mcp", content=body)
    assert 400 <= response.status_code < 500
    payload = response.json()
    assert payload["jsonrpc"] == "2.0" and "error" in payload
    assert "Traceback" not in response.text


async def test_unknown_tool_is_a_protocol_error_and_bad_arguments_a_tool_error(
    server_url, jp_auth_header, make_notebook
):
    make_notebook("n.ipynb", cells=["1"])
    async with connect(server_url, jp_auth_header) as client:
        bad = await client.call_tool("get_notebook", {"path": "n.ipynb", "colour": "red"})
        assert bad.is_error and "colour: unknown argument" in bad.content[0].text
        missing = await client.call_tool("get_notebook", {})
        assert missing.is_error and "path" in missing.content[0].text
        with pytest.raises(Exception, match="Unknown tool"):
            await client.call_tool("no_such_tool", {})


async def test_all_tool_definitions_fit_the_token_budget(server_url, jp_auth_header):
    async with connect(server_url, jp_auth_header) as client:
        listed = await client.list_tools()
    payload = json.dumps(
        [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools],
        separators=(",", ":"),
    )
    assert len(payload.encode()) < 16 * 1024, f"tools/list is {len(payload)} bytes"
    for tool in listed.tools:
        assert tool.output_schema is not None and tool.description
