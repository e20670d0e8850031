"""A lab for the host tests: a Jupyter server in a process of its own (the hosts are processes too,
and the test's event loop waits on them), one per test module, and what the person does in its panel."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ..support.server_main import LAUNCHER
from ..support.server_process import REPO as HERE
from ..support.server_process import TOKEN, server_on_a_free_port


@dataclass
class Lab:
    url: str  # ends with "/"
    token: str  # the person's Jupyter token ("" where auth is off)
    started_in: float  # seconds the server took to start (reported by the module)

    @property
    def mcp(self) -> str:
        return f"{self.url}mcp"

    def panel(self) -> httpx.AsyncClient:
        """The MCP panel's REST API as the person's JupyterLab calls it."""
        headers = {"Authorization": f"token {self.token}"} if self.token else {}
        return httpx.AsyncClient(base_url=f"{self.url}api/mcp/", headers=headers, timeout=30)

    async def agents(self) -> list[dict[str, Any]]:
        async with self.panel() as panel:
            got = await panel.get("agents")
            assert got.status_code == 200, got.text
            return got.json()["agents"]

    async def revoke(self, client: str) -> None:
        """Revoke, as the person does in the panel's Agents list, every agent signed in as ``client``."""
        ids = [a["id"] for a in await self.agents() if a["client"] == client]
        assert ids, f"no agent {client!r} in the panel: {await self.agents()}"
        async with self.panel() as panel:
            for credential in ids:
                done = await panel.delete(f"agents/{credential}")
                assert done.status_code == 200, done.text

    async def accepts(self, access_token: str) -> bool:
        """Whether ``/mcp`` takes this bearer token (it starts a session), as a host's next call would find."""
        headers = {
            "Authorization": f"Bearer {access_token}",
            "Accept": "application/json, text/event-stream",
        }
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        async with httpx.AsyncClient(timeout=30) as http:
            answer = await http.post(self.mcp, json=body, headers=headers)
        assert answer.status_code in (200, 401), answer.text
        return answer.status_code == 200


@contextmanager
def lab_on(
    work: Path,
    *args: str,
    token: str = TOKEN,
    env: Mapping[str, str] | None = None,
    launcher: Sequence[str] = LAUNCHER,
) -> Iterator[Lab]:
    """A lab on ``work`` (its root, config and data folders) with ``args`` (traitlets options); its
    person's token is ``token`` ("": auth off); ``env`` and ``launcher`` for its process alone."""
    for name in ("root", "config", "data", "runtime", "state"):
        (work / name).mkdir(exist_ok=True)
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("JUPYTERHUB_")},
        "JUPYTER_CONFIG_DIR": str(work / "config"),
        "JUPYTER_DATA_DIR": str(work / "data"),
        "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
        **(env or {}),
    }

    def arguments(port: int) -> list[str]:
        return ["--ip=127.0.0.1", f"--port={port}", "--no-browser", "--allow-root",
                "--ServerApp.port_retries=0", f"--ServerApp.root_dir={work / 'root'}",
                f"--IdentityProvider.token={token}",
                f"--SQLiteYStore.db_path={work / 'state' / 'ystore.db'}",
                f"--BaseFileIdManager.db_path={work / 'state' / 'file_id.db'}", *args]  # fmt: skip

    began = time.monotonic()
    with server_on_a_free_port(
        arguments, env=environment, cwd=work, log_path=lambda p: work / f"server-{p}.log", launcher=launcher
    ) as (_, port):
        yield Lab(f"http://127.0.0.1:{port}/", token, time.monotonic() - began)
