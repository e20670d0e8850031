"""Output edits cut into steps small enough that the event loop stays free between them.

A cell that prints megabytes would otherwise go into the shared document (and from there into its
store and to every open tab) as one transaction of that size: tens of milliseconds in which no
keystroke, REST call or kernel message is served. Cut into steps of about ``STEP_BYTES`` of text,
each step is one transaction and the run yields to the loop (and to the agents' share of it)
between steps. A person's tab sees the same text arrive, in a few more updates.
"""

from __future__ import annotations

from typing import Any

from .output_model import Op

STEP_BYTES = 64 * 1024  # the smallest step: well under 1 ms of document work on this kind of machine


def _size(op: Op) -> int:
    kind = op[0]
    if kind == "text":
        return len(op[3]) + len(op[2])
    if kind in ("append", "replace"):
        output: dict[str, Any] = op[-1]
        text = output.get("text")
        return len(text) if isinstance(text, str) else len(repr(output.get("data", "")))
    return 1


def _cut_text(op: Op, sizes: list[int], limit: int) -> list[Op]:
    """A text op as pieces growing with the text: each commit costs about what the text's length does."""
    _, index, old_tail, add = op
    out: list[Op] = []
    pos, tail = 0, old_tail
    while True:
        piece = add[pos : pos + max(limit, sizes[index] // 2)]
        out.append(("text", index, tail, piece))
        tail, pos = "", pos + len(piece)
        sizes[index] += len(piece)
        if pos >= len(add):
            return out


def lengths_before(outputs: list[dict[str, Any]], ops: list[Op], count: int) -> list[int]:
    """About how long each of the ``count`` outputs' texts is before ``ops`` (``outputs``: after them)."""
    sizes = [len(o["text"]) if isinstance(o.get("text"), str) else 0 for o in outputs[:count]]
    sizes += [0] * (count - len(sizes))
    for op in ops:
        if op[0] == "text" and op[1] < count:
            sizes[op[1]] = max(0, sizes[op[1]] - len(op[3]))
    return sizes


def steps(ops: list[Op], sizes: list[int], limit: int = STEP_BYTES) -> list[list[Op]]:
    """``ops`` in order, in steps of about ``limit`` (more where a text is already long).

    ``sizes``: the text length of each output before the ops. Appending to a Y text costs about its
    whole length once the text is long (pycrdt merges the new piece into the text's block: about
    2 ms per MB here), so pieces grow with the text: a text of n bytes goes in O(log n) commits.
    """
    sizes = list(sizes)
    flat: list[Op] = []
    for op in ops:
        kind = op[0]
        if kind == "clear":
            sizes = []
            flat.append(op)
        elif kind == "append":
            output = op[1]
            text = output.get("text")
            if output.get("output_type") == "stream" and isinstance(text, str) and len(text) > limit:
                sizes.append(limit)
                flat.append(("append", {**output, "text": text[:limit]}))
                flat += _cut_text(("text", len(sizes) - 1, "", text[limit:]), sizes, limit)
            else:
                sizes.append(len(text) if isinstance(text, str) else 0)
                flat.append(op)
        elif kind == "text" and op[1] < len(sizes):
            flat += _cut_text(op, sizes, limit)
        else:
            flat.append(op)
    out: list[list[Op]] = [[]]
    size = 0
    for op in flat:
        weight = _size(op)
        if out[-1] and size + weight > limit:
            out.append([])
            size = 0
        out[-1].append(op)
        size += weight
    return out
