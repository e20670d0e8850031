"""Carets in shared cells, both ways: one for an agent to show, and the cell a person's caret is in.

A caret in JupyterLab is a yjs relative position: the id of the character it sticks to (``item``),
or of the text itself (``type``) when there is no character to stick to. pycrdt's ``StickyIndex``
builds and reads them, with three traps (checked against JupyterLab 4.6): it counts UTF-16 units
like the browser while ``len(Text)`` counts UTF-8 bytes; its JSON omits the keys that are null, and
the browser needs all of ``type``, ``tname``, ``item`` and ``assoc``; and it cannot stick to a
character of an empty text, so there the caret sticks to the text itself (index 0, before).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pycrdt import Array, Assoc, Decoder, Doc, StickyIndex, Text

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


def _sources(ydoc: Doc) -> Iterator[tuple[Callable[[], str], Text]]:
    """Each cell's source text, and its id on demand, in order; call inside a transaction.

    Not cached: texts kept fresh by an observer would keep the document of every closed room alive
    (pycrdt's observer holds the document, out of the garbage collector's sight). Item access only:
    ``Map.get`` lists the map's keys first.
    """
    for ycell in notebook_cells(ydoc):
        try:
            source = ycell["source"]
        except (KeyError, TypeError):
            continue
        if isinstance(source, Text):
            yield (lambda ycell=ycell: str(ycell["id"])), source


def cell_of(position: Any, ydoc: Doc, hint: tuple[str, Text] | None = None) -> str | None:
    """The id of the cell whose source ``position`` (a yjs relative position) points into.

    A position names a character (or a text) by id, and pycrdt gives back only its offset, not the
    text it lies in: the cell is the one where a position made at that offset names the same thing.
    ``hint``, the cell found last time, is tried first: people mostly stay in a cell, and scanning
    costs tens of microseconds a cell.
    """
    if not isinstance(position, Mapping):
        return None
    try:
        item, kind = position.get("item"), position.get("type")
        with ydoc.transaction() as txn:  # one for every access: pycrdt opens one per access otherwise
            if isinstance(item, Mapping):
                if not _known(ydoc, item):
                    return None  # pycrdt panics on a position the document has not seen
                assoc = Assoc.BEFORE if (position.get("assoc") or 0) < 0 else Assoc.AFTER
                target = _encoded(item=dict(item), assoc=int(assoc))
                index = StickyIndex.decode(target).get_index(txn)
                lowest = 1 if assoc == Assoc.BEFORE else 0

                def names(text: Text) -> bool:
                    length = utf16_len(str(text))
                    if not lowest <= index <= length - 1 + lowest:
                        return False
                    return StickyIndex.new(text, index, assoc).encode() == target

            elif isinstance(kind, Mapping):
                target = _encoded(type=dict(kind), assoc=int(Assoc.BEFORE))

                def names(text: Text) -> bool:
                    return StickyIndex.new(text, 0, Assoc.BEFORE).encode() == target

            else:
                return None
            if hint is not None and names(hint[1]):
                return hint[0]
            for cid, text in _sources(ydoc):
                if names(text):
                    return cid()
    except BaseException as err:  # a malformed position from a client, or a pycrdt panic
        if isinstance(err, (KeyboardInterrupt, SystemExit)):
            raise
    return None


def _encoded(**position: Any) -> bytes:
    """A relative position in pycrdt's binary form, which compares faster than its JSON."""
    return StickyIndex.from_json({"type": None, "tname": None, "item": None, **position}).encode()


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
