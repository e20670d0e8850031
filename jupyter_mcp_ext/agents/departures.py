"""What happens when agents leave: their rooms close as a closed tab's, what was kept for their
sessions goes, and once nobody is left the memory their visits used goes back to the system.

An agent leaves when its MCP session ends (or after ``agent_idle_timeout`` without a call). The
rooms only it used then close after collaboration's ``document_cleanup_delay``
(``DocumentService.left``). When its session ended, the reads kept for that session go
(``Revisions.forget_session``; its user's stay, for a client that reconnects). Once no agent is
connected and no room kept for agents is open, the C heap's free pages are returned
(``loop/heap_trim.py``: about 7 MB after a first visit), outside any call, from the loop's next
iteration.
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
    """Listens to the agent directory; ``trim`` is what returns the free heap (tests count its calls)."""

    def __init__(
        self,
        agents: AgentDirectory,
        documents: DocumentService,
        revisions: Revisions,
        trim: Callable[[], bool] = heap_trim.trim,
    ):
        self.agents = agents
        self.documents = documents
        self._trim = trim
        self.trims = 0  # how often the heap was trimmed (or would have been): once each time all left
        agents.on_change(self._on_agent)
        agents.on_session_ended(revisions.forget_session)
        documents.on_all_closed = self._when_nobody_is_left

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
        if self._trim():
            log.debug("Agents gone: free heap returned to the system")
