"""Leave what exists once the server has started out of Python's full garbage collections.

A full collection walks every object the process tracks: a Jupyter server with JupyterLab and
collaboration has a few hundred thousand once started (modules, classes, functions, living as long
as the server), and with agents working flat out a full collection comes every few seconds, holding
the loop while a person's keystroke waits. Frozen once the server has started (``gc.freeze``), and
again once the extension's runtime is built (if no notebook is open then: ``Runtime.freeze``), those
objects are left out (docs/benchmarks.md has the figures). Objects freed by reference counting are
freed as ever; only garbage in cycles among the frozen objects would stay.
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
