"""Who typed where, and when: read from a shared document's own updates as they arrive.

An agent must not delete a cell a person is typing in, and a conflict should say who made the
change it collides with. A deep observer notes which cell's source (or a text file's text) each
change touched; the document's update observer then tells whose change it was: the Yjs clients
whose clock moved, which in JupyterLab are also the awareness ids that carry the person's name.
Changes this server makes itself are not a person's. Presence proper lives elsewhere; this is the
minimum a write needs, local to the document.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pycrdt import Decoder, Text

from . import awareness, observers

RECENT_SECONDS = 5.0
"""How long after a person's last keystroke in a cell deleting it needs ``force``."""

FILE = ""  # the key of a text file's single text


@dataclass(frozen=True)
class Touch:
    at: float  # time.monotonic()
    clients: frozenset[int]  # Yjs client ids, empty when only deletions were made


class _Watch:
    def __init__(self, doc: Any):
        self._doc = weakref.ref(doc)
        self.server_client = doc.ydoc.client_id
        self.touched: dict[str, Touch] = {}
        self.last_any: Touch | None = None
        self._pending: set[str] = set()
        self.quiet = 0  # > 0 while this server writes
        cells = getattr(doc, "ycells", None)
        if cells is not None:
            first = observers.observe(doc, cells, self._on_cells, deep=True)
        else:
            first = observers.observe(doc, doc.ydoc.get("source", type=Text), self._on_text)
        self._subs = [first, observers.observe(doc, doc.ydoc, self._on_update)]

    # Observers run inside other clients' updates: an error raised here would fail their update,
    # so none may escape; a missed note only means a person's edit is not named.
    def _on_cells(self, events: list[Any]) -> None:
        doc = self._doc()
        if doc is None or self.quiet:
            return
        with contextlib.suppress(Exception):
            for event in events:
                path = event.path
                if len(path) >= 2 and isinstance(path[0], int) and path[1] == "source":
                    self._pending.add(str(doc.ycells[path[0]]["id"]))

    def _on_text(self, _event: Any) -> None:
        if not self.quiet:
            self._pending.add(FILE)

    def _on_update(self, event: Any) -> None:
        if not self._pending:
            return
        self._pending, pending = set(), self._pending
        with contextlib.suppress(Exception):
            touch = self._touch(event)
            if touch is not None:
                self.last_any = touch
                for key in pending:
                    self.touched[key] = touch

    def _touch(self, event: Any) -> Touch | None:
        moved = _advanced(event.before_state, event.after_state)
        if moved == {self.server_client}:
            return None  # this server's own change (kernel outputs, another tool)
        return Touch(time.monotonic(), frozenset(moved - {self.server_client}))


_watches: weakref.WeakKeyDictionary[Any, _Watch] = weakref.WeakKeyDictionary()


def watch(doc: Any) -> None:
    """Start noting edits on a live document (idempotent; ends with the document)."""
    if doc not in _watches:
        _watches[doc] = _Watch(doc)


@contextlib.contextmanager
def own_write(doc: Any) -> Iterator[None]:
    """Wrap this server's own edits (around the transaction), so they are not taken for a person's."""
    found = _watches.get(doc)
    if found is None:
        yield
        return
    found.quiet += 1
    try:
        yield
    finally:
        found.quiet -= 1


def last_touch(doc: Any, key: str) -> Touch | None:
    """The last change a person made to a cell (by id) or to a text file (``FILE``), if noted."""
    found = _watches.get(doc)
    return found.touched.get(key) if found is not None else None


def last_any(doc: Any) -> Touch | None:
    """The last change a person made anywhere in the document's cells or text, if noted."""
    found = _watches.get(doc)
    return found.last_any if found is not None else None


def recently_typed(doc: Any, key: str, seconds: float = RECENT_SECONDS) -> Touch | None:
    touch = last_touch(doc, key)
    return touch if touch is not None and time.monotonic() - touch.at <= seconds else None


def who(doc: Any, touch: Touch | None = None) -> str | None:
    """Names of the people behind a change, from the room's awareness; without a change (or when
    it only deleted text, which carries no client), everyone in the room but this server."""
    clients = touch.clients if touch is not None and touch.clients else None
    people = {
        c: n
        for c, state in awareness.people(getattr(doc, "awareness", None)).items()
        if (n := awareness.name(state))
    }
    named = [people[c] for c in clients or () if c in people] or list(people.values())
    return ", ".join(dict.fromkeys(named)) or None


def _advanced(before: bytes, after: bytes) -> set[int]:
    """Clients whose clock moved between two encoded state vectors: who inserted something."""
    old = _state(before)
    return {client for client, clock in _state(after).items() if clock > old.get(client, 0)}


def _state(encoded: bytes) -> dict[int, int]:
    decoder = Decoder(encoded)
    if not encoded:
        return {}
    return {decoder.read_var_uint(): decoder.read_var_uint() for _ in range(decoder.read_var_uint())}
