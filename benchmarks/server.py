"""A throwaway ``jupyter server`` for one benchmark run: loopback, a free port, a random token.

Root, config, data and runtime directories are temporary. Extensions come from the installed
``jupyter_server_config.d`` files (collaboration and this extension): passing
``--ServerApp.jpserver_extensions`` on the command line would replace them and turn collaboration off.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class JupyterServer:
    def __init__(self, *, without_ystore: bool = False) -> None:
        self.without_ystore = without_ystore
        self.tmp = Path(tempfile.mkdtemp(prefix="jupyter-mcp-bench-"))
        self.root = self.tmp / "root"
        self.runtime = self.tmp / "runtime"
        self.config = self.tmp / "config"
        self.state = self.tmp / "state"
        for folder in (self.root, self.runtime, self.config, self.state, self.tmp / "data"):
            folder.mkdir()
        self.port = free_port()
        self.token = secrets.token_hex(24)
        self.url = f"http://127.0.0.1:{self.port}/"
        self.headers = {"Authorization": f"token {self.token}"}
        self.process: subprocess.Popen[bytes] | None = None
        self.log = self.tmp / "server.log"

    def start(self, timeout: float = 60) -> None:
        # Collaboration state files go into the throwaway tree, not the user's home or the cwd.
        (self.config / "jupyter_server_config.json").write_text(
            json.dumps(
                {
                    "SQLiteYStore": {"db_path": str(self.state / "ystore.db")},
                    "BaseFileIdManager": {"db_path": str(self.state / "file_id.db")},
                    "YDocExtension": {"session_store_path": str(self.state / "sessions.json")},
                }
            )
        )
        # The CPU floor's handler (benchmarks/floor.py), enabled beside the installed extensions.
        extra = self.config / "jupyter_server_config.d"
        extra.mkdir(exist_ok=True)
        (extra / "bench_floor.json").write_text(
            json.dumps({"ServerApp": {"jpserver_extensions": {"benchmarks.floor": True}}})
        )
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(self.config),
            "JUPYTER_RUNTIME_DIR": str(self.runtime),
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
        repo = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [repo, env.get("PYTHONPATH")]))
        if self.without_ystore:
            command.append("--YDocExtension.ystore_class=benchmarks.nostore.NoStore")
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-root")
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                command, cwd=self.state, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter server exited:\n{self.log.read_text()[-3000:]}")
            try:
                resp = httpx.get(f"{self.url}api/status", headers=self.headers, timeout=2)
                if resp.status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"jupyter server did not start in {timeout} s:\n{self.log.read_text()[-3000:]}")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def connection_file(self, kernel_id: str) -> Path:
        return self.runtime / f"kernel-{kernel_id}.json"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)
