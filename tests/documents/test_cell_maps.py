"""The cell-id cache keeps each cell's shared map beside its id (documents/cell_ids.py), so that a
call on one cell, the journal's snapshots and a save's read do not find cells by walking the array
from its start (issue 21: 15 ns a cell for each ``ycells[i]``; quadratic over a whole notebook).
These check that the maps it holds are always the document's own cells, in its order."""

from __future__ import annotations

import math
import random

import pytest
from jupyter_ydoc import YNotebook

from jupyter_mcp_ext.documents import cells as nb
from jupyter_mcp_ext.documents.cell_ids import id_of, maps
from jupyter_mcp_ext.documents.content import notebook_content


def _doc(n: int) -> YNotebook:
    doc = YNotebook()
    doc.set(
        {
            "cells": [
                {"id": f"c{i:04d}", "cell_type": "code", "source": f"x = {i}", "metadata": {}, "outputs": []}
                for i in range(n)
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    return doc


def _as_in_the_document(doc: YNotebook) -> None:
    real = [(str(c["id"]), str(c["source"])) for c in (doc.ycells[i] for i in range(len(doc.ycells)))]
    assert nb.ids(doc) == [cid for cid, _ in real]
    held = maps(doc)
    assert held is not None, "our own edit dropped the cells' maps"
    assert [(id_of(m), str(m["source"])) for m in held] == real
    assert [(id_of(nb.cell_at(doc, i)), nb.source(doc, i)) for i in range(len(real))] == real


def test_the_maps_follow_every_edit_of_our_own() -> None:
    doc = _doc(30)
    nb.ids(doc)  # the cache is filled as a tool's first lookup fills it
    rng = random.Random(11)
    for step in range(120):
        n = len(doc.ycells)
        kind = rng.choice(["insert", "delete", "move", "type", "many"])
        if kind == "insert" or n < 5:
            nb.insert(
                doc,
                rng.randrange(n + 1),
                [{"cell_type": "code", "source": f"new {step}.{k}"} for k in range(3)],
            )
        elif kind == "delete":
            nb.delete(doc, rng.sample(range(n), rng.randrange(1, 3)))
        elif kind == "move":
            nb.move(doc, rng.randrange(n), rng.randrange(n + 1))
        elif kind == "type":
            i = rng.randrange(n)
            nb.set_type(doc, i, "markdown" if nb.summary(doc, i)["type"] == "code" else "code")
        else:  # over 64 at once: taken out through another path
            nb.insert(doc, 0, [{"cell_type": "raw", "source": f"r{k}"} for k in range(70)])
            nb.delete(doc, list(range(1, 71)))
        _as_in_the_document(doc)


def test_a_change_by_anyone_else_drops_them() -> None:
    doc = _doc(10)
    nb.ids(doc)
    with doc.ydoc.transaction():  # as a person's tab inserts: not through this module
        doc.ycells.insert(3, doc.create_ycell({"id": "tab", "cell_type": "code", "source": "typed"}))
    assert maps(doc) is None
    assert id_of(nb.cell_at(doc, 3)) == "tab"  # found by index until the cache is filled again
    _as_in_the_document(doc)


def test_the_saves_read_of_the_cached_maps_still_finds_a_non_finite_number() -> None:
    doc = _doc(200)
    nb.ids(doc)
    nb.insert(doc, 100, [{"cell_type": "code", "source": "y"}])  # the maps come from our own edit
    assert maps(doc) is not None
    assert notebook_content(doc) == doc.get()
    with doc.ydoc.transaction():
        doc.ycells[150]["execution_count"] = math.nan  # stored where a never-run cell has null
    with pytest.raises(ValueError):
        doc.get()
    with pytest.raises(ValueError):
        notebook_content(doc)
