"""Who else is in a notebook, told to the agent beside what it reads: people with the notebook open,
and the cell each one's caret is in, so "the cell I am in" means something to the agent; and which of
its own changes there people undid, so it does not redo them blindly."""

from __future__ import annotations

import logging

from jupyter_ydoc import YNotebook

from ..people.review import undone_for, undone_line
from .toolkit import ToolContext, ToolResult

log = logging.getLogger(__name__)


def with_people(ctx: ToolContext, api: str, doc: YNotebook, result: ToolResult) -> ToolResult:
    """Add ``people`` (name, cell_id) and one text line; nothing at all when no one is there."""
    presence = ctx.services.presence
    try:
        people = presence.people(api, doc, room_id=ctx.rooms.get(api)) if presence is not None else []
    except Exception:  # knowing who is there is a courtesy: it never costs the agent its read
        log.exception("Reading who is in %s failed", api)
        people = []
    if not people:
        return result
    where = ", ".join(f"{p['name']} in {p['cell_id']}" if "cell_id" in p else p["name"] for p in people)
    result.data = {**result.data, "people": people}
    result.text = f"[open by: {where}]\n{result.text}"
    return result


def with_undone(ctx: ToolContext, api: str, cells: set[str] | None, result: ToolResult) -> ToolResult:
    """Add ``undone`` and one text line when people undid this agent's changes to ``cells`` (None:
    anywhere in the notebook); nothing at all otherwise."""
    journal = ctx.journal
    if journal is None or not journal.undone():  # the usual case: no agent to look up
        return result
    try:
        agent = ctx.services.agents.agent_for(ctx.request, ctx.handler)
        entries = undone_for(journal, agent, api, cells)
    except Exception:  # a courtesy, like who is there: it never costs the agent its read
        log.exception("Reading what people undid in %s failed", api)
        return result
    if not entries:
        return result
    undone = [{"entry": e.id, "tool": e.tool, "cell_ids": e.cell_ids, "by": e.reverted_by} for e in entries]
    result.data = {**result.data, "undone": undone}
    result.text = f"{undone_line(entries)}\n{result.text}"
    return result
