"""Kernel messages read without holding a huge output three times over.

ipykernel sends everything a cell printed between two flushes as one message: a 100 MB print is one
100 MB frame. Decoding it whole makes a bytes copy, a str and a dict, for text that is cut down to a
few MB anyway. Here a large stream message keeps only the head it can use, decoded from the frame.
"""

from __future__ import annotations

import json
import re
from collections.abc import Container, Mapping
from hmac import compare_digest
from typing import Any

LARGE = 1_000_000  # content frames above this size are decoded frugally
_BACKSLASH = re.compile(rb"\\")  # searched in a memoryview without copying it


class Budget:
    """Characters of stream text one run can still keep, counted as its messages are decoded.

    Messages wait, decoded, until the run applies them to the notebook; a cell that flushes often
    sends many messages of a MB or less, each decoded whole. Cut here to what the cell can still
    keep (the rest counted in ``omitted``), the waiting ones hold at most that, not the whole flood.
    It errs towards keeping: a clear gives the room back, and only stream text counts, so the
    output model (which counts everything) still makes the exact cut.
    """

    def __init__(self, chars: int) -> None:
        self.full = self.left = chars

    def cut(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any]:
        if msg_type == "clear_output":
            self.left = self.full
        elif msg_type == "stream" and isinstance(content.get("text"), str):
            text = content["text"]
            if len(text) > self.left:
                omitted = content.get("omitted", 0) + len(text) - self.left
                content = {**content, "text": text[: self.left], "omitted": omitted}
            self.left -= len(content["text"])
        return content


def read(
    session: Any,
    frames: list[Any],
    keep_chars: int,
    wanted: Container[str] | None = None,
    budgets: Mapping[str, Budget] | None = None,
) -> dict[str, Any] | None:
    """A message from zero-copy frames, as ``Session.deserialize`` would give it, minus the copy;
    None when its parent's id is not in ``wanted`` (someone else's output: not even decoded). A
    stream's text is cut to its run's budget in ``budgets`` (by parent id), else to ``keep_chars``.

    ``deserialize(copy=False)`` still copies the content frame to bytes; for a 100 MB output that is
    100 MB more. The signature is checked over the frames as they are.
    """
    _, parts = session.feed_identities(frames, copy=False)
    signature, header, parent, metadata = (bytes(p.bytes) for p in parts[:4])
    parent_header = session.unpack(parent)
    if wanted is not None and parent_header.get("msg_id") not in wanted:
        return None
    content = parts[4].buffer
    if session.auth is not None and not compare_digest(
        signature, session.sign([header, parent, metadata, content])
    ):
        raise ValueError("Invalid signature on a kernel message")
    head = session.unpack(header)
    msg_type = head.get("msg_type", "")
    budget = budgets.get(parent_header.get("msg_id", "")) if budgets is not None else None
    if budget is None:
        decoded = content_of(msg_type, content, keep_chars)
    else:  # once the run keeps little more, even a MB is not worth decoding whole
        decoded = content_of(msg_type, content, budget.left, large=0)
    return {
        "header": head,
        "msg_id": head.get("msg_id"),
        "msg_type": head.get("msg_type"),
        "parent_header": parent_header,
        "metadata": session.unpack(metadata),
        "content": decoded if budget is None else budget.cut(msg_type, decoded),
    }


def content_of(msg_type: str, frame: Any, keep_chars: int, large: int = LARGE) -> dict[str, Any]:
    """The message content; for a stream over ``large`` bytes, as much of its text as ``keep_chars``
    bytes of the frame hold (at most that many characters, fewer where they are escaped or
    multi-byte), and about how many more bytes there were (``omitted``)."""
    raw = frame.buffer if hasattr(frame, "buffer") else frame
    if msg_type != "stream" or len(raw) <= max(large, 4 * keep_chars + 1024):
        return json.loads(bytes(raw))
    head = _stream_head(memoryview(raw), keep_chars)
    return head if head is not None else json.loads(bytes(raw))


def _stream_head(raw: memoryview, keep_chars: int) -> dict[str, Any] | None:
    """Decode ``{"name": ..., "text": "..."}`` taking only the start of the text."""
    edges = bytes(raw[:128]) + b"\0" + bytes(raw[-128:])
    name = "stdout" if b'"name": "stdout"' in edges else "stderr" if b'"name": "stderr"' in edges else None
    start = bytes(raw[:128]).find(b'"text": "')
    if name is None or start < 0:
        return None
    start += len(b'"text": "')
    # At most keep_chars bytes (every character takes one or more): a view of the frame, not a copy.
    view = raw[start : start + keep_chars]
    cut = len(view)
    slash = bytes(view[max(0, cut - 6) : cut]).rfind(b"\\")
    if slash >= 0:
        # The last backslash starts an escape (which may be cut short) when the run of backslashes
        # it ends is odd; an even run is whole escaped backslashes. Counted in C: a run may be MBs.
        slash += max(0, cut - 6)
        before = bytes(view[: slash + 1])
        if (len(before) - len(before.rstrip(b"\\"))) % 2:
            cut = slash
    while cut > 0 and (view[cut - 1] & 0xC0) == 0x80:  # off the tail of a character cut in half
        cut -= 1
    if cut > 0 and view[cut - 1] >= 0xC0:
        cut -= 1
    view = view[:cut]
    try:
        if _BACKSLASH.search(view) is None:  # no escapes: the JSON string is the text itself
            text = str(view, "utf-8")
        else:
            text = json.loads(b'"' + bytes(view) + b'"')
            if text and "\ud800" <= text[-1] <= "\udbff":  # half of a surrogate pair
                text = text[:-1]
    except ValueError:
        return None
    total = len(raw) - start  # the text's encoded size: an estimate of what was not decoded
    return {"name": name, "text": text, "omitted": max(0, total - cut)}
