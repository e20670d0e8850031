"""Keeping every tool result within ``max_result_bytes``, and long reads from stalling the server.

Tools bound what they return themselves (outputs.Budget, read_file's offsets, the outline's short
first lines), and say how to get the rest. ``bound_result`` is the last guard, applied to every
result in one place: neither its content (text and images) nor its ``structuredContent`` may be
over the limit, whatever a tool missed. What it cuts it says, in the text and in a ``cut`` field.
``in_slices`` reads a notebook cell by cell in slices of a few milliseconds, giving the event loop
(every tab, kernel message and save of the person's server) its turn in between; a read of one large
cell may go on over several slices (``slice_over``, ``Unfinished``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from contextvars import ContextVar
from json.encoder import encode_basestring  # in C: a string as JSON, non-ASCII kept
from typing import Any, TypeVar

from jupyter_ydoc import YNotebook

from ..documents import cells as nb
from ..errors import ToolError
from .toolkit import ToolResult

T = TypeVar("T")

SLICE_SECONDS = 0.004  # event-loop time one slice of a long read may take
HOW_TO_GET_MORE = (
    "ask for less at a time: read_cells with cell_ids or a start/end range, read_file with offset, "
    "search_notebook to find cells"
)
_NOTE_ROOM = 400  # bytes kept free for the note


def bound_result(result: ToolResult, limit: int) -> ToolResult:
    """``result`` with its content and its structuredContent each within ``limit`` bytes."""
    text, images, data = result.text, list(result.images), result.data
    cut_what = []
    content = _utf8(text) + sum(len(image) for _, image in images)
    if content > limit:
        while images and _utf8(text) + sum(len(image) for _, image in images) > limit - _NOTE_ROOM:
            images.pop()
        if _utf8(text) > limit - _NOTE_ROOM:
            text = cut_text(text, limit - _NOTE_ROOM)
        cut_what.append(f"content of {content:,} bytes")
    size = json_bytes(data, stop_above=limit)
    if size > limit:
        data, _ = shrink(data, limit - _NOTE_ROOM)
        cut_what.append("structuredContent")
    if not cut_what:
        return result
    note = (
        f"[result cut to the {limit:,} bytes one result may carry ({', '.join(cut_what)}): {HOW_TO_GET_MORE}]"
    )
    if isinstance(data, dict):
        data = {**data, "cut": note}
    return ToolResult(f"{text}\n{note}", data, images)


_slice_end: ContextVar[float] = ContextVar("slice_end", default=float("inf"))


class Unfinished(Exception):
    """Raised by an ``in_slices`` read that spent the slice: it is called again for the same cell
    after a pause, and goes on from where it was if it kept its progress."""


def slice_over() -> bool:
    """Whether the current ``in_slices`` slice is spent (never, outside one or in its last try)."""
    return time.perf_counter() > _slice_end.get()


async def in_slices(doc: YNotebook, read: Callable[[int], T]) -> list[T]:
    """``read(i)`` for every cell index, in slices of ``SLICE_SECONDS`` (one transaction each);
    between slices the loop runs other work. If cells were inserted, deleted or moved meanwhile,
    the read starts over (after three tries, in one go): the rows always describe one state."""
    for attempt in range(4):
        order = nb.ids(doc)
        rows: list[T] = []
        while len(rows) < len(order):
            token = _slice_end.set(float("inf") if attempt == 3 else time.perf_counter() + SLICE_SECONDS)
            try:
                with doc.ydoc.transaction():
                    while len(rows) < len(order) and not slice_over():
                        try:
                            rows.append(read(len(rows)))
                        except Unfinished:
                            break
            finally:
                _slice_end.reset(token)
            if len(rows) < len(order):
                await asyncio.sleep(0)
                if nb.ids(doc) != order:
                    break
        else:
            return rows
    return rows  # not reached: the last try reads in one go


def check_script_size(doc: YNotebook, limit: int) -> None:
    """Refuse a whole-notebook script too large for one result, before building it: a cut script
    written back would delete the cells it no longer shows."""
    size = 0
    with doc.ydoc.transaction():
        for ycell in doc.ycells:
            size += len(ycell["source"]) + 24  # UTF-8 bytes (known without reading the text), a marker
    # An eighth is left for JSON's escapes (newlines, quotes) in structuredContent's copy: a script
    # the final guard had to cut would be as dangerous as any other cut one.
    if size > limit - limit // 8:
        raise ToolError(
            f"This notebook as a py:percent script is about {size // 1000:,} KB, over the "
            f"{limit // 1000:,} KB one result may carry (max_result_bytes). Read it in parts: the "
            "outline (get_notebook), then read_cells with a start/end range; edit with update_cell "
            "and insert_cells rather than write_notebook_text."
        )


def _utf8(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode())


def cut_text(text: str, room: int) -> str:
    """``text`` cut to at most ``room`` bytes of UTF-8, never inside a character."""
    return text.encode()[: max(0, room)].decode(errors="ignore")


def json_bytes(value: Any, stop_above: float = float("inf")) -> int:
    """Bytes of ``value`` as compact JSON, counted only until past ``stop_above`` (so a huge value
    costs no more than a small one)."""
    pending, size = [value], 0
    while pending and size <= stop_above:
        item = pending.pop()
        if isinstance(item, str):  # a string longer than what is left is past it, escapes or not
            size += len(item) if len(item) > stop_above else _utf8(encode_basestring(item))
        elif isinstance(item, dict):
            size += 2 + 2 * len(item)
            for key, sub in item.items():
                size += _utf8(encode_basestring(key if isinstance(key, str) else str(key)))
                pending.append(sub)
        elif isinstance(item, (list, tuple)):
            size += 2 + len(item)
            pending.extend(item)
        elif item is None or item is True:
            size += 4
        elif item is False:
            size += 5
        elif type(item) is int:
            size += len(repr(item))
        else:
            size += len(json.dumps(item))
    return size


def shrink(value: Any, room: int) -> tuple[Any, int]:
    """``value`` cut to about ``room`` bytes of JSON, keeping its shape (types, keys, order):
    strings are cut, lists lose their last items, everything keeps what fits first. A part that
    fits whole is measured once and kept as it is; only the part that does not is walked into."""
    if isinstance(value, str):
        size = json_bytes(value, stop_above=room)
        if size <= room:
            return value, size
        kept = cut_text(value, room - 8)
        while kept and json_bytes(kept + "…") > room:
            kept = kept[: len(kept) * 3 // 4]
        return (kept + "…", json_bytes(kept + "…")) if kept else ("", 2)
    if isinstance(value, dict):
        # Each key keeps at least its emptied value, so what comes after the first long one fits too.
        keys = {key: json_bytes(str(key)) + 2 for key in value}
        floors = {key: keys[key] + json_bytes(_emptied(sub)) for key, sub in value.items()}
        out, used, reserved = {}, 2, sum(floors.values())
        for key, sub in value.items():
            reserved -= floors[key]
            part, size = _fitted(sub, max(0, room - used - reserved - keys[key]))
            out[key] = part
            used += keys[key] + size
        return out, used
    if isinstance(value, (list, tuple)):
        items: list[Any] = []
        used = 2
        for sub in value:
            left = room - used - 1
            part, size = _fitted(sub, left)
            if size > left or (part is not sub and items):  # a cut item is kept only if first
                break
            items.append(part)
            used += size + 1
        return items, used
    return value, json_bytes(value)


def _fitted(value: Any, room: int) -> tuple[Any, int]:
    """``value`` itself if it fits in ``room`` (one walk, stopped early when it does not), else cut."""
    size = json_bytes(value, stop_above=room)
    return (value, size) if size <= room else shrink(value, room)


def _emptied(value: Any) -> Any:
    return (
        ""
        if isinstance(value, str)
        else []
        if isinstance(value, (list, tuple))
        else {}
        if isinstance(value, dict)
        else value
    )
