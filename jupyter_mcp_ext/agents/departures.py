"""What happens when agents leave: the notebook rooms they opened close as a closed tab's, and what
was kept for their sessions goes.

An agent leaves when its MCP session ends (or after ``agent_idle_timeout`` without a call). The
rooms only it used then close after collaboration's ``document_cleanup_delay``
(``DocumentService.left``), not after the idle time kept for agents still connected. When its
session ended, the reads kept for that session go (``Revisions.forget_session``; its user's stay,
for a client that reconnects).
"""

from __future__ import annotations

from ..documents.revisions import Revisions
from ..documents.rooms import DocumentService
from .directory import Agent, AgentDirectory, Change


class Departures:
    """Listens to the agent directory."""

    def __init__(self, agents: AgentDirectory, documents: DocumentService, revisions: Revisions):
        self.agents = agents
        self.documents = documents
        agents.on_change(self._on_agent)
        agents.on_session_ended(revisions.forget_session)

    def _on_agent(self, agent: Agent, what: Change) -> None:
        if what == "left":
            self.documents.left(agent.id)
