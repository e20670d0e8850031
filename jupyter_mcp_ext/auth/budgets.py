"""Rate budgets kept per source (the requester's address), so one source's flood spends only its own.

A budget over everyone together lets a stranger spend it for all; one per source leaves everyone
else theirs. The number of sources remembered is bounded too: past it the longest-quiet source is
forgotten (it gets a fresh budget, which costs a flood nothing it did not have).
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque

MAX_SOURCES = 10_000


class PerSource:
    """At most ``limit`` uses a ``window`` of seconds for each source."""

    def __init__(self, limit: int, window: float = 60.0, max_sources: int = MAX_SOURCES):
        self.limit = limit
        self.window = window
        self.max_sources = max_sources
        self._uses: OrderedDict[str, deque[float]] = OrderedDict()

    def spend(self, source: str) -> bool:
        """Whether ``source`` may go on now; if so, it is counted."""
        now = time.monotonic()
        uses = self._uses.pop(source, None) or deque()
        while uses and now - uses[0] >= self.window:
            uses.popleft()
        self._uses[source] = uses  # most recently used last
        while len(self._uses) > self.max_sources:
            self._uses.popitem(last=False)
        if len(uses) >= self.limit:
            return False
        uses.append(now)
        return True
