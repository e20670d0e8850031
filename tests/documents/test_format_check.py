"""A notebook older than nbformat 4.5 gets cell ids when an agent may write it; the format is read on
the first open and again only after the notebook's format keys change (documents/rooms.py, issue 21):
a reload from disk, or any client's write, puts an old format back, and the next open upgrades it."""

from __future__ import annotations

import nbformat
from jupyter_ydoc import YNotebook
from pycrdt import Map

from jupyter_mcp_ext.documents.rooms import _upgrade_to_cell_ids


def _notebook(minor: int) -> YNotebook:
    nb = nbformat.v4.new_notebook()
    nb.nbformat_minor = minor
    nb.cells.append(nbformat.v4.new_code_cell("x = 1"))
    doc = YNotebook()
    doc.set(nb)
    return doc


def _minor(doc: YNotebook) -> int:
    return int(doc.ydoc.get("meta", type=Map)["nbformat_minor"])


def test_an_old_format_put_back_is_upgraded_at_the_next_open() -> None:
    doc = _notebook(4)
    _upgrade_to_cell_ids(doc)
    assert _minor(doc) == 5
    _upgrade_to_cell_ids(doc)  # checked: nothing to read
    assert _minor(doc) == 5
    doc.set(nbformat.reads(nbformat.writes(_as_44()), as_version=4))  # a reload from an old file
    assert _minor(doc) == 4
    _upgrade_to_cell_ids(doc)
    assert _minor(doc) == 5


def test_an_old_format_written_by_another_client_is_upgraded_at_the_next_open() -> None:
    doc = _notebook(5)
    _upgrade_to_cell_ids(doc)
    peer = YNotebook()
    peer.ydoc.apply_update(doc.ydoc.get_update())
    peer.ydoc.get("meta", type=Map)["nbformat_minor"] = 4  # a remote client's change
    doc.ydoc.apply_update(peer.ydoc.get_update(doc.ydoc.get_state()))
    assert _minor(doc) == 4
    _upgrade_to_cell_ids(doc)
    assert _minor(doc) == 5


def test_a_current_notebook_is_left_as_it_is() -> None:
    doc = _notebook(5)
    before = doc.ydoc.get_state()
    _upgrade_to_cell_ids(doc)
    _upgrade_to_cell_ids(doc)
    assert doc.ydoc.get_state() == before


def _as_44() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.nbformat_minor = 4
    nb.cells.append(nbformat.v4.new_code_cell("x = 1"))
    for cell in nb.cells:
        cell.pop("id", None)
    return nb
