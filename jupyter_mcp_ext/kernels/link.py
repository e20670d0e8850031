"""A kernel link: our one client on a kernel, and who waits for which of its messages.

Both kinds of link hold one: the ZMQ client on a local kernel (``sessions.py``) and our own websocket
client on a gateway's kernel (``gateway_link.py``). Replies reach whoever waits for them by the
parent message id, whichever way they came.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .iopub import unshare
from .messages import Budget


@dataclass
class KernelLink:
    """Our client on one kernel, and who is waiting for which message."""

    kernel_id: str
    client: Any
    routes: dict[str, Callable[[str, dict[str, Any]], None]] = field(default_factory=dict)
    readers: list[asyncio.Task[None]] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # runs on a kernel go one at a time, in order
    budgets: dict[str, Budget] = field(default_factory=dict)  # stream text each run can still keep
    shared: Any = None  # the server's iopub stream we receive on, if any (``iopub.py``)

    def route(self, channel: str, msg: dict[str, Any]) -> None:
        parent = (msg.get("parent_header") or {}).get("msg_id")
        handler = self.routes.get(parent) if parent else None
        if handler is not None:
            handler(channel, msg)

    async def close(self) -> None:
        for task in self.readers:
            task.cancel()
        if self.shared is not None:
            unshare(self.shared)
        with contextlib.suppress(Exception):
            self.client.stop_channels()
