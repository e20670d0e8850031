"""Output edits cut into steps small enough that the event loop stays free between them (issue 14).

A cell that prints megabytes would otherwise go into the shared document (and from there into its
store and to every open tab) as one transaction of that size: tens of milliseconds in which no
keystroke, REST call or kernel message is served. Cut into steps of about ``STEP_BYTES`` of text,
each step is one transaction and the run yields to the loop (and to the agents' share of it)
between steps. A person's tab sees the same text arrive, in a few more updates.
"""

from __future__ import annotations

from typing import Any

from .output_model import Op

STEP_BYTES = 64 * 1024  # about 1 ms of document work a step on this kind of machine


def _size(op: Op) -> int:
    kind = op[0]
    if kind == "text":
        return len(op[3]) + len(op[2])
    if kind in ("append", "replace"):
        output: dict[str, Any] = op[-1]
        text = output.get("text")
        return len(text) if isinstance(text, str) else len(repr(output.get("data", "")))
    return 1


def _cut_text(op: Op, limit: int) -> list[Op]:
    """A text op adding more than ``limit`` characters, as one op per ``limit`` characters."""
    _, index, old_tail, add = op
    pieces = [add[i : i + limit] for i in range(0, len(add), limit)] or [""]
    return [("text", index, old_tail, pieces[0]), *(("text", index, "", p) for p in pieces[1:])]


def _cut_append(op: Op, limit: int, index: int) -> list[Op]:
    """A new stream output with a long text: appended with its first part, the rest added after."""
    output = op[1]
    text = output.get("text")
    if output.get("output_type") != "stream" or not isinstance(text, str) or len(text) <= limit:
        return [op]
    head = {**output, "text": text[:limit]}
    return [("append", head), *_cut_text(("text", index, "", text[limit:]), limit)]


def steps(ops: list[Op], outputs_before: int, limit: int = STEP_BYTES) -> list[list[Op]]:
    """``ops`` (applied to a list of ``outputs_before`` outputs) in order, in steps of about ``limit``."""
    flat: list[Op] = []
    count = outputs_before
    for op in ops:
        kind = op[0]
        if kind == "clear":
            count = 0
            flat.append(op)
        elif kind == "append":
            flat += _cut_append(op, limit, count)
            count += 1
        elif kind == "text" and len(op[3]) > limit:
            flat += _cut_text(op, limit)
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
