"""A finished MCP request leaves its body behind nowhere (issue 18, found by the property suite's
floods): an agent sending large refused calls must not make the server hold each body.

Tornado handlers of finished requests stay reachable for a while: a cancelled timer keeps the
contextvars context it was scheduled in (the request's scope, which names the handler) until its
deadline passes, and the loop drops cancelled timers only in batches of a hundred. With each
exchange keeping its body, 30 refused ``write_file`` calls with 4 MB paths grew a server process
by about 230 MB (about 380 MB after 90); the exchange now hands the body to the SDK and lets go.
"""

from __future__ import annotations

import gc
import tracemalloc

import httpx2

from ..support.mcp_client import RAW_HEADERS, raw_session

PATH_BYTES = 2_000_000


async def test_refused_calls_with_large_bodies_are_not_held(server_url, jp_auth_header, panel):
    url = f"{server_url}mcp"
    async with httpx2.AsyncClient(headers={**jp_auth_header, **RAW_HEADERS}, timeout=60) as http:
        session = await raw_session(http, url)
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        await panel.post("policy", {"mode": "read-only"})

        async def refused(calls: int) -> int:
            """Memory held after ``calls`` refused write_file calls with large paths."""
            for i in range(calls):
                call = {"name": "write_file", "arguments": {"path": f"{i}{'p' * PATH_BYTES}", "content": "x"}}
                body = {"jsonrpc": "2.0", "id": i + 2, "method": "tools/call", "params": call}
                answer = await http.post(url, json=body, headers=session)
                assert answer.status_code == 200 and "read-only" in answer.text
            gc.collect()
            return tracemalloc.get_traced_memory()[0]

        tracemalloc.start(1)
        try:
            # The first calls may leave what is kept once (the last request's, the agent's presence
            # naming its last path); the next twelve may not add one body each.
            settled = await refused(6)
            held = await refused(12) - settled
        finally:
            tracemalloc.stop()
    assert held < 2 * PATH_BYTES, f"12 refused calls of {PATH_BYTES:,} bytes left {held:,} more bytes held"
