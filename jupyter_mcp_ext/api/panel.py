"""What the panel's routes act on, wired once by the app: journal, policy, approvals, stop, events."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir

from ..documents.paths import without_root
from ..people.approvals import Approvals
from ..people.guard import Guard
from ..people.journal import Journal
from ..people.journal_store import MEMORY_ONLY, JournalStore, Loaded, StoreError
from ..people.policy import Policy
from ..people.revert import Reverter
from ..people.review import Review
from ..protocol.transport import MCPTransport
from .events import ActivityEvents

log = logging.getLogger(__name__)


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
    path: str = "mcp"  # where the endpoint is under the base URL (MCPExtensionApp.path)
    conflicts: Callable[[], list[Any]] = field(default=list)  # other extensions routing that path
    notices: Callable[[], list[str]] = field(default=list)  # what a person should know, e.g. no panel
    review: Review | None = None
    store: JournalStore | None = None  # the journal's file, when it has one that works

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
        journal_file: Path | None = None,
        journal_max_age: float | None = None,
    ) -> Panel:
        """Everything the people layer needs, its events on the bus, and the guard in the call pipeline."""
        events = ActivityEvents(event_logger)
        journal = Journal(
            journal_size,
            journal_bytes,
            clean=lambda text: without_root(text, services.contents),
            max_age=journal_max_age,
        )
        store, loaded = _open_store(journal_file, journal_max_age)
        if store is not None:
            journal.restore(loaded.entries, loaded.next_id)
            for entry_id in {e.id for e in loaded.entries} - {e.id for e in journal.entries()}:
                store.drop(entry_id)  # over today's bounds
            journal.on_change(store.put)
            journal.on_drop(store.drop)
        journal.on_change(lambda entry: events.emit("journal", entry.id, entry.summary()))
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
        reverter = Reverter(journal, services)
        review = Review(journal, reverter, store, on_checkpoint=lambda name: events.emit("checkpoint", name))
        review.restore(loaded.checkpoints)
        return cls(
            journal,
            policy,
            approvals,
            guard,
            reverter,
            transport,
            events,
            services,
            review=review,
            store=store,
        )

    def close(self) -> None:
        """Write what the journal has not written yet (the server is stopping)."""
        if self.store is not None:
            self.store.close()

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


def _open_store(path: Path | None, max_age: float | None) -> tuple[JournalStore | None, Loaded]:
    """The journal's file and what it keeps; (None, nothing) when there is none or it is unusable,
    said once in the log: the server runs on with the journal in memory."""
    if path is None:
        return None, Loaded()
    store = JournalStore(path, max_age)
    try:
        loaded = store.open()
    except StoreError as err:
        log.error("The MCP journal file %s %s; %s.", path, err, MEMORY_ONLY)
        return None, Loaded()
    if loaded.unreadable:
        log.warning(
            "%d records of the MCP journal file %s could not be read and were skipped",
            loaded.unreadable,
            path,
        )
    return store, loaded
