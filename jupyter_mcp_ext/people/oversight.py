"""The person's oversight of agents, built in one piece: journal, policy, approvals, guard, review.

Built once at start-up, before the MCP server, which takes the guard as a required argument: no tool
call can run outside the guard's policy, approvals and journal, and nothing is wired in later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir

from ..documents.paths import without_root
from ..services import Services
from .approvals import Approvals
from .guard import Guard
from .journal import Journal
from .journal_store import MEMORY_ONLY, JournalStore, Loaded, StoreError
from .policy import Policy
from .revert import Reverter
from .review import Review

log = logging.getLogger(__name__)

Emit = Callable[..., None]
"""``emit(kind, item, entry=None)``: tells the panel that something changed (the activity events)."""


@dataclass(frozen=True)
class Oversight:
    journal: Journal
    policy: Policy
    approvals: Approvals
    guard: Guard
    reverter: Reverter
    review: Review
    store: JournalStore | None  # the journal's file, when it has one that works

    def close(self) -> None:
        """Write what the journal has not written yet (the server is stopping)."""
        if self.store is not None:
            self.store.close()


def build_oversight(
    services: Services,
    emit: Emit,
    *,
    journal_size: int,
    journal_bytes: int = 64_000_000,
    approval_timeout: float,
    policy_file: str,
    approval_limits: dict[str, Any] | None = None,
    journal_file: Path | None = None,
    journal_max_age: float | None = None,
) -> Oversight:
    """Everything the people layer needs, each change told through ``emit``."""
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
    journal.on_change(lambda entry: emit("journal", entry.id, entry.summary()))
    path = Path(policy_file) if policy_file else Path(jupyter_data_dir()) / "jupyter_mcp_ext" / "policy.json"
    policy = Policy(path, on_change=lambda mode: emit("policy", mode))
    approvals = Approvals(
        approval_timeout,
        on_change=lambda approval_id: emit("approval", approval_id),
        **(approval_limits or {}),
    )
    guard = Guard(services, journal, policy, approvals)
    services.agents.on_change(lambda agent, what: emit("session", agent.id))
    reverter = Reverter(journal, services)
    review = Review(journal, reverter, store, on_checkpoint=lambda name: emit("checkpoint", name))
    review.restore(loaded.checkpoints)
    return Oversight(journal, policy, approvals, guard, reverter, review, store)


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
