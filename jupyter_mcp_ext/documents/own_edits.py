"""What this server's own edits did, as read inside the transaction that made them.

The journal must record exactly an agent's change. Read before and after the call, a text would also
hold what a person typed while the call awaited (a path check, a file read), and undoing the entry
would take that typing out too. So the writes note the text just before and just after their own
splices, in the same transaction, for whoever records the call (``recording``); with nobody recording
this costs one context-variable lookup.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class Applied:
    texts: dict[str, tuple[str, str]] = field(default_factory=dict)  # path: (before, after) of live writes
    inserted: dict[str, str] = field(default_factory=dict)  # cell id: its source as inserted


_current: ContextVar[Applied | None] = ContextVar("jupyter_mcp_ext_applied", default=None)


@contextlib.contextmanager
def recording(applied: Applied) -> Iterator[Applied]:
    """Collect in ``applied`` what the edits made within (this task and what it awaits) applied."""
    token = _current.set(applied)
    try:
        yield applied
    finally:
        _current.reset(token)


def text(path: str, before: str, after: str) -> None:
    """A live text went from ``before`` to ``after`` by this server's splices (several writes in one
    call: from the first one's before to the last one's after)."""
    applied = _current.get()
    if applied is not None:
        first = applied.texts.get(path)
        applied.texts[path] = (first[0] if first else before, after)


def inserted(cell_id: str, source: str | list[str]) -> None:
    """A cell was inserted with ``source`` (nbformat's text, or its list of lines)."""
    applied = _current.get()
    if applied is not None:
        applied.inserted[cell_id] = source if isinstance(source, str) else "".join(source)
