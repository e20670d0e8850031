"""What a cell would hold without the agents' changes waiting for review: the ``original`` side of the
in-cell diff (the merge view a person opens with "Show diff").

It is the cell's text now with each pending agent change taken back out by the journal's three-way
undo, newest first, so what people typed since stays on both sides and the diff shows only what the
agents did. When a change cannot be taken out exactly (its text was edited since, or the journal kept
it for review only), the original is the cell's text before the oldest pending change, and ``exact``
says so: the diff then shows people's later edits too.
"""

from __future__ import annotations

from typing import Any

from ..documents import cells as nb
from ..documents.merge import apply, undo
from ..errors import ToolError
from ..services import Services
from .journal import Change, Entry, Journal
from .review import NotFound, ReviewConflict

MAX_CHARS = 1_000_000  # of a cell's text sent to the browser's diff: beyond it the diff is refused


def pending_changes(journal: Journal, path: str, cell_id: str) -> list[tuple[Entry, Change]]:
    """The changes to the cell's text of every entry still waiting for review there, oldest first."""
    found = []
    for entry in journal.entries():
        review = entry.review
        if entry.path != path or review is None or review["state"] != "pending":
            continue
        if cell_id in entry.kept or "*" in entry.kept:
            continue
        found += [
            (entry, c) for c in entry.changes if c.cell_id == cell_id and c.kind in ("insert", "update")
        ]
    return found


def original_text(current: str, changes: list[Change]) -> tuple[str, bool]:
    """``current`` with ``changes`` (oldest first) undone newest first; False when one could not be
    undone exactly, and then the text before the oldest change instead."""
    text = current
    for change in reversed(changes):
        if change.kind == "insert":
            text = ""  # the cell was not there: all of it is the agent's
            continue
        if not change.undo.get("revertible", True) or change.before is None or change.after is None:
            return changes[0].before or "", False
        merged = undo(change.before, change.after, text)
        if merged.conflicts:
            return ("" if changes[0].kind == "insert" else changes[0].before or ""), False
        text = apply(text, merged.edits)
    return text, True


async def diff_of(journal: Journal, services: Services, path: str, cell_id: str) -> dict[str, Any]:
    """The two sides of a cell's diff, as the panel's ``review/diff`` route answers them."""
    changes = pending_changes(journal, path, cell_id)
    if not changes:
        raise ReviewConflict(f"No agent change to the text of cell {cell_id} waits for review in {path}.")
    try:
        _, doc = await services.documents.open(path)
        current = nb.source(doc, nb.find(doc, cell_id))
    except ToolError as err:
        raise NotFound(str(err).split(" Cell ids come from")[0]) from err
    if len(current) > MAX_CHARS:
        raise ReviewConflict(
            f"Cell {cell_id} holds over {MAX_CHARS:,} characters: too large to show as a diff."
        )
    original, exact = original_text(current, [c for _, c in changes])
    return {
        "path": path,
        "cell_id": cell_id,
        "original": original,
        "current": current,
        "exact": exact,
        "entries": list(dict.fromkeys(e.id for e, _ in changes)),
    }
