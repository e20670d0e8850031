"""Who else is in a notebook, told to the agent beside what it reads: people with the notebook open,
and the cell each one's caret is in, so "the cell I am in" means something to the agent."""

from __future__ import annotations

from .toolkit import ToolContext, ToolResult


def with_people(ctx: ToolContext, api: str, result: ToolResult) -> ToolResult:
    """Add ``people`` (name, cell_id) and one text line; nothing at all when no one is there."""
    presence = ctx.services.presence
    people = presence.people(api) if presence is not None else []
    if not people:
        return result
    where = ", ".join(f"{p['name']} in {p['cell_id']}" if "cell_id" in p else p["name"] for p in people)
    result.data = {**result.data, "people": people}
    result.text = f"[open by: {where}]\n{result.text}"
    return result
