"""Observers on a live document that end with it, so that a closed room's document is freed.

pycrdt calls an observer through a partial holding the document's ``Doc``, and keeps the
subscription (whose Rust side holds that partial) on the ``Doc`` or on the shared type observed.
An observer on the ``Doc`` itself, or one whose callback holds its own subscription (a bound method
of the object keeping it), makes a cycle through Rust that Python's collector cannot see: the
``Doc`` and its whole content outlive their room for good. Measured: every notebook an agent had
read stayed in memory after its room closed, however long the server ran. jupyter_ydoc avoids it by
unobserving when its room stops; the rooms this package observes are closed by collaboration too
(a tab's room), which does not know of these observers. So each observer here calls its object
through a weak reference, and its subscription is dropped once the document object it was made
for (a ``YNotebook``, a text file's document) is gone: the room that held it closed.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import Any


def observe(document: Any, target: Any, method: Callable[[Any], None], *, deep: bool = False) -> Any:
    """Call ``method`` with ``target``'s events (a shared type, or the ``Doc``) while ``document``
    lives, holding neither; returns the subscription."""
    ref = weakref.WeakMethod(method)

    def call(event: Any) -> None:  # one parameter: pycrdt passes the event alone
        found = ref()
        if found is not None:
            found(event)

    subscription = target.observe_deep(call) if deep else target.observe(call)
    weakref.finalize(document, _drop, target, subscription)
    return subscription


def _drop(target: Any, subscription: Any) -> None:
    with contextlib.suppress(Exception):  # unobserved already: nothing left to drop
        target.unobserve(subscription)
