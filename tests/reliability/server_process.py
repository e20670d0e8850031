"""A real ``jupyter server`` in its own process group, on loopback, that a test can ``kill -9``.

Like ``benchmarks/server.py``: temporary config, data and runtime folders, a random token, the
installed extension configs (collaboration and this extension). The server and its kernels share a
process group, so a kill takes them down together, as a crash or a pulled plug would; ``start``
again brings the server back on the same root and port.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    def __init__(self, config: dict[str, dict[str, object]] | None = None) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="jupyter-mcp-reliability-"))
        self.root = self.tmp / "root"
        self.state = self.tmp / "state"
        for folder in (self.root, self.state, self.tmp / "config", self.tmp / "runtime", self.tmp / "data"):
            folder.mkdir()
        self.port = free_port()
        self.token = secrets.token_hex(24)
        self.url = f"http://127.0.0.1:{self.port}/"
        self.headers = {"Authorization": f"token {self.token}"}
        self.config = {
            "SQLiteYStore": {"db_path": str(self.state / "ystore.db")},
            "BaseFileIdManager": {"db_path": str(self.state / "file_id.db")},
            "YDocExtension": {"session_store_path": str(self.state / "sessions.json")},
            **(config or {}),
        }
        self.process: subprocess.Popen[bytes] | None = None
        self.log = self.tmp / "server.log"
        self.starts = 0

    def start(self, timeout: float = 90) -> None:
        (self.tmp / "config" / "jupyter_server_config.json").write_text(json.dumps(self.config))
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(self.tmp / "config"),
            "JUPYTER_RUNTIME_DIR": str(self.tmp / "runtime"),
            "JUPYTER_DATA_DIR": str(self.tmp / "data"),
            "JUPYTER_PLATFORM_DIRS": "0",
        }
        jupyter = Path(sys.executable).parent / "jupyter"
        command = [
            str(jupyter) if jupyter.exists() else "jupyter",
            "server",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-root")
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command, cwd=self.state, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.starts += 1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter server exited:\n{self.log.read_text()[-3000:]}")
            try:
                if httpx2.get(f"{self.url}api/status", headers=self.headers, timeout=2).status_code == 200:
                    return
            except httpx2.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"jupyter server did not start in {timeout} s:\n{self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        """``kill -9`` the server and its kernels at once."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)
