"""A person typing while an agent writes: keep typing until the writes a test needs have overlapped.

A test that counts the agent's writes in a fixed window of typing fails on a loaded machine, where a
write takes longer and fewer fit in. These helpers wait for the condition itself, with a generous
bound, so what the test proves is the same on an idle machine and a busy one.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

# Long enough for a few agent writes on a machine shared by several test runs, short of the test timeout.
BOUND = 60.0


async def type_until(
    type_one: Callable[[int, str], Awaitable[None] | None],
    text: str,
    enough: Callable[[], bool],
    *,
    per_second: float = 20.0,
    bound: float = BOUND,
) -> str:
    """Types ``text`` key by key (``type_one(i, ch)`` puts the i-th key in), then types it again from
    its start until ``enough()`` holds; returns everything typed. Fails after ``bound`` seconds."""
    typed = ""
    deadline = time.monotonic() + bound
    i = 0
    while i < len(text) or not enough():
        if time.monotonic() > deadline:
            raise AssertionError(f"not enough overlap after {bound:.0f} s of typing ({len(typed)} keys)")
        ch = text[i % len(text)]
        done = type_one(i, ch)
        if inspect.isawaitable(done):
            await done
        typed += ch
        i += 1
        await asyncio.sleep(1 / per_second)
    return typed
