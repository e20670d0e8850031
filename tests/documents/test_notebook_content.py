"""The forced save's read of a live notebook (documents/content.py) is exactly ``YNotebook.get()``:
what reaches the file does not depend on which save wrote it (issue 21)."""

from __future__ import annotations

import copy
import math

import nbformat
import pytest
from jupyter_ydoc import YNotebook
from pycrdt import Map

from jupyter_mcp_ext.documents.content import notebook_content


def _live(nb: dict) -> YNotebook:
    doc = YNotebook()
    doc.set(copy.deepcopy(nb))
    return doc


def _varied(minor: int = 5) -> dict:
    nb = nbformat.v4.new_notebook()
    nb.nbformat_minor = minor
    nb.metadata = {"kernelspec": {"name": "python3"}, "ratio": 1.5, "count": 2.0, "none": None, "big": 1e20}
    code = nbformat.v4.new_code_cell("print('é😀\u2028')", metadata={"tags": ["a"], "x": None})
    code.execution_count = 3
    code.outputs = [
        nbformat.v4.new_output("stream", text="out\n"),
        nbformat.v4.new_output(
            "execute_result", data={"application/json": {"a": [1, 2.5, None, {"b": 3.0}]}}, execution_count=3
        ),
    ]
    fresh = nbformat.v4.new_code_cell("")  # never run: execution_count null
    md = nbformat.v4.new_markdown_cell("# hi", attachments={})
    md_with = nbformat.v4.new_markdown_cell(
        "![x](attachment:x.png)", attachments={"x.png": {"image/png": "AA=="}}
    )
    raw = nbformat.v4.new_raw_cell("raw", attachments={})
    nb.cells = [code, fresh, md, md_with, raw, *[nbformat.v4.new_code_cell(f"y = {i}") for i in range(50)]]
    return nb


@pytest.mark.parametrize("minor", [4, 5])
def test_the_same_json_as_get(minor: int) -> None:
    doc = _live(_varied(minor))
    doc.ycells[0]["execution_state"] = "running"  # the live state a save leaves out
    assert notebook_content(doc) == doc.get()


def test_cells_sharing_an_id_are_left_to_get() -> None:
    nb = _varied()
    twin = copy.deepcopy(nb.cells[6])
    other = copy.deepcopy(nb.cells[7])
    other.id = nb.cells[8].id
    nb.cells += [twin, other]
    doc = _live(nb)
    found = notebook_content(doc)
    assert found == doc.get()  # the same doc: get() renamed the other in it, for good
    assert len(found["cells"]) == len(nb.cells) - 1  # the exact copy is dropped, as get() does
    assert len({cell["id"] for cell in found["cells"]}) == len(found["cells"])


@pytest.mark.parametrize("where", ["cell metadata", "output", "notebook metadata"])
def test_a_non_finite_number_fails_as_get_fails(where: str) -> None:
    doc = _live(_varied())
    with doc.ydoc.transaction():
        if where == "cell metadata":
            doc.ycells[0]["metadata"]["bad"] = math.inf
        elif where == "output":
            doc.ycells[0]["outputs"][1]["data"] = {"application/json": {"a": [1, math.nan]}}
        else:
            doc.ydoc.get("meta", type=Map)["metadata"]["bad"] = -math.inf
    with pytest.raises((OverflowError, ValueError)) as expected:
        doc.get()
    with pytest.raises(expected.type):
        notebook_content(doc)
