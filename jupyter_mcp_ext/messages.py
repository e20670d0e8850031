"""Kernel messages read without holding a huge output three times over.

ipykernel sends everything a cell printed between two flushes as one message: a 100 MB print is one
100 MB frame. Decoding it whole makes a bytes copy, a str and a dict, for text that is cut down to a
few MB anyway. Here a large stream message keeps only the head it can use, decoded from the frame.
"""

from __future__ import annotations

import json
from hmac import compare_digest
from typing import Any

LARGE = 1_000_000  # content frames above this size are decoded frugally


def read(session: Any, frames: list[Any], keep_chars: int) -> dict[str, Any]:
    """A message from zero-copy frames, as ``Session.deserialize`` would give it, minus the copy.

    ``deserialize(copy=False)`` still copies the content frame to bytes; for a 100 MB output that is
    100 MB more. The signature is checked over the frames as they are.
    """
    _, parts = session.feed_identities(frames, copy=False)
    signature, header, parent, metadata = (bytes(p.bytes) for p in parts[:4])
    content = parts[4].buffer
    if session.auth is not None and not compare_digest(
        signature, session.sign([header, parent, metadata, content])
    ):
        raise ValueError("Invalid signature on a kernel message")
    head = session.unpack(header)
    return {
        "header": head,
        "msg_id": head.get("msg_id"),
        "msg_type": head.get("msg_type"),
        "parent_header": session.unpack(parent),
        "metadata": session.unpack(metadata),
        "content": content_of(head.get("msg_type", ""), content, keep_chars),
    }


def content_of(msg_type: str, frame: Any, keep_chars: int) -> dict[str, Any]:
    """The message content; for a large stream, its first ``keep_chars`` characters and how many
    more there were (``omitted``)."""
    raw = frame.buffer if hasattr(frame, "buffer") else frame
    if msg_type != "stream" or len(raw) <= max(LARGE, 4 * keep_chars + 1024):
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
    # Four bytes per character at most (the frame is larger still, so the text goes on past this);
    # then step back off an escape or a character cut in half.
    chunk = bytes(raw[start : start + 4 * keep_chars])
    slash = chunk.rfind(b"\\", max(0, len(chunk) - 6))
    while slash > 0 and chunk[slash - 1 : slash] == b"\\":
        slash -= 1
    if slash >= 0:
        chunk = chunk[:slash]
    try:
        text = json.loads(b'"' + chunk.decode("utf-8", errors="ignore").encode() + b'"')
    except ValueError:
        return None
    total = len(raw) - start  # the text's encoded size: an estimate of what was not decoded
    text = text[:keep_chars]
    return {"name": name, "text": text, "omitted": max(0, total - len(text.encode()))}
