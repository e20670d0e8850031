"""Where a live notebook's cells are: their ids in order, cached until the cell list changes
shape, and a cell found by its id (or a unique prefix of it).

Every tool addresses cells by id, and reading every id from pycrdt costs about 7 µs a cell: the
cache keeps a call on one cell from paying for the whole notebook. It keeps each cell's shared map
too: pycrdt finds ``ycells[i]`` by walking the array from its start (15 ns a cell, so a read of
every cell by index is quadratic: 50 ms on 2,000 cells), while a map already found is read at once.
"""

from __future__ import annotations

import secrets
import weakref
from collections.abc import Container, Iterable
from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import Map

from ..errors import ToolError
from . import observers

_MIN_PREFIX = 4


class _IdCache:
    """A notebook's cell ids in order, kept until its cell list changes shape.

    Reading every cell's id costs about 7 µs a cell in pycrdt (3.5 ms on 500 cells), and almost
    every tool needs the list. An observer on the cell array drops it when cells are inserted,
    deleted or replaced, by anyone; edits inside cells (a person typing) leave it valid. Our own
    structural edits put the updated list back at once, so an agent's next call finds it ready.
    """

    def __init__(self, doc: YNotebook):
        self.ids: list[str] | None = None
        self.cells: list[Map] | None = None  # each cell's map, in the same order (None: not known)
        self._subscription = observers.observe(doc, doc.ycells, self._drop)

    def _drop(self, _event: Any) -> None:
        self.ids = self.cells = None


_caches: weakref.WeakKeyDictionary[YNotebook, _IdCache] = weakref.WeakKeyDictionary()


def _cache(doc: YNotebook) -> _IdCache:
    cache = _caches.get(doc)
    if cache is None:
        cache = _caches[doc] = _IdCache(doc)
    return cache


def ids(doc: YNotebook) -> list[str]:
    """The cell ids in order (a copy: callers may keep or change it)."""
    cache = _cache(doc)
    if cache.ids is None:
        with doc.ydoc.transaction():  # one transaction for the whole scan
            cache.cells = list(doc.ycells)
            cache.ids = [id_of(ycell) for ycell in cache.cells]
    return list(cache.ids)


def maps(doc: YNotebook) -> list[Map] | None:
    """Every cell's shared map in order (a copy), when the cache holds them; else None.

    Only between transactions that change the cell list: inside one (a revert's, a script's), the
    cache learns of its inserts and deletes when it ends."""
    cache = _cache(doc)
    return list(cache.cells) if cache.cells is not None and cache.ids is not None else None


def cell_at(doc: YNotebook, i: int) -> Map:
    """The cell at index ``i`` (0 <= i < len), from the cache when it holds it (see ``maps``)."""
    cache = _cache(doc)
    cells = cache.cells
    if cells is not None and cache.ids is not None and 0 <= i < len(cells):
        return cells[i]
    return doc.ycells[i]


def index_of(doc: YNotebook, cell_id: str) -> int | None:
    """The index of the cell whose id is exactly ``cell_id`` by the cache (None if none), without
    copying the list; between structural transactions, as ``maps``."""
    cache = _cache(doc)
    return _index(cache.ids if cache.ids is not None else ids(doc), cell_id)


def _index(order: list[str], cell_id: str) -> int | None:
    try:  # one scan in C, where ``in`` then ``index`` took two
        return order.index(cell_id)
    except ValueError:
        return None


def id_of(ycell: Map) -> str:
    try:  # item access: Map.get and `in` list the map's keys first
        return str(ycell["id"])
    except KeyError:
        return ""


def remember(doc: YNotebook, new_ids: list[str], cells: list[Map] | None = None) -> None:
    """After our own structural edit (its transaction closed, so the observer has run): the ids in
    order and, when the edit knows them, the cells' maps (else cells are found by index until the
    cache is next filled)."""
    cache = _cache(doc)
    cache.ids = new_ids
    cache.cells = cells if cells is not None and len(cells) == len(new_ids) else None


def find(doc: YNotebook, cell_id: str, *, cell_ids: list[str] | None = None) -> int:
    """Index of the cell with this id (or a unique prefix of at least 4 characters of it)."""
    all_ids = ids(doc) if cell_ids is None else cell_ids
    i = _index(all_ids, cell_id)
    if i is not None:
        if id_of(doc.ycells[i]) == cell_id:  # the document itself, not a map the cache holds
            return i
        _cache(doc).ids = None  # an id changed inside a cell (a deduplication on save): look again
        return find(doc, cell_id)
    if len(cell_id) >= _MIN_PREFIX:
        matches = [i for i, cid in enumerate(all_ids) if cid.startswith(cell_id)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise ToolError(
                f"Cell id '{cell_id}' is ambiguous ({len(matches)} cells start with it); give the full id."
            )
    raise ToolError(
        f"No cell with id '{cell_id}' in this notebook. Cell ids come from get_notebook; "
        "call it again if the notebook may have changed."
    )


def find_all(doc: YNotebook, cell_ids: Iterable[str]) -> list[int]:
    """Indices for every id (each once, however often it is named), checking them all before anything
    is done with any: 5,000 copies of one id made read_cells render the cell 5,000 times."""
    all_ids = ids(doc)
    return [find(doc, cid, cell_ids=all_ids) for cid in dict.fromkeys(cell_ids)]


def position(doc: YNotebook, *, before: str | None, after: str | None, index: int | None) -> int:
    """Where new cells go: before/after a cell id (ids win over an index), else index, else the end."""
    count = len(doc.ycells)
    if before is not None and after is not None:
        raise ToolError("Give either 'before' or 'after', not both.")
    if before is not None:
        return find(doc, before)
    if after is not None:
        return find(doc, after) + 1
    if index is None:
        return count
    if not -count - 1 <= index <= count:
        raise ToolError(
            f"Index {index} is out of range: this notebook has {count} cells (0..{count}, or -1 for the end)."
        )
    return index if index >= 0 else count + 1 + index


def new_id(taken: Container[str], also: Container[str] = ()) -> str:
    # Short ids cost an agent fewer tokens than uuids; nbformat only asks that they be unique.
    while True:
        candidate = secrets.token_hex(4)
        if candidate not in taken and candidate not in also:
            return candidate
