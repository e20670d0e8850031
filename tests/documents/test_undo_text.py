"""Undoing one change to a text while keeping later edits: the merge a revert uses (the rebase's
merge with the roles turned round, strict where text is put back)."""

from __future__ import annotations

import pytest

from jupyter_mcp_ext.documents.merge import apply, undo


def undone(before: str, after: str, current: str) -> str | None:
    """The text after the undo, or None for a conflict (which must change nothing)."""
    merged = undo(before, after, current)
    if merged.conflicts:
        return None
    assert apply(current, merged.edits) == merged.text  # the splices say the same as the text
    return merged.text


@pytest.mark.parametrize(
    ("before", "after", "current", "expected"),
    [
        ("a = 1", "a = 2", "a = 2", "a = 1"),  # nothing happened since
        ("a = 1\nb = 2", "a = 10\nb = 2", "# x\na = 10\nb = 2\nc = 3", "# x\na = 1\nb = 2\nc = 3"),
        ("x = 1", "x = 1\nprint(x)", "# top\nx = 1\nprint(x)", "# top\nx = 1"),  # an added line goes
        ("a\nb\nc", "a\nc", "a\nc\nd", "a\nb\nc\nd"),  # a deleted line comes back between its neighbours
        ("one two three", "one 2 three 3", "0 one 2 three 3", "0 one two three"),  # two spans
        # What is typed on its own line after the agent's text stays.
        ("", "new text\n", "new text\nmore\n", "more\n"),
        ("a\nc", "a\nb\nc", "a\nb\nQ\nc", "a\nQ\nc"),  # a line added right after the agent's line
        ("a\nc", "a\nb\nc", "a\nQ\nb\nc", "a\nQ\nc"),  # ... or right before it
        ("print(a)", "print(b)", "print(b)  # hi", "print(a)  # hi"),  # typed later on the same line
        ("x\ny\nz", "x\nz", "xQ\nz", "xQ\ny\nz"),  # typed on the line above a deleted line
    ],
)
def test_undo_keeps_later_edits_outside_the_change(before, after, current, expected):
    assert undone(before, after, current) == expected


@pytest.mark.parametrize(
    ("before", "after", "current"),
    [
        ("limit = 1", "limit = 500", "limit = 5_00"),  # typed inside the agent's text
        ("x\ny\nz", "x\nz", "x\nQ\nz"),  # typed where the agent had deleted: which side does y go?
        ("ab", "aXb", "aYXb"),  # typed right before the agent's text, on its line
        ("foo bar", "foo", "foo baz"),  # typed at the point the agent deleted from
        # Changed from the difflib undo, which gave "!": the person's "!" continues the agent's
        # text on the same line (think "f(" completed to "f(x)"), so removing the agent's part and
        # keeping theirs is a guess at what they meant. The merge refuses any change touching the
        # agent's text on its line and changes nothing; typing on a line of its own is kept (above).
        ("", "new text", "new text!"),
        ("ab", "aXb", "aXYb"),  # the same, in the middle of a line (difflib gave "aYb")
    ],
)
def test_an_edit_touching_the_agents_change_is_a_conflict(before, after, current):
    assert undone(before, after, current) is None
