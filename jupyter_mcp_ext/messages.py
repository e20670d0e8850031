"""Kernel messages read without holding a huge output three times over.

ipykernel sends everything a cell printed between two flushes as one message: a 100 MB print is one
100 MB frame. Decoding it whole makes a bytes copy, a str and a dict, for text that is cut down to a
few MB anyway. Here a large stream message keeps only the head it can use, decoded from the frame.
"""

from __future__ import annotations

import json
from typing import Any

LARGE = 1_000_000  # content frames above this size are decoded frugally


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
