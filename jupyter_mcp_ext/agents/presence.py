"""Agents as collaborators: each one present in the room of the file it works on, and in JupyterLab's
global awareness room (the collaborators panel), as an awareness client of its own.

A room's own awareness state is one identity shared by everything server-side, and forces autosave
on; so each agent gets its own random awareness client id, and its states are sent straight to the
room's connected clients (``YRoom.clients``), never applied to the room's awareness: the server's
autosave decision stays the people's, and the agent's ``autosave`` field echoes their vote for any
client that reads it. Browsers drop a remote state not renewed within 30 s and the server does not
replay states to a tab that joins later, so states are renewed every ``renew_interval`` seconds and
sent again to each client that joins. An agent that leaves sends an empty state.

The other way round, ``people`` reads the people's states in a notebook room: who is there and the
cell their caret is in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import Awareness, Doc, Text, create_awareness_message

from ..documents import awareness as in_room
from ..documents import cells as nb
from ..documents import collaboration
from ..documents.paths import api_path
from ..errors import ToolError
from .cursors import caret_at_end, cell_of
from .directory import Agent, AgentDirectory, Change

log = logging.getLogger(__name__)

GLOBAL_ROOM = collaboration.GLOBAL_AWARENESS_ROOM


@dataclass
class _Slot:
    """One agent's awareness clients: the same random id in its file's room and the global room."""

    client_id: int = field(default_factory=lambda: secrets.randbits(31) + 1)
    room_id: str | None = None
    path: str | None = None  # the agent's path, as it gave it
    api: str | None = None  # that path, normalised
    room: Awareness = field(init=False)
    globe: Awareness = field(init=False)
    unsent: bool = False  # changed while nobody was in its rooms: sent when someone comes (``_run``)

    def __post_init__(self) -> None:
        self.room = Awareness(Doc(client_id=self.client_id))
        self.globe = Awareness(Doc(client_id=self.client_id))


class Presence:
    def __init__(
        self, settings: dict[str, Any], contents: Any, agents: AgentDirectory, *, renew_interval: float = 10.0
    ):
        self._settings = settings
        self._contents = contents
        self._agents = agents
        self.renew_interval = renew_interval
        self._slots: dict[str, _Slot] = {}  # agent id -> its awareness clients
        self._dirty: set[str] = set()
        self._wake = asyncio.Event()
        self._seen: weakref.WeakKeyDictionary[Any, weakref.WeakSet[Any]] = weakref.WeakKeyDictionary()
        # The cell each person's caret was found in, by room and awareness client: tried first.
        self._last_cells: dict[str, dict[int, str]] = {}
        self._task: asyncio.Task[None] | None = None
        agents.on_change(self._on_agent)

    # -- the agent's side --------------------------------------------------------------------

    def _on_agent(self, agent: Agent, what: Change) -> None:
        if not collaboration.enabled(self._settings):
            return  # collaboration is off: no rooms to be present in
        self._dirty.add(agent.id)
        if self._task is None or self._task.done():
            self._wake.set()
            self._task = asyncio.create_task(self._run(), name="jupyter-mcp-ext presence")
        elif collaboration.anyone_in_a_room(
            self._settings
        ):  # else the loop's next look (within a second) will do
            self._wake.set()

    async def _run(self) -> None:
        """Apply agent changes as they come, renew every state, greet clients that joined."""
        renewed = time.monotonic()
        while self._slots or self._dirty:
            # Woken by agents and by clients' awareness; at least every second, to greet the first
            # client of a room that did not exist (nothing announces a new room).
            wait = min(1.0, max(0.0, renewed + self.renew_interval - time.monotonic()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)
            self._wake.clear()
            # Renewed on time even when people's cursor moves wake this loop all the time.
            renew = time.monotonic() - renewed >= self.renew_interval
            if renew:
                renewed = time.monotonic()
            dirty, self._dirty = self._dirty, set()
            # States left unsent go, worked out afresh, to the rooms someone has come to since.
            unsent = {a for a, slot in self._slots.items() if slot.unsent and self._anyone_in(slot.room_id)}
            for agent_id in dirty | unsent | (set(self._slots) if renew else set()):
                try:
                    await self._sync(agent_id, fresh=renew or agent_id in unsent)
                except Exception:  # one agent's trouble must not keep the others out of the room
                    log.exception("Updating the presence of agent %s failed", agent_id)
            try:
                self._greet_newcomers()
            except Exception:
                log.exception("Greeting new clients with the agents' presence failed")

    async def _sync(self, agent_id: str, *, fresh: bool = True) -> None:
        """Send the agent's current state to its room and the global room (or leave them).

        Between renewals (``fresh`` False: an agent's call began or ended) the room found for the
        same path is kept while it is open, rather than asked of the file-id store (a database
        query) on every call; each renewal looks it up again, so a rename is followed within one.
        """
        agent = self._agents.get(agent_id)
        slot = self._slots.get(agent_id)
        path = agent.path if agent is not None else None
        api = None
        if path:
            api = slot.api if slot is not None and slot.path == path else await self._api(path)
        if agent is None or api is None:
            if slot is not None:
                self._leave(slot)
                del self._slots[agent_id]
            return
        if slot is None:
            slot = self._slots[agent_id] = _Slot()
        kept = (
            not fresh
            and slot.api == api
            and slot.room_id is not None
            and self._room(slot.room_id) is not None
        )
        room_id = slot.room_id if kept else self._room_id(api)
        if slot.room_id is not None and slot.room_id != room_id:
            self._send(slot.room_id, slot.room, None)
        slot.room_id, slot.path, slot.api = room_id, path, api
        # Between renewals, a state nobody can see is not worked out (the caret reads the notebook):
        # whoever comes is sent the state first (``_run``).
        slot.unsent = not fresh and not self._anyone_in(room_id)
        if slot.unsent:
            return
        if room_id is not None:
            self._send(room_id, slot.room, await self._room_state(agent, room_id), renew=not kept)
        self._send(GLOBAL_ROOM, slot.globe, self._global_state(agent, api), renew=fresh)

    def _anyone_in(self, room_id: str | None) -> bool:
        """Whether a client is in the agent's room or the global room (where its state shows)."""
        return any(
            collaboration.anyone_in(room)
            for room in (self._room(room_id) if room_id else None, self._room(GLOBAL_ROOM))
        )

    def _leave(self, slot: _Slot) -> None:
        if slot.room_id is not None:
            self._send(slot.room_id, slot.room, None)
        self._send(GLOBAL_ROOM, slot.globe, None)

    async def _room_state(self, agent: Agent, room_id: str) -> dict[str, Any]:
        room = self._room(room_id)
        state: dict[str, Any] = {
            "user": _user(agent),
            "mcp": {"agent": agent.id, "cell_id": agent.cell_id, "state": agent.state},
            "autosave": self._people_vote_autosave(room),
        }
        if room is not None and agent.cell_id and room_id.startswith("json:notebook:"):
            source = _source_of(await self._notebook(room_id), agent.cell_id)
            if source is not None:
                state["cursors"] = caret_at_end(source)
        return state

    def _global_state(self, agent: Agent, api: str) -> dict[str, Any]:
        kind = "notebook" if api.endswith(".ipynb") else "editor"
        return {"user": _user(agent), "current": f"{kind}:{api}", "documents": [api]}

    def _send(
        self, room_id: str, awareness: Awareness, state: dict[str, Any] | None, *, renew: bool = True
    ) -> None:
        """Set the agent's state (a new clock, so every client takes it) and send it to the room;
        unless ``renew``, only when it changed: the room's clients have it, and renewals keep it
        alive (an edit that ends where the last one did changes nothing in the global room)."""
        if not renew and state is not None and state == awareness.get_local_state():
            return
        awareness.set_local_state(state)
        room = self._room(room_id)
        if room is not None:
            self._broadcast(room, awareness, collaboration.clients(room))

    def _broadcast(self, room: Any, awareness: Awareness, channels: list[Any]) -> None:
        message = create_awareness_message(awareness.encode_awareness_update([awareness.client_id]))
        for channel in channels:
            task = asyncio.create_task(_send_quietly(channel, message))
            _pending.add(task)
            task.add_done_callback(_pending.discard)

    def _greet_newcomers(self) -> None:
        """Send every agent's state to the clients that joined a room since it was last sent."""
        wanted: dict[str, list[tuple[Awareness, _Slot]]] = {}
        for slot in self._slots.values():
            wanted.setdefault(GLOBAL_ROOM, []).append((slot.globe, slot))
            if slot.room_id is not None:
                wanted.setdefault(slot.room_id, []).append((slot.room, slot))
        for room_id, awarenesses in wanted.items():
            room = self._room(room_id)
            if room is None:
                continue
            seen = self._watch(room)
            new = [channel for channel in collaboration.clients(room) if channel not in seen]
            if new:
                for awareness, slot in awarenesses:
                    if not slot.unsent and awareness.get_local_state():  # never an old or empty state
                        self._broadcast(room, awareness, new)
                seen.update(new)

    def _watch(self, room: Any) -> weakref.WeakSet[Any]:
        """The clients of ``room`` that have the agents' states; a room's awareness changes when a
        client joins (it sends its own state first), which wakes the greeting."""
        seen = self._seen.get(room)
        if seen is None:
            seen = self._seen[room] = weakref.WeakSet()
            collaboration.awareness(room).observe(lambda topic, changes: self._on_room_awareness(topic))
        return seen

    def _on_room_awareness(self, topic: str) -> None:
        if topic == "change" and self._slots:
            self._wake.set()

    def _people_vote_autosave(self, room: Any) -> bool:
        """The people's autosave vote (any of them, a missing vote counting as yes), as the server
        decides it: an agent never turns autosave on for a person who turned it off."""
        return collaboration.autosave_on(room, skip=in_room.is_agent)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        for slot in self._slots.values():
            self._leave(slot)
        self._slots.clear()

    # -- the people's side -------------------------------------------------------------------

    def people(self, api: str, doc: YNotebook, *, room_id: str | None = None) -> list[dict[str, Any]]:
        """Who else is in the notebook ``doc`` (its room's awareness, agents left out) and the cell
        each one's caret is in; empty when nobody has it open. ``room_id``: the room the call opened
        ``doc`` in, when it has it (else looked up: a query of the file-id database)."""
        room_id = room_id or self._room_id(api)
        room = self._room(room_id) if room_id is not None else None
        if room is None or not collaboration.anyone_in(room):
            self._last_cells.pop(room_id or "", None)
            return []
        assert room_id is not None  # a room was found by it
        found: dict[str, dict[str, Any]] = {}
        last_cells = self._last_cells.setdefault(room_id, {})
        states = in_room.people(collaboration.awareness(room))
        for client_id in set(last_cells) - set(states):
            del last_cells[client_id]
        for client_id, state in states.items():
            user = state["user"]
            name = in_room.name(state) or "someone"
            person = {"name": name}
            cursors = state.get("cursors")
            if isinstance(cursors, list) and cursors and isinstance(cursors[0], dict):
                last = last_cells.get(client_id)
                hint = (last, source) if last and (source := _source_of(doc, last)) is not None else None
                cell = cell_of(cursors[0].get("head"), doc.ydoc, hint)
                if cell is not None:
                    person["cell_id"] = last_cells[client_id] = cell
            key = str(user.get("username") or name)  # one person with two tabs is one person
            if key not in found or "cell_id" in person:
                found[key] = person
        return list(found.values())

    # -- rooms -------------------------------------------------------------------------------

    def _room(self, room_id: str) -> Any:
        return collaboration.room(self._settings, room_id)

    def _room_id(self, api: str) -> str | None:
        """The room of a file (its id is looked up, never made: a file nobody opened has no room)."""
        file_id = self._settings["file_id_manager"].get_id(api)
        if not file_id:
            return None
        if api.endswith(".ipynb"):
            return collaboration.room_id_of("json", "notebook", file_id)
        return collaboration.room_id_of("text", "file", file_id)

    async def _notebook(self, room_id: str) -> YNotebook | None:
        doc = await collaboration.document(self._settings, room_id)
        return doc if isinstance(doc, YNotebook) else None

    async def _api(self, path: str) -> str | None:
        try:
            return await api_path(path, self._contents)
        except ToolError:
            return None


_pending: set[asyncio.Task[None]] = set()


async def _send_quietly(channel: Any, message: bytes) -> None:
    """A client that just left cannot be sent to; that is no error."""
    try:
        await channel.send(message)
    except Exception as err:
        log.debug("awareness not sent to %s: %r", getattr(channel, "path", "?"), err)


def _source_of(doc: YNotebook | None, cell_id: str) -> Text | None:
    """A cell's shared source, found through the notebook's cached cell ids (the id exactly: a cell
    gone, the one an agent just deleted, is no reason to try every id as a prefix)."""
    if doc is None:
        return None
    i = nb.index_of(doc, cell_id)
    if i is None:
        return None
    try:
        ycell = nb.cell_at(doc, i)
        if nb.id_of(ycell) != cell_id:  # renamed in place (a deduplication on save): not found
            return None
        source = ycell["source"]
    except (KeyError, IndexError):
        return None
    return source if isinstance(source, Text) else None


def _user(agent: Agent) -> dict[str, Any]:
    return {
        "username": agent.username,
        "name": agent.display_name,
        "display_name": agent.display_name,
        "initials": agent.initials,
        "color": agent.color,
        "bot": True,
    }
