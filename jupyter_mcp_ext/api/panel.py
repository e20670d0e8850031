"""What the panel's routes act on: the person's oversight, the transport, events and the endpoint."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..people.approvals import Approvals
from ..people.guard import Guard
from ..people.journal import Journal
from ..people.journal_store import JournalStore
from ..people.oversight import Oversight
from ..people.policy import Policy
from ..people.revert import Reverter
from ..people.review import Review
from ..protocol.transport import MCPTransport
from ..services import Services
from .events import ActivityEvents


@dataclass(frozen=True)
class Panel:
    oversight: Oversight
    transport: MCPTransport
    events: ActivityEvents
    services: Services
    path: str = "mcp"  # where the endpoint is under the base URL (MCPExtensionApp.path)
    conflicts: Callable[[], list[Any]] = field(default=list)  # other extensions routing that path
    notices: Callable[[], list[str]] = field(default=list)  # what a person should know, e.g. no panel

    @property
    def journal(self) -> Journal:
        return self.oversight.journal

    @property
    def policy(self) -> Policy:
        return self.oversight.policy

    @property
    def approvals(self) -> Approvals:
        return self.oversight.approvals

    @property
    def guard(self) -> Guard:
        return self.oversight.guard

    @property
    def reverter(self) -> Reverter:
        return self.oversight.reverter

    @property
    def review(self) -> Review:
        return self.oversight.review

    @property
    def store(self) -> JournalStore | None:
        return self.oversight.store

    def close(self) -> None:
        """Write what the journal has not written yet (the server is stopping)."""
        self.oversight.close()

    def agents(self) -> list[dict[str, Any]]:
        return [a.to_json() for a in self.services.agents.all()]

    async def end_agent(self, credential_id: str) -> int:
        """A revoked agent: its calls still going and its live sessions end now (its token is refused
        from the next request on)."""
        await self.guard.end_credential(credential_id)
        ended = await self.transport.end_sessions_of("agent:" + credential_id)
        for agent in self.services.agents.all():
            if agent.credential.get("id") == credential_id:
                self.services.agents.forget(agent.id)
        self.events.emit("session", credential_id)
        return ended

    async def stop(self) -> dict[str, int]:
        """A person's stop: every pending call cancelled, agent code interrupted, every session ended."""
        counts = await self.guard.stop()
        counts["sessions_ended"] = await self.transport.end_sessions()
        self.events.emit("stop", counts["sessions_ended"])
        return counts
