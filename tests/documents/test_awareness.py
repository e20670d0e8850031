"""Who is in a room, read from its awareness the same way for naming an edit and for presence."""

from __future__ import annotations

from jupyter_ydoc import YNotebook
from pycrdt import Awareness, Doc

from jupyter_mcp_ext.documents import activity, awareness


def joined(room: Awareness, state: dict) -> int:
    """A tab (or an agent) with its own client id announces ``state`` to the room."""
    tab = Awareness(Doc())
    tab.set_local_state(state)
    room.apply_awareness_update(tab.encode_awareness_update([tab.client_id]), "tab")
    return tab.client_id


def test_people_are_the_tabs_with_a_user_not_the_server_nor_agents():
    doc = Doc()
    room = Awareness(doc)
    room.set_local_state({"user": {"name": "the server"}})
    grace = joined(room, {"user": {"username": "grace", "display_name": "Grace Hopper"}})
    ada = joined(room, {"user": {"username": "ada"}})
    joined(room, {"user": {"name": "Claude", "bot": True}})
    joined(room, {"user": {"name": "Another agent"}, "mcp": {"agent": "a1"}})
    joined(room, {"cursors": []})  # a tab that has not said who it is yet

    people = awareness.people(room)
    assert sorted(people) == sorted([grace, ada])
    assert [awareness.name(people[c]) for c in (grace, ada)] == ["Grace Hopper", "ada"]

    notebook = YNotebook(doc, room)
    assert set(activity.who(notebook).split(", ")) == {"Grace Hopper", "ada"}  # no change: everyone
    assert activity.who(notebook, activity.Touch(0.0, frozenset({ada}))) == "ada"
