"""Carets in shared cells, both ways: one for an agent to show, and the cell a person's caret is in.

A caret in JupyterLab is a yjs relative position: the id of the character it sticks to (``item``),
or of the text itself (``type``) when there is no character to stick to. pycrdt's ``StickyIndex``
builds and reads them, with three traps (checked against JupyterLab 4.6): it counts UTF-16 units
like the browser while ``len(Text)`` counts UTF-8 bytes; its JSON omits the keys that are null, and
the browser needs all of ``type``, ``tname``, ``item`` and ``assoc``; and it cannot stick to a
character of an empty text, so there the caret sticks to the text itself (index 0, before).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pycrdt import Array, Assoc, Decoder, Doc, Map, StickyIndex, Text

Position = dict[str, Any]


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def relative(source: Text, index: int, assoc: Assoc) -> Position:
    """A yjs relative position at ``index`` (UTF-16 units) of ``source``, as the browser reads it."""
    position = StickyIndex.new(source, index, assoc).to_json()
    return {"type": None, "tname": None, "item": None, "assoc": int(assoc), **position}


def caret_at_end(source: Text) -> list[dict[str, Any]]:
    """``cursors`` for an awareness state: a caret after the last character (sticks to it when
    more is typed after it, as a caret that just finished typing does)."""
    # Before the end, not after it: "after the end" names a character that does not exist yet.
    position = relative(source, utf16_len(str(source)), Assoc.BEFORE)
    return [{"anchor": position, "head": position, "primary": True, "empty": True}]


def notebook_cells(ydoc: Doc) -> Array:
    """The shared cells of a notebook room's document (jupyter_ydoc's schema: ``cells``)."""
    return ydoc.get("cells", type=Array)


def cell_source(ydoc: Doc, cell_id: str) -> Text | None:
    for ycell in notebook_cells(ydoc):
        if isinstance(ycell, Map) and ycell.get("id") == cell_id:
            source = ycell.get("source")
            return source if isinstance(source, Text) else None
    return None


def cell_of(position: Any, ydoc: Doc) -> str | None:
    """The id of the cell whose source ``position`` (a yjs relative position) points into.

    A position names a character (or a text) by id, and pycrdt gives back only its offset, not the
    text it lies in: the cell is the one where a position made at that offset names the same thing.
    """
    if not isinstance(position, Mapping):
        return None
    sources = [
        (ycell.get("id"), ycell.get("source"))
        for ycell in notebook_cells(ydoc)
        if isinstance(ycell, Map) and isinstance(ycell.get("source"), Text)
    ]
    try:
        item = position.get("item")
        if isinstance(item, Mapping):
            if not _known(ydoc, item):
                return None  # pycrdt panics on a position the document has not seen
            assoc = Assoc.BEFORE if (position.get("assoc") or 0) < 0 else Assoc.AFTER
            full = {"type": None, "tname": None, "assoc": 0, **position}
            with ydoc.transaction() as txn:
                index = StickyIndex.from_json(full).get_index(txn)
            return _first(cid for cid, text in sources if _names(text, index, assoc, "item", position))
        if position.get("type"):
            return _first(cid for cid, text in sources if _names(text, 0, Assoc.BEFORE, "type", position))
    except BaseException as err:  # a malformed position from a client, or a pycrdt panic
        if isinstance(err, (KeyboardInterrupt, SystemExit)):
            raise
    return None


def _names(text: Text, index: int, assoc: Assoc, key: str, position: Mapping[str, Any]) -> bool:
    """Whether a position at ``index`` of ``text`` names the same character (or text) as ``position``."""
    length = utf16_len(str(text))
    if key == "item" and not (0 < index <= length if assoc == Assoc.BEFORE else 0 <= index < length):
        return False
    return StickyIndex.new(text, index, assoc).to_json().get(key) == position.get(key)


def _known(ydoc: Doc, item: Mapping[str, Any]) -> bool:
    """Whether the document has the character ``item`` names (its state vector covers it)."""
    client, clock = item.get("client"), item.get("clock")
    if not isinstance(client, int) or not isinstance(clock, int):
        return False
    decoder = Decoder(ydoc.get_state())
    for _ in range(decoder.read_var_uint()):
        if decoder.read_var_uint() == client:
            return clock < decoder.read_var_uint()
        decoder.read_var_uint()
    return False


def _first(ids: Iterable[Any]) -> str | None:
    for cid in ids:
        return str(cid) if cid is not None else None
    return None
