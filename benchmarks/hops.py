"""Where an agent's call hands work to a worker thread: ``python -m benchmarks.hops [--seconds 6]``.

A diagnostic (issue 21). The server under test loads this module as an extension too: it wraps
anyio's ``run_sync_in_worker_thread`` and asyncio's ``run_in_executor`` and counts each hand-off by
its first callers outside anyio and asyncio. Four agents (``benchmarks.agents``) call flat out with
nobody else on the server; the counts per agent call are printed, most frequent first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

COUNTS: Counter[str] = Counter()
_SKIP = ("anyio/", "asyncio/", "concurrent/", "benchmarks/hops.py")


def _callers() -> str:
    out = []
    for frame in reversed(traceback.extract_stack()[:-2]):
        if any(skip in frame.filename for skip in _SKIP):
            continue
        out.append(f"{frame.filename.split('site-packages/')[-1]}:{frame.lineno} {frame.name}")
        if len(out) == 3:
            break
    return " <- ".join(out)


def _patch() -> None:
    from anyio._backends import _asyncio as backend

    hop = backend.AsyncIOBackend.run_sync_in_worker_thread.__func__  # type: ignore[attr-defined]

    async def counted(
        cls: Any, func: Any, args: Any, abandon_on_cancel: bool = False, limiter: Any = None
    ) -> Any:
        COUNTS[f"anyio: {_callers()}"] += 1
        return await hop(cls, func, args, abandon_on_cancel, limiter)

    backend.AsyncIOBackend.run_sync_in_worker_thread = classmethod(counted)  # type: ignore[method-assign]
    executor = asyncio.BaseEventLoop.run_in_executor

    def counted_executor(self: Any, pool: Any, func: Any, *args: Any) -> Any:
        COUNTS[f"executor: {_callers()}"] += 1
        return executor(self, pool, func, *args)

    asyncio.BaseEventLoop.run_in_executor = counted_executor  # type: ignore[method-assign]


class HopsHandler(APIHandler):
    auth_resource = "contents"

    @web.authenticated
    async def get(self) -> None:
        self.finish(json.dumps(COUNTS.most_common(40)))

    @web.authenticated
    async def delete(self) -> None:
        COUNTS.clear()
        self.finish("{}")


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    return [{"module": "benchmarks.hops"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    _patch()
    route = url_path_join(serverapp.base_url, "bench", "hops")
    serverapp.web_app.add_handlers(".*$", [(route, HopsHandler)])


def main() -> None:
    from tests.support.server import JupyterServer

    from .client import write_notebook

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--ystore-class", default="", help="YDocExtension.ystore_class of the server")
    args = parser.parse_args()
    store = [f"--YDocExtension.ystore_class={args.ystore_class}"] if args.ystore_class else []
    server = JupyterServer(
        extensions=["benchmarks.floor", "benchmarks.hops"], arguments=store, prefix="hops-"
    )
    server.start()
    try:
        paths = [write_notebook(server.root, f"agent-{i}.ipynb", 20).name for i in range(4)]
        repo = str(Path(__file__).resolve().parent.parent)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")])),
        }
        command = [sys.executable, "-m", "benchmarks.agents", server.url, server.token, *paths]
        agents = subprocess.Popen([*command, "--seconds", str(args.seconds)], stdout=subprocess.PIPE, env=env)
        assert agents.stdout is not None
        agents.stdout.readline()  # ready
        httpx.delete(f"{server.url}bench/hops", headers=server.headers).raise_for_status()
        result = json.loads(agents.stdout.read().decode().strip().splitlines()[-1])
        calls = sum(result["calls"])
        print(f"{calls} calls, {calls / result['wall_s']:.1f} calls/s; worker-thread hand-offs per call:")
        for where, n in httpx.get(f"{server.url}bench/hops", headers=server.headers).json():
            print(f"{n / calls:6.3f}  {where}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
