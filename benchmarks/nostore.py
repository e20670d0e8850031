"""A collaboration update store that keeps nothing: ``python -m benchmarks --without-ystore``.

A diagnostic, never a configuration to run with: every edit of a shared document is also written
by jupyter-collaboration to its store (SQLite by default). Swapping this in shows how much of an
edit's time is that write, and how much is this extension's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from pycrdt.store import BaseYStore, YDocNotFound


class NoStore(BaseYStore):
    def __init__(self, path: str = "", metadata_callback: Any = None, log: Any = None, **_: Any) -> None:
        self.path = path
        self.metadata_callback = metadata_callback
        self.log = log

    async def write(self, data: bytes) -> None:
        pass

    async def read(self) -> AsyncIterator[tuple[bytes, bytes, float]]:  # type: ignore[override]
        raise YDocNotFound
        yield  # an async generator, like the stores it stands in for

    async def start(self, *, task_status: Any = None, from_context_manager: bool = False) -> None:
        self.started.set()
        if task_status is not None:
            task_status.started()

    async def stop(self) -> None:
        self.stopped.set()
