"""Who else is in a notebook, told to the agent beside what it reads: people with the notebook open,
and the cell each one's caret is in, so "the cell I am in" means something to the agent; and which of
its own changes there people undid, so it does not redo them blindly."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from jupyter_ydoc import YNotebook

from .toolkit import ToolContext, ToolResult

log = logging.getLogger(__name__)

SHOWN_UNDONE = 3  # undone changes named in one line of an agent's read


class Undone(Protocol):
    """A journal entry a person undid, as the agent is told of it (``people.journal.Entry``)."""

    @property
    def id(self) -> int: ...
    @property
    def agent(self) -> str: ...
    @property
    def client(self) -> str: ...
    @property
    def user(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def path(self) -> str | None: ...
    @property
    def reverted(self) -> bool: ...
    @property
    def reverted_by(self) -> dict[str, str] | None: ...
    @property
    def cell_ids(self) -> list[str]: ...


class UndoneJournal(Protocol):
    """What the tools read of the journal (``people.journal.Journal``): the entries people undid."""

    def undone(self) -> Sequence[Undone]: ...


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


def undone_for(journal: UndoneJournal, agent: Any, path: str, cells: set[str] | None) -> list[Undone]:
    """Entries of this agent (its session, or the same name for the same user) on ``path`` that a
    person undid, newest first; only those touching ``cells`` when given."""
    record = agent.to_json()
    client, user = record.get("name") or "", record.get("user")
    found: list[Undone] = []
    for e in reversed(journal.undone()):
        if not e.reverted or e.reverted_by is None or e.path != path:
            continue
        if e.agent != record["id"] and not (client and (e.client, e.user) == (client, user)):
            continue
        if cells is None or cells & set(e.cell_ids):
            found.append(e)
    return found


def undone_line(entries: list[Undone]) -> str:
    """One line for an agent's read: which of its changes people undid, by whom."""
    parts = []
    for e in entries[:SHOWN_UNDONE]:
        by = e.reverted_by or {}
        cells = ", ".join(e.cell_ids[:3]) + ("…" if len(e.cell_ids) > 3 else "")
        where = f" of {cells}" if cells else ""
        who = by.get("name") or by.get("user")
        parts.append(f"your {e.tool}{where} (entry {e.id}) by {who} at {by.get('at')}")
    more = f"; {len(entries) - SHOWN_UNDONE} more" if len(entries) > SHOWN_UNDONE else ""
    return f"[undone by people, do not redo without asking: {'; '.join(parts)}{more}]"
