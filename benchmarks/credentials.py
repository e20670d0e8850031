"""``python -m benchmarks.credentials``: MCP ping and update_cell with the Jupyter token and with an
agent token (issue 19), on one throwaway server; what an agent credential costs per request."""

from __future__ import annotations

import asyncio
import time
import warnings

import httpx
import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.server import JupyterServer

from .client import call, cell_ids, write_notebook


def _q(values: list[float], p: float) -> float:
    return sorted(values)[int(p * (len(values) - 1))]


async def measure(url: str, headers: dict[str, str], path: str, ids: list[str], n: int = 300) -> str:
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60))
    async with http, Client(streamable_http_client(url + "mcp", http_client=http), mode="legacy") as client:
        pings: list[float] = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ping is gone from the 2026 protocol; this session is older
            for i in range(n + 30):
                start = time.perf_counter()
                await client.send_ping()
                if i >= 30:
                    pings.append((time.perf_counter() - start) * 1000)
        edits: list[float] = []
        for i in range(n // 3 + 5):
            start = time.perf_counter()
            await call(client, "update_cell", path=path, cell_id=ids[i % len(ids)], source=f"x = {i}")
            if i >= 5:
                edits.append((time.perf_counter() - start) * 1000)
    return (
        f"ping p50 {_q(pings, 0.5):.2f} ms p90 {_q(pings, 0.9):.2f}; "
        f"update_cell p50 {_q(edits, 0.5):.2f} ms p90 {_q(edits, 0.9):.2f}"
    )


async def main() -> None:
    server = JupyterServer()
    server.start()
    try:
        notebook = write_notebook(server.root, "bench.ipynb", 20)
        ids = cell_ids(notebook)
        print("Jupyter token:", await measure(server.url, server.headers, notebook.name, ids))
        made = httpx.post(
            server.url + "api/mcp/agents", headers=server.headers, json={"name": "bench", "policy": "full"}
        )
        made.raise_for_status()
        agent = {"Authorization": f"Bearer {made.json()['token']}"}
        print("agent token:  ", await measure(server.url, agent, notebook.name, ids))
    finally:
        server.stop()


if __name__ == "__main__":
    asyncio.run(main())
