"""Leave what exists once the server has started out of Python's full garbage collections.

A full collection walks every object the process tracks. A Jupyter server with JupyterLab and
collaboration has about 270,000 once it has started (modules, classes, functions: they live as long
as the server), and with agents working flat out a full collection comes every 5-10 s: each one held
the server's loop 110-180 ms, a person's keystroke waiting behind it. Frozen once the server has
started (``gc.freeze``), those objects are left out: 17-37 ms a collection (README, "What the person
feels"). Objects freed by reference counting are freed as ever; only garbage in cycles among the
frozen objects would stay.
"""

from __future__ import annotations

import gc
import time


def freeze() -> tuple[int, float]:
    """Collect once (garbage is not kept for good), then freeze every object now tracked; returns
    how many are frozen and the seconds it took."""
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count(), time.perf_counter() - started
