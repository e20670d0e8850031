"""A kernel's output, received once: on jupyter_server's own activity stream, not on a socket of ours.

ipykernel sends what a cell printed between two flushes as one message: a 100 MB print is one
100 MB frame. jupyter_server already subscribes to every kernel's iopub to watch its activity, and
receives that frame whole, then copies it to ``bytes`` to read its header (another 100 MB). A
subscription of our own would receive a third copy. So we receive on the server's stream instead,
without the copy: the server's watcher reads the same frames (the big ones as memoryviews, which is
all it needs: it never decodes the content of anything but status messages), and our decoder takes
only the head of a huge output from them (``messages.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

SMALL = 64 * 1024  # frames up to this size go to the watcher as bytes, larger ones as memoryviews
_MARK = "_jupyter_mcp_ext_shared"

Deliver = Callable[[list[Any]], None]


def share(kernel: Any, deliver: Deliver) -> Any | None:
    """Have ``deliver(frames)`` called with each iopub message (zero-copy ``zmq.Frame``s) the server's
    activity watcher receives on ``kernel``; returns that stream, or None when there is none to share
    (a kernel manager that does not watch activity, or one still starting): then open a socket of
    one's own. Idempotent: a stream already shared keeps its one hook, now calling ``deliver``.

    Private API, kept to this function: jupyter_server's ``start_watching_activity`` keeps the stream
    in ``kernel._activity_stream`` and its callback in pyzmq's ``ZMQStream._recv_callback``. A public
    ``on_iopub`` hook on the kernel manager would replace both.
    """
    stream = getattr(kernel, "_activity_stream", None)
    watcher = getattr(stream, "_recv_callback", None)
    if stream is None or watcher is None or not hasattr(stream, "on_recv"):
        return None
    if hasattr(watcher, _MARK):  # shared before (a link made afresh): only the receiver changes
        setattr(watcher, _MARK, deliver)
        return stream

    def received(frames: list[Any]) -> None:
        try:
            getattr(received, _MARK)(frames)
        except Exception:
            log.exception("Could not route a kernel message")
        watcher([f.bytes if len(f) <= SMALL else f.buffer for f in frames])

    setattr(received, _MARK, deliver)
    stream.on_recv(received, copy=False)
    return stream


def unshare(stream: Any) -> None:
    """Stop delivering from a shared stream (the server's watcher keeps its frames without copies)."""
    callback = getattr(stream, "_recv_callback", None)
    if hasattr(callback, _MARK):
        setattr(callback, _MARK, _ignore)


def _ignore(frames: list[Any]) -> None:
    pass
