"""Who else is in a notebook, told to the agent beside what it reads: people with the notebook open,
and the cell each one's caret is in, so "the cell I am in" means something to the agent."""

from __future__ import annotations

import logging

from jupyter_ydoc import YNotebook

from .toolkit import ToolContext, ToolResult

log = logging.getLogger(__name__)


def with_people(ctx: ToolContext, api: str, doc: YNotebook, result: ToolResult) -> ToolResult:
    """Add ``people`` (name, cell_id) and one text line; nothing at all when no one is there."""
    presence = ctx.services.presence
    try:
        people = presence.people(api, doc) if presence is not None else []
    except Exception:  # knowing who is there is a courtesy: it never costs the agent its read
        log.exception("Reading who is in %s failed", api)
        people = []
    if not people:
        return result
    where = ", ".join(f"{p['name']} in {p['cell_id']}" if "cell_id" in p else p["name"] for p in people)
    result.data = {**result.data, "people": people}
    result.text = f"[open by: {where}]\n{result.text}"
    return result
