"""Agents working flat out, in a process of their own: ``python -m benchmarks.agents URL TOKEN PATH...``.

One MCP session per notebook path calls ``read_cells``, ``insert_cells`` and ``delete_cells`` in a
loop for ``--seconds``, then prints one JSON line: calls and errors per session, and this process's
own CPU. A separate process, so that the clients' CPU (the SDK client spends about 2.8 ms a call)
is not the server's: what a person feels is then what the server does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client


async def agent(url: str, token: str, path: str, seconds: float, ready: asyncio.Event, go: asyncio.Event):
    http = httpx2.AsyncClient(headers={"Authorization": f"token {token}"}, timeout=httpx2.Timeout(60))
    calls = errors = 0
    async with http, Client(streamable_http_client(f"{url}mcp", http_client=http), mode="legacy") as client:
        cells = (await client.call_tool("get_notebook", {"path": path})).structured_content or {}
        target = cells["cells"][0]["id"]
        ready.set()
        await go.wait()
        end, step, new = time.monotonic() + seconds, 0, []
        # Each call counts, and the time is up between any two: on a loaded machine a session may
        # make only a few calls, and counting whole rounds of three would make one extra look like twice.
        while time.monotonic() < end:
            try:
                if step == 0:
                    await client.call_tool("read_cells", {"path": path, "cell_ids": [target]})
                elif step == 1:
                    made = await client.call_tool(
                        "insert_cells", {"path": path, "cells": [{"source": "y = 1"}], "after": target}
                    )
                    new = (made.structured_content or {})["cell_ids"]
                else:
                    await client.call_tool("delete_cells", {"path": path, "cell_ids": new})
                calls += 1
                step = (step + 1) % 3
            except Exception:
                errors += 1
                step = 0
    return calls, errors


async def main(url: str, token: str, paths: list[str], seconds: float) -> None:
    readies = [asyncio.Event() for _ in paths]
    go = asyncio.Event()
    tasks = [
        asyncio.create_task(agent(url, token, p, seconds, r, go)) for p, r in zip(paths, readies, strict=True)
    ]
    await asyncio.gather(*(r.wait() for r in readies))
    print(json.dumps({"ready": True}), flush=True)
    cpu, start = time.process_time(), time.monotonic()
    go.set()
    results = await asyncio.gather(*tasks)
    wall = time.monotonic() - start
    print(
        json.dumps(
            {
                "calls": [c for c, _ in results],
                "errors": sum(e for _, e in results),
                "wall_s": wall,
                "client_cpu_s": time.process_time() - cpu,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("token")
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    asyncio.run(main(args.url, args.token, args.paths, args.seconds))
    sys.exit(0)
