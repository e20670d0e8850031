"""A Jupyter server in a process of its own, for tests that need what pytest-jupyter's in-process
server cannot give: the installed config files, a restart on the same data folder, the CLI beside it."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from .server_main import LAUNCHER

PORT_TRIES = 3
TOKEN = "cli-test-token-5f3a"  # the servers' token, known to the tests that talk to them
REPO = Path(__file__).resolve().parents[2]  # the checkout: the servers import its modules


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PortTaken(Exception):
    """The server could not listen on its port: something took it after the test chose it."""


@contextmanager
def server_process(
    arguments: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    log_path: Path,
    stop_wait: float = 10,
    launcher: Sequence[str] = LAUNCHER,
) -> Iterator[subprocess.Popen[bytes]]:
    """``python -m jupyter_server <arguments>`` (through ``tests.support.server_main``, which defers a grammar
    jsonschema compiles at import to its first use), once it has logged its MCP endpoint line (in 90 s at
    most); stopped with SIGTERM at the end (the server stops its extensions), killed after ``stop_wait``."""
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [*launcher, *arguments],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
        )
        try:
            deadline = time.monotonic() + 90
            while "MCP endpoint:" not in log_path.read_text():
                if process.poll() is not None and "is not available" in log_path.read_text():
                    raise PortTaken(log_path.read_text())
                assert process.poll() is None and time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.25)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(stop_wait)
            except subprocess.TimeoutExpired:
                process.kill()


@contextmanager
def server_on_a_free_port(
    arguments: Callable[[int], list[str]],
    *,
    env: dict[str, str],
    cwd: Path,
    log_path: Callable[[int], Path],
    stop_wait: float = 10,
    launcher: Sequence[str] = LAUNCHER,
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """``server_process`` with ``arguments(port)`` on a port free when chosen; chosen again (up to
    ``PORT_TRIES`` times) if another process takes it before the server listens (with four test
    processes starting servers and kernels, a free port does not stay free)."""

    with ExitStack() as stack:
        for attempt in range(1, PORT_TRIES + 1):
            port = free_port()
            try:
                process = stack.enter_context(
                    server_process(
                        arguments(port),
                        env=env,
                        cwd=cwd,
                        log_path=log_path(port),
                        stop_wait=stop_wait,
                        launcher=launcher,
                    )
                )
            except PortTaken:
                if attempt == PORT_TRIES:
                    raise
            else:
                break
        yield process, port


@contextmanager
def server_on(work: Path, *args: str, clean_exit: bool = False) -> Iterator[str]:
    """A server process on ``work``'s root, config, data, runtime and state folders (kept between
    starts: a restart finds what the last one left), with the suite's token, short save and poll
    delays and ``args``; yields its URL. Config files go in ``work / "config"``. ``clean_exit``: the
    server must have stopped with status 0 (it stopped its extensions, and the journal flushed)."""

    for name in ("root", "config", "data", "runtime", "state"):
        (work / name).mkdir(exist_ok=True)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("JUPYTERHUB_")},
        "JUPYTER_CONFIG_DIR": str(work / "config"),
        "JUPYTER_DATA_DIR": str(work / "data"),
        "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }

    def arguments(port: int) -> list[str]:
        return ["--ip=127.0.0.1", f"--port={port}", "--no-browser",
                "--allow-root", f"--ServerApp.root_dir={work / 'root'}", f"--IdentityProvider.token={TOKEN}",
                "--ServerApp.port_retries=0",
                f"--SQLiteYStore.db_path={work / 'state' / 'ystore.db'}",
                f"--BaseFileIdManager.db_path={work / 'state' / 'file_id.db'}",
                "--YDocExtension.document_save_delay=0.3", "--YDocExtension.file_poll_interval=0.3", *args]  # fmt: skip

    with server_on_a_free_port(
        arguments, env=env, cwd=work, log_path=lambda port: work / f"server-{port}.log", stop_wait=20
    ) as (process, port):
        # Stopped with SIGTERM at the end: the server stops its extensions, and the journal flushes.
        yield f"http://127.0.0.1:{port}/"
    assert not clean_exit or process.returncode == 0, (work / f"server-{port}.log").read_text()
