"""``python -m benchmarks.refresh_loop [N] [--package DIR]``: an agent refreshing its OAuth tokens in a
loop, N times (default 1000), on one throwaway server: how long a refresh takes at the start and at
the end, how long a person's request takes meanwhile, and what the credentials store holds after.

``--package DIR``: a folder holding another ``jupyter_mcp_ext`` (e.g. ``git archive <commit>
jupyter_mcp_ext | tar -x -C DIR``) for the server, to compare with an older version.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import time
from pathlib import Path

import httpx

from tests.support.mcp_client import RAW_HEADERS, RAW_INITIALIZE
from tests.support.oauth_flow import Flow, person_logged_in
from tests.support.server import JupyterServer


def _p50(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _store(data: Path) -> str:
    """Size of the credentials store and how many tokens it keeps (old JSON file or SQLite)."""
    folder = data / "jupyter_mcp_ext"
    files = {p.name: p.stat().st_size for p in folder.iterdir() if p.is_file()}
    if (folder / "agents.sqlite").exists():
        db = sqlite3.connect(folder / "agents.sqlite")
        tokens = db.execute("SELECT COUNT(*) FROM tokens").fetchone()[0]
        used = db.execute("SELECT COUNT(*) FROM used").fetchone()[0]
        db.close()
    else:
        saved = json.loads((folder / "agents.json").read_text())
        tokens, used = len(saved["tokens"]), len(saved["used"])
    return f"files {files}; tokens kept {tokens}, spent refresh tokens kept {used}"


async def run(n: int, package: str | None) -> None:
    server = JupyterServer(prefix="jupyter-mcp-refresh-")
    if package:
        server.python_path = [package]
    server.start()
    try:
        async with httpx.AsyncClient(follow_redirects=False, timeout=30) as agent:
            flow = Flow(server.url, agent)
            await flow.discover()
            client = await flow.register()
            async with person_logged_in(server.url, server.token) as person:
                got = await flow.tokens(person, client)
            first_access = got["access_token"]
            refresh = got["refresh_token"]
            took: list[float] = []
            person_took: list[float] = []
            for i in range(n):
                start = time.perf_counter()
                answer = await flow.token(client, grant_type="refresh_token", refresh_token=refresh)
                took.append((time.perf_counter() - start) * 1000)
                answer.raise_for_status()
                refresh = answer.json()["refresh_token"]
                if i % 10 == 0:
                    start = time.perf_counter()
                    (await agent.get(server.url + "api/status", headers=server.headers)).raise_for_status()
                    person_took.append((time.perf_counter() - start) * 1000)
            old = await agent.post(
                server.url + "mcp",
                json=RAW_INITIALIZE,
                headers={**RAW_HEADERS, "Authorization": f"Bearer {first_access}"},
            )
        window = min(50, n // 2)
        print(
            f"{n} refreshes: p50 {_p50(took[:window]):.2f} ms (first {window}), "
            f"{_p50(took[-window:]):.2f} ms (last {window}), total {sum(took) / 1000:.1f} s; "
            f"GET /api/status meanwhile p50 {_p50(person_took):.2f} ms; "
            f"the first access token now opens a session: HTTP {old.status_code}"
        )
        print(_store(server.tmp / "data"))
    finally:
        server.stop()


def main() -> None:
    args = sys.argv[1:]
    package = None
    if "--package" in args:
        at = args.index("--package")
        package = args[at + 1]
        del args[at : at + 2]
    asyncio.run(run(int(args[0]) if args else 1000, package))


if __name__ == "__main__":
    main()
