"""The floods of the review of issue 18 (finding 6), against a server in a process of its own as the
review measured it: 30 refused ``write_file`` calls with 4 MB paths (policy read-only), then 40 runs
of 2.4 MB of code and 40 of 90 KB asking for approval (policy ask). What the server keeps stays
within its settings (their defaults); how much its memory grew is reported with the figures.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ..support.server import JupyterServer
from ..support.server_main import LAUNCHER
from . import figures
from .raw_client import RawClient
from .test_sessions_under_load import rss_bytes as server_rss
from .world import BOUNDS


@pytest.fixture
def own_server(tmp_path) -> Iterator[JupyterServer]:
    """A server in a process of its own, as the review measured it: its memory is its own."""
    server = JupyterServer(
        {"MCPExtensionApp": {"policy_file": str(tmp_path / "policy.json")}}, launcher=LAUNCHER
    )
    server.start()
    try:
        yield server
    finally:
        server.stop(gracefully=False)


@pytest.mark.timeout(300)
async def test_the_reviews_floods_stay_within_the_bounds(own_server):
    """Finding 6 as the review ran it: 30 refused ``write_file`` calls with 4 MB paths (read-only),
    then 40 runs of 2.4 MB of code and 40 of 90 KB asking for approval (ask). What the server keeps
    stays within its settings (defaults); the memory it grew by is reported."""
    agent = RawClient(own_server.url, own_server.headers)
    await agent.open()
    base, pid = f"{own_server.url}api/mcp/", own_server.pid
    async with httpx.AsyncClient(headers=own_server.headers, timeout=120) as http:
        before = server_rss(pid)
        assert (await http.post(base + "policy", json={"mode": "read-only"})).status_code == 200
        for i in range(30):
            status, message, _ = await agent.call(
                "write_file", {"path": f"{i}{'p' * 4_000_000}", "content": "x"}
            )
            assert status == 200 and message is not None and message["result"]["isError"]
        listing = await http.get(base + "journal", params={"limit": 1000})
        entries = len(listing.json()["entries"])
        assert len(listing.content) <= 16_384 * entries, (
            f"GET /api/mcp/journal: {len(listing.content):,} bytes"
        )
        after_paths = server_rss(pid)

        assert (await http.post(base + "policy", json={"mode": "ask"})).status_code == 200
        runs = [
            asyncio.ensure_future(
                agent.call("execute_code", {"path": "flood.ipynb", "code": f"# {i}\n{'1;' * size}"})
            )
            for size in (1_200_000, 45_000)
            for i in range(40)
        ]

        async def waiting() -> list[dict[str, Any]]:
            return (await http.get(base + "approvals")).json()["approvals"]

        async with asyncio.timeout(120):  # the calls over a bound answer, the others wait
            while sum(r.done() for r in runs) + len(await waiting()) < len(runs):
                await asyncio.sleep(0.2)
        cards = await waiting()
        after_runs = server_rss(pid)
        for card in cards:
            await http.post(base + f"approvals/{card['id']}", json={"decision": "deny"})
        await asyncio.gather(*runs)
    await agent.close()
    held = sum(len(c["code"] or "") for c in cards)
    assert len(cards) <= BOUNDS["max_pending_approvals"], f"{len(cards)} calls of one agent wait"
    assert held <= BOUNDS["max_pending_approvals"] * BOUNDS["max_approval_chars"]
    grown = max(after_paths, after_runs) - before
    figures.worst("worst server memory growth under the review's floods (MB)", grown / 1e6)
    figures.note(
        f"floods on a server process of its own: 30 refused write_file with 4 MB paths grew it "
        f"{(after_paths - before) / 1e6:.0f} MB, GET /api/mcp/journal then {len(listing.content):,} bytes; "
        f"80 runs of 2.4 MB / 90 KB asking for approval grew it {(after_runs - after_paths) / 1e6:.0f} MB more, "
        f"{len(cards)} waiting holding {held:,} characters"
    )
