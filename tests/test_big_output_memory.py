"""A big print is held by the server once, not three times (issue 21).

ipykernel sends a 24 MB print as one message. jupyter_server's activity watcher receives it on its
own subscription and copies it to ``bytes``; a subscription of ours would receive it a third time.
The extension receives on the watcher's stream without the copy, so what Python holds at the peak
of an agent's run is about what the notebook keeps, not a multiple of what the cell printed.
"""

from __future__ import annotations

import json
import tracemalloc

import pytest
from tornado.httpclient import AsyncHTTPClient

from .mcp_client import connect, ok

PRINTED = 24 * 1024 * 1024
CODE = f"print('x' * {PRINTED})"
KEPT = 1_000_000


@pytest.fixture
def jp_server_config(jp_server_config):
    jp_server_config.MCPExtensionApp.max_document_output_bytes = KEPT
    return jp_server_config


async def _kernel(server_url: str, headers: dict[str, str]) -> dict:
    body = (await AsyncHTTPClient().fetch(f"{server_url}api/kernels", headers=headers)).body
    (kernel,) = json.loads(body)
    return kernel


async def test_a_big_print_is_held_once(server_url, jp_auth_header, make_notebook):
    path = make_notebook("flood.ipynb", cells=[CODE])
    async with connect(server_url, jp_auth_header) as agent:
        cell_id = (await ok(agent, "get_notebook", path=path))["cells"][0]["id"]
        await ok(agent, "execute_code", path=path, code="0")  # the kernel is up and linked
        before = await _kernel(server_url, jp_auth_header)
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            out = await ok(agent, "execute_cells", path=path, cell_ids=[cell_id], timeout=120)
            peak = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
        after = await _kernel(server_url, jp_auth_header)
    print(f"traced peak {peak / 1e6:.1f} MB for a {PRINTED / 1e6:.0f} MB print")
    assert out["status"] == "ok", out
    assert "Output limit reached" in str(out)  # the agent's bounded result says it was cut
    assert peak < 0.25 * PRINTED, f"{peak / 1e6:.1f} MB held for a {PRINTED / 1e6:.0f} MB print"
    # The server's own activity watcher still sees the kernel's messages on the shared stream.
    assert after["execution_state"] == "idle" and after["last_activity"] > before["last_activity"]
