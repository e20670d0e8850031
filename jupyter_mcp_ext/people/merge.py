"""Undo one change to a text while keeping every later edit that does not touch it (a three-way merge).

The agent turned ``before`` into ``after``; people (or other agents) have since turned ``after`` into
``current``. Each span the agent changed is found in ``current`` through the alignment of ``after``
with ``current``; where that span is intact it is put back as it was, and where someone has edited
inside it (or right at an insertion point) there is no safe answer, so it is a conflict.
"""

from __future__ import annotations

from bisect import bisect_right
from difflib import SequenceMatcher


class Conflict(Exception):
    """The change cannot be undone without guessing; the message says why."""


def undo_spans(before: str, after: str, current: str) -> list[tuple[int, int, str]]:
    """Replacements ``(start, end, text)`` in ``current`` (character offsets, last first) that undo
    the change ``before -> after``. Raises ``Conflict`` when a later edit overlaps the change."""
    if current == after:
        return [(0, len(current), before)] if before != after else []
    agent = [op for op in _opcodes(before, after) if op[0] != "equal"]
    blocks = [(a, c, size) for a, c, size in _matching(after, current) if size]
    starts = [a for a, _, _ in blocks]

    def where(a: int) -> int | None:
        """Position in ``current`` of the character at ``a`` in ``after``, if it is unchanged."""
        k = bisect_right(starts, a) - 1
        if k >= 0:
            start, c, size = blocks[k]
            if a < start + size:
                return c + (a - start)
        return None

    spans = []
    for _tag, b1, b2, a1, a2 in agent:
        if a2 > a1:  # the agent wrote after[a1:a2]: it must still be there, unbroken
            first, last = where(a1), where(a2 - 1)
            if first is None or last is None or last - first != a2 - 1 - a1:
                raise Conflict("the text the agent wrote has been edited since")
            if any(where(a) is None for a in range(a1, a2)):
                raise Conflict("the text the agent wrote has been edited since")
            spans.append((first, last + 1, before[b1:b2]))
        else:  # the agent deleted before[b1:b2] at a1: both sides of that point must be intact
            left = where(a1 - 1) if a1 > 0 else -1
            right = where(a1) if a1 < len(after) else len(current)
            if left is None or right is None or right != left + 1:
                raise Conflict("the text around what the agent deleted has been edited since")
            spans.append((left + 1, left + 1, before[b1:b2]))
    return sorted(spans, reverse=True)


def apply_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    for start, end, replacement in spans:  # last first: earlier offsets stay valid
        text = text[:start] + replacement + text[end:]
    return text


def undo_text(before: str, after: str, current: str) -> str:
    return apply_spans(current, undo_spans(before, after, current))


def _opcodes(x: str, y: str) -> list[tuple[str, int, int, int, int]]:
    return SequenceMatcher(None, x, y, autojunk=False).get_opcodes()


def _matching(x: str, y: str) -> list[tuple[int, int, int]]:
    return [tuple(m) for m in SequenceMatcher(None, x, y, autojunk=False).get_matching_blocks()]  # type: ignore[misc]
