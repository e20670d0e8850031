"""Undoing one change to a text while keeping later edits: the three-way merge a revert uses."""

from __future__ import annotations

import pytest

from jupyter_mcp_ext.people.merge import Conflict, undo_text


@pytest.mark.parametrize(
    ("before", "after", "current", "expected"),
    [
        ("a = 1", "a = 2", "a = 2", "a = 1"),  # nothing happened since
        ("a = 1\nb = 2", "a = 10\nb = 2", "# x\na = 10\nb = 2\nc = 3", "# x\na = 1\nb = 2\nc = 3"),
        ("x = 1", "x = 1\nprint(x)", "# top\nx = 1\nprint(x)", "# top\nx = 1"),  # an added line goes
        ("a\nb\nc", "a\nc", "a\nc\nd", "a\nb\nc\nd"),  # a deleted line comes back between its neighbours
        ("one two three", "one 2 three 3", "0 one 2 three 3", "0 one two three"),  # two spans
        ("", "new text", "new text!", "!"),  # what was typed after the agent's text stays
    ],
)
def test_undo_keeps_later_edits_outside_the_change(before, after, current, expected):
    assert undo_text(before, after, current) == expected


def test_an_edit_inside_the_agents_text_is_a_conflict():
    with pytest.raises(Conflict, match="edited since"):
        undo_text("limit = 1", "limit = 500", "limit = 5_00")
    with pytest.raises(Conflict, match="edited since"):
        undo_text("x\ny\nz", "x\nz", "x\nQ\nz")  # typed where the agent had deleted
