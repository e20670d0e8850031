"""What the panel's routes act on, wired once by the app: journal, policy, approvals, stop, events."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir

from ..documents.paths import without_root
from ..people.approvals import Approvals
from ..people.guard import Guard
from ..people.journal import Journal
from ..people.policy import Policy
from ..people.revert import Reverter
from ..protocol.transport import MCPTransport
from .events import ActivityEvents


@dataclass
class Panel:
    journal: Journal
    policy: Policy
    approvals: Approvals
    guard: Guard
    reverter: Reverter
    transport: MCPTransport
    events: ActivityEvents
    services: Any

    @classmethod
    def build(
        cls,
        services: Any,
        transport: MCPTransport,
        event_logger: Any,
        *,
        journal_size: int,
        journal_bytes: int = 64_000_000,
        approval_timeout: float,
        policy_file: str,
        approval_limits: dict[str, Any] | None = None,
    ) -> Panel:
        """Everything the people layer needs, its events on the bus, and the guard in the call pipeline."""
        events = ActivityEvents(event_logger)
        journal = Journal(
            journal_size, journal_bytes, clean=lambda text: without_root(text, services.contents)
        )
        journal.on_change(lambda entry: events.emit("journal", entry.id))
        path = (
            Path(policy_file) if policy_file else Path(jupyter_data_dir()) / "jupyter_mcp_ext" / "policy.json"
        )
        policy = Policy(path, on_change=lambda mode: events.emit("policy", mode))
        approvals = Approvals(
            approval_timeout,
            on_change=lambda approval_id: events.emit("approval", approval_id),
            **(approval_limits or {}),
        )
        guard = Guard(services, journal, policy, approvals)
        services.guard = guard
        services.agents.on_change(lambda agent, what: events.emit("session", agent.id))
        return cls(
            journal, policy, approvals, guard, Reverter(journal, services), transport, events, services
        )

    def agents(self) -> list[dict[str, Any]]:
        return [a.to_json() for a in self.services.agents.all()]

    async def stop(self) -> dict[str, int]:
        """A person's stop: every pending call cancelled, agent code interrupted, every session ended."""
        counts = await self.guard.stop()
        counts["sessions_ended"] = await self.transport.end_sessions()
        self.events.emit("stop", counts["sessions_ended"])
        return counts
