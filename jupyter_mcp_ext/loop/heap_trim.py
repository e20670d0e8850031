"""Give the C heap's free pages back to the system (glibc's ``malloc_trim(0)``), after collecting
garbage.

glibc keeps memory a process freed for its next allocations, returning only what is free at the top
of its heap. An agent's first visit peaks well above what it leaves (the first notebook's read
compiles nbformat's validator, Python objects that live for a moment), and most of what the server
kept after the first agent left was free in glibc's heap, not in use (docs/benchmarks.md, "What an
agent leaves"). So it is called once nobody is left to use the memory (no agent connected, no room
kept for agents: ``agents/departures.py``), never on a call's path. Elsewhere (another C library,
another system) there is no such call, and this does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import time
from collections.abc import Callable
from dataclasses import dataclass


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, looked up once among the symbols the process has loaded (no search for
    the library, which would start a process); None with another C library."""
    try:
        found = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    found.argtypes = [ctypes.c_size_t]
    found.restype = ctypes.c_int
    return found


def trim() -> bool:
    """Return the heap's free pages to the system; False where the C library cannot."""
    malloc_trim = _malloc_trim()
    if malloc_trim is None:
        return False
    malloc_trim(0)
    return True


@dataclass(frozen=True)
class Released:
    collected: int  # objects the garbage collector found unreachable
    trimmed: bool  # whether the C library could return its free pages
    seconds: float


def release(*, collect: bool = True) -> Released:
    """Collect garbage (unless ``collect`` is False), then return the heap's free pages.

    Collected twice: a closed room's document is freed by the collection after the one that ran the
    finalizers letting it go (``documents/observers.py``), and an idle server allocates too little
    to run a full collection of its own for a long time: pages that garbage still held could not be
    returned. With the start-up objects frozen (``startup_heap.py``, the default) a collection walks
    little; without the freeze it walks every object the server has, so the garbage is then left to
    Python's own schedule. Called once each time every agent has left, never on a call's path.
    """
    started = time.perf_counter()
    collected = gc.collect() + gc.collect() if collect and gc.get_freeze_count() else 0
    return Released(collected, trim(), time.perf_counter() - started)
