"""What happens when agents leave: their rooms close as a closed tab's, what was kept for their
sessions goes, and once nobody is left the memory their visits used goes back to the system.

An agent leaves when its MCP session ends (or after ``agent_idle_timeout`` without a call). The
rooms only it used then close after collaboration's ``document_cleanup_delay``
(``DocumentService.left``). When its session ended, the reads kept for that session go
(``Revisions.forget_session``; its user's stay, for a client that reconnects). Once no agent is
connected and no room kept for agents is open, garbage is collected (the closed rooms' documents)
and the C heap's free pages are returned (``loop/heap_trim.py``: about 7 MB after a first visit),
outside any call, from the loop's next iteration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from ..documents.revisions import Revisions
from ..documents.rooms import DocumentService
from ..loop import heap_trim
from .directory import Agent, AgentDirectory, Change

log = logging.getLogger(__name__)


class Departures:
    """Listens to the agent directory; ``release`` collects garbage and returns the free heap."""

    def __init__(
        self,
        agents: AgentDirectory,
        documents: DocumentService,
        revisions: Revisions,
        release: Callable[[], heap_trim.Released] = heap_trim.release,
    ):
        self.agents = agents
        self.documents = documents
        self._release = release
        self.trims = 0  # how often the heap was released: once each time every agent has left
        agents.on_change(self._on_agent)
        agents.on_session_ended(revisions.forget_session)
        documents.on_all_closed(self._when_nobody_is_left)

    def _on_agent(self, agent: Agent, what: Change) -> None:
        if what != "left":
            return
        self.documents.left(agent.id)
        self._when_nobody_is_left()

    def _when_nobody_is_left(self) -> None:
        if self.agents.all() or self.documents.agent_rooms:
            return
        with contextlib.suppress(RuntimeError):  # no loop (a server stopping): nothing to give back
            asyncio.get_running_loop().call_soon(self._trim_if_still_alone)

    def _trim_if_still_alone(self) -> None:
        if self.agents.all() or self.documents.agent_rooms:
            return  # someone came meanwhile
        self.trims += 1
        released = self._release()
        log.info(
            "No agent left: %d objects collected, free heap %s (%.0f ms)",
            released.collected,
            "returned to the system" if released.trimmed else "kept (no malloc_trim here)",
            released.seconds * 1000,
        )
