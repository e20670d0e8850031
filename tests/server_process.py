"""A Jupyter server in a process of its own, for tests that need what pytest-jupyter's in-process
server cannot give: the installed config files, a restart on the same data folder, the CLI beside it."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .server_main import LAUNCHER


@contextmanager
def server_process(
    arguments: list[str], *, env: dict[str, str], cwd: Path, log_path: Path, stop_wait: float = 10
) -> Iterator[subprocess.Popen[bytes]]:
    """``python -m jupyter_server <arguments>`` (through ``tests.server_main``, which defers a grammar
    jsonschema compiles at import to its first use), once it has logged its MCP endpoint line (in 90 s at
    most); stopped with SIGTERM at the end (the server stops its extensions), killed after ``stop_wait``."""
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [*LAUNCHER, *arguments],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
        )
        try:
            deadline = time.monotonic() + 90
            while "MCP endpoint:" not in log_path.read_text():
                assert process.poll() is None and time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.25)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(stop_wait)
            except subprocess.TimeoutExpired:
                process.kill()
