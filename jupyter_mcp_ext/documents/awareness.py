"""The people in a room, as its awareness says: one reading for naming an edit and for presence.

JupyterLab puts each tab's ``user`` (``username``, ``name``, ``display_name``...) in the room's
awareness, keyed by the tab's Yjs client id. The server's own client is no person, nor is an agent:
its user is a bot, or its state carries ``mcp`` (``people/presence.py`` sends both).
"""

from __future__ import annotations

from typing import Any


def is_agent(state: Any) -> bool:
    user = state.get("user") if isinstance(state, dict) else None
    return bool(isinstance(user, dict) and user.get("bot")) or (isinstance(state, dict) and "mcp" in state)


def people(awareness: Any) -> dict[int, dict[str, Any]]:
    """Client id -> awareness state of every person in the room (a state with a ``user``)."""
    if awareness is None:
        return {}
    own = getattr(awareness, "client_id", None)
    return {
        client: state
        for client, state in dict(getattr(awareness, "states", None) or {}).items()
        if client != own
        and isinstance(state, dict)
        and isinstance(state.get("user"), dict)
        and not is_agent(state)
    }


def name(state: dict[str, Any]) -> str | None:
    """The name a person shows under (display name, else name, else user name)."""
    user = state["user"]
    found = user.get("display_name") or user.get("name") or user.get("username")
    return str(found) if found else None
