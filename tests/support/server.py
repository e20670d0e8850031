"""A throwaway ``jupyter server`` in a process of its own: loopback, a free port, a random token.

Root, config, data, runtime and state directories are temporary. Extensions come from the installed
``jupyter_server_config.d`` files (collaboration and this extension): passing
``--ServerApp.jpserver_extensions`` on the command line would replace them and turn collaboration off.
The benchmarks run one (``bench_server``); the reliability tests (``tests/reliability``) ``kill -9``
one mid-work and ``start`` it again on the same root and port.
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
from collections.abc import Sequence
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class JupyterServer:
    """``config`` (traitlets as JSON: class -> trait -> value) goes over the defaults that keep the
    collaboration state files in the throwaway tree; ``extensions`` (module names) are enabled beside
    the installed ones; ``arguments`` go on the command line; ``launcher`` replaces ``jupyter server``
    (the tests' ``tests.support.server_main.LAUNCHER`` defers a grammar jsonschema compiles at import)."""

    def __init__(
        self,
        config: dict[str, dict[str, object]] | None = None,
        *,
        extensions: Sequence[str] = (),
        arguments: Sequence[str] = (),
        prefix: str = "jupyter-mcp-",
        launcher: Sequence[str] = (),
    ) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix=prefix))
        self.root = self.tmp / "root"
        self.runtime = self.tmp / "runtime"
        self.config_dir = self.tmp / "config"
        self.state = self.tmp / "state"
        for folder in (self.root, self.runtime, self.config_dir, self.state, self.tmp / "data"):
            folder.mkdir()
        self.port = free_port()
        self.token = secrets.token_hex(24)
        self.url = f"http://127.0.0.1:{self.port}/"
        self.headers = {"Authorization": f"token {self.token}"}
        # Collaboration state files go into the throwaway tree, not the user's home or the cwd.
        self.config = {
            "SQLiteYStore": {"db_path": str(self.state / "ystore.db")},
            "BaseFileIdManager": {"db_path": str(self.state / "file_id.db")},
            "YDocExtension": {"session_store_path": str(self.state / "sessions.json")},
            **(config or {}),
        }
        self.extensions = list(extensions)
        self.arguments = list(arguments)
        self.launcher = list(launcher)
        self.process: subprocess.Popen[bytes] | None = None
        self.log = self.tmp / "server.log"
        self.starts = 0
        self.python_path: list[str] = []  # folders ahead of this checkout (a baseline's package)

    def start(self, timeout: float = 90) -> None:
        """Start the server (again, after ``kill``: same root, port and token) and wait until it answers."""
        (self.config_dir / "jupyter_server_config.json").write_text(json.dumps(self.config))
        if self.extensions:
            extra = self.config_dir / "jupyter_server_config.d"
            extra.mkdir(exist_ok=True)
            enabled = {"ServerApp": {"jpserver_extensions": dict.fromkeys(self.extensions, True)}}
            (extra / "extra_extensions.json").write_text(json.dumps(enabled))
        repo = str(Path(__file__).resolve().parents[2])  # so the server imports this checkout's modules
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(self.config_dir),
            "JUPYTER_RUNTIME_DIR": str(self.runtime),
            "JUPYTER_DATA_DIR": str(self.tmp / "data"),
            "JUPYTER_PLATFORM_DIRS": "0",
            "PYTHONPATH": os.pathsep.join(
                filter(None, [*self.python_path, repo, os.environ.get("PYTHONPATH")])
            ),
        }
        jupyter = Path(sys.executable).parent / "jupyter"
        command = [
            *(self.launcher or [str(jupyter) if jupyter.exists() else "jupyter", "server"]),
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            *self.arguments,
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-root")
        # The server and its kernels share a process group of their own, so ``kill`` takes them down
        # together, as a crash or a pulled plug would.
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
                if httpx.get(f"{self.url}api/status", headers=self.headers, timeout=2).status_code == 200:
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

    def kill(self) -> None:
        """``kill -9`` the server and its kernels at once."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self, *, gracefully: bool = True) -> None:
        """Stop the server (SIGTERM: it shuts its kernels down; killed if it takes over 15 s, or at
        once unless ``gracefully``) and remove its folders."""
        if self.process is not None and self.process.poll() is None:
            if gracefully:
                self.process.terminate()
                try:
                    self.process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.kill()
            else:
                self.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


def bench_server(*, without_ystore: bool = False, ystore_class: str = "") -> JupyterServer:
    """The benchmark's server: with the CPU floor's handler (benchmarks/floor.py) and, as a diagnostic,
    without collaboration's update store, or with another one (``ystore_class``)."""
    if without_ystore:
        ystore_class = "benchmarks.nostore.NoStore"
    store = [f"--YDocExtension.ystore_class={ystore_class}"] if ystore_class else []
    return JupyterServer(extensions=["benchmarks.floor"], arguments=store, prefix="jupyter-mcp-bench-")
