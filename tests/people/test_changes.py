"""The journal's diff of two snapshots (people/changes.py), on notebooks large and small.

The diff works with set and list operations rather than loops over every cell (issue 21: a call
that touches one cell must not cost more on a 2,000-cell notebook); these check it still finds
exactly the call's changes, with the positions a revert needs.
"""

from __future__ import annotations

import random

from jupyter_ydoc import YNotebook

from jupyter_mcp_ext.people.changes import CellState, Snapshot, came_and_went, diff, snapshot, targets
from jupyter_mcp_ext.tools.cells import ClearOutputs, DeleteCells, InsertCells, UpdateCell
from jupyter_mcp_ext.tools.execution import ExecuteCells


def _cell(cid: str, source: str = "x") -> CellState:
    return CellState(cid, "code", source, {}, None, 0)


def _order(n: int) -> list[str]:
    return [f"c{i:05d}" for i in range(n)]


def test_one_insert_in_a_big_notebook_is_one_change_at_its_index() -> None:
    before = _order(2000)
    after = [*before[:1001], "new", *before[1001:]]
    found = diff(Snapshot(before, {}), Snapshot(after, {"new": _cell("new", "y = 1")}))
    assert [(c.kind, c.cell_id, c.after, c.undo) for c in found] == [
        ("insert", "new", "y = 1", {"index": 1001})
    ]


def test_one_move_in_a_big_notebook_is_one_move_with_its_neighbours() -> None:
    before = _order(2000)
    after = list(before)
    after.insert(1500, after.pop(1000))
    found = diff(Snapshot(before, {}), Snapshot(after, {}))
    assert [(c.kind, c.cell_id) for c in found] == [("move", "c01000")]
    assert found[0].undo == {"index": 1000, "neighbours": ["c00999", "c01001"]}
    assert (found[0].before, found[0].after) == ("at index 1000", "at index 1500")


def test_a_deleted_cell_read_before_comes_back_where_it_was() -> None:
    before = _order(2000)
    after = before[:700] + before[701:]
    found = diff(Snapshot(before, {"c00700": _cell("c00700", "gone")}), Snapshot(after, {}))
    assert [(c.kind, c.cell_id, c.undo["index"], c.undo["neighbours"]) for c in found] == [
        ("delete", "c00700", 700, ["c00699", "c00701"])
    ]


def test_an_unchanged_order_with_an_edited_cell_is_one_update() -> None:
    before = _order(2000)
    found = diff(
        Snapshot(before, {"c00042": _cell("c00042", "a")}),
        Snapshot(list(before), {"c00042": _cell("c00042", "b")}),
    )
    assert [(c.kind, c.cell_id, c.before, c.after) for c in found] == [("update", "c00042", "a", "b")]


def test_many_changes_at_once_are_each_found() -> None:
    """Inserts, deletes and moves together, many of them (the paths for more than a few ids)."""
    rng = random.Random(21)
    before = _order(600)
    after = [cid for cid in before if rng.random() > 0.2]  # about 120 deleted
    block = after[100:300]
    after = after[:100] + block[::-1] + after[300:]  # a reversed run: moves
    new = [f"n{i}" for i in range(100)]
    for cid in new:
        after.insert(rng.randrange(len(after) + 1), cid)
    read_before = {cid: _cell(cid) for cid in before}
    found = diff(Snapshot(before, read_before), Snapshot(after, {cid: _cell(cid) for cid in new}))
    kinds = {c.kind for c in found}
    assert kinds == {"insert", "delete", "move"}
    assert {c.cell_id for c in found if c.kind == "insert"} == set(new)
    assert {c.cell_id for c in found if c.kind == "delete"} == set(before) - set(after)
    for c in found:
        if c.kind == "insert":
            assert after[c.undo["index"]] == c.cell_id
        elif c.kind in ("delete", "move"):
            assert before[c.undo["index"]] == c.cell_id
    # A reversed run of 200 keeps one cell in place at most: the rest are moves.
    assert len([c for c in found if c.kind == "move"]) >= 190


def test_the_snapshot_after_a_call_takes_whole_ids_only() -> None:
    """A prefix names a cell in the snapshot before a call; after it, the ids that snapshot found are
    looked up whole (issue 21: a deleted cell was looked for as a prefix of every id, a scan in Python
    of the whole notebook on every delete)."""
    doc = YNotebook()
    doc.set({"cells": [{"id": cid, "cell_type": "code", "source": cid} for cid in ("abcd1234", "abcd12345")]})
    assert set(snapshot(doc, {"abcd12"}).cells) == {"abcd1234", "abcd12345"}
    assert set(snapshot(doc, {"abcd12"}, exact=True).cells) == set()
    assert set(snapshot(doc, {"abcd1234"}, exact=True).cells) == {"abcd1234"}


def test_what_came_and_went_is_found_between_the_common_ends() -> None:
    """came_and_went looks only between the common start and end (issue 21: four sets of every id
    per insert or delete); it finds what sets of the whole order find, repeated ids included."""
    rng = random.Random(5)
    for _ in range(300):
        before = [f"c{rng.randrange(60)}" for _ in range(rng.randrange(0, 40))]  # repeats on purpose
        after = list(before)
        for _ in range(rng.randrange(0, 4)):
            if after and rng.random() < 0.5:
                del after[rng.randrange(len(after))]
            else:
                after.insert(rng.randrange(len(after) + 1), f"c{rng.randrange(80)}")
        had, has = set(before), set(after)
        assert came_and_went(before, after) == (has - had, had - has), (before, after)
    big = _order(2000)
    assert came_and_went(big, [*big[:1000], "new", *big[1000:]]) == ({"new"}, set())
    assert came_and_went(big, big[:700] + big[701:]) == (set(), {"c00700"})


def test_the_cells_a_call_is_snapshotted_in_come_from_its_arguments() -> None:
    update = UpdateCell(path="a.ipynb", cell_id="abcd", old_string="x", new_string="y")
    assert targets("update_cell", update) == {"abcd"}
    assert targets("delete_cells", DeleteCells(path="a.ipynb", cell_ids=["ab12", "cd34", "ab12"])) == {
        "ab12",
        "cd34",
    }
    assert targets("insert_cells", InsertCells(path="a.ipynb", cells=[{"source": "z"}])) == set()
    assert targets("execute_cells", ExecuteCells(path="a.ipynb", cell_ids=["ab12"])) == {"ab12"}
    assert targets("execute_cells", ExecuteCells(path="a.ipynb", cell_ids=["ab12"], all=True)) is None
    assert targets("clear_outputs", ClearOutputs(path="a.ipynb")) is None  # every cell
    assert targets("clear_outputs", ClearOutputs(path="a.ipynb", cell_ids=["ab12"])) == {"ab12"}
