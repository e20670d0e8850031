"""Putting edits into a shared text as the smallest splices, so a person's cursor and keystrokes
elsewhere in it stay where they are."""

from __future__ import annotations

from pycrdt import Text

from .merge import Edit, edits


def splice(text: Text, old: str, new: str) -> None:
    """Turn ``old`` into ``new`` in the shared text by deleting and inserting only what differs
    (a real diff: several small hunks rather than one span from the first to the last change)."""
    if old != new:
        apply_edits(text, old, edits(old, new))


def apply_edits(text: Text, current: str, changes: list[Edit]) -> None:
    """Splice ordered, disjoint edits (in characters of ``current``, the text's content now).

    pycrdt offsets count UTF-8 bytes: each edit's character offsets are converted once, walking
    forward, then applied from the last, so earlier offsets still hold.
    """
    spans = []
    char_at = byte_at = 0
    for change in changes:
        byte_at += len(current[char_at : change.start].encode())
        char_at = change.start
        spans.append((byte_at, len(current[change.start : change.end].encode()), change.text))
    for byte_start, byte_len, new in reversed(spans):
        if byte_len:
            del text[byte_start : byte_start + byte_len]
        if new:
            text.insert(byte_start, new)
