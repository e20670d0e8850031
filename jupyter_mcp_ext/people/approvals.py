"""Calls waiting for a person's approval (policy ``ask``), and what each would do.

A waiting call shows the person the code it would run or the change it would make, reports
progress to its agent while it waits, and gives up after a set time with an error that says so.
What waits is bounded: a few calls per agent, each showing at most so many characters (a call over
either is refused at once: a person is never shown part of what would run). A person may approve
the rest of an agent's turn: the next few calls of the same tool on the same path go through, for a
fixed time from the approval (it does not slide with each call).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ToolError
from .hidden_chars import has_hidden
from .journal import iso

PROGRESS_EVERY = 5.0  # seconds between progress reports to a waiting agent
PER_PRINCIPAL = 4  # all agents of one credential may have this many times an agent's waiting calls

_ids = itertools.count(1)


@dataclass
class Approval:
    agent: str
    client: str
    tool: str
    path: str | None
    kind: str  # run, delete, write
    code: str | None
    change: str | None
    principal: str = ""  # whose credential the call came with (a token, a user)
    id: str = field(default_factory=lambda: f"ap-{next(_ids)}")
    since: float = field(default_factory=time.time)
    decision: asyncio.Future[bool] = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    @property
    def size(self) -> int:
        """Characters a person is shown (and the server holds) for this call."""
        return len(self.code or "") + len(self.change or "")

    @property
    def hidden_controls(self) -> bool:
        """Whether what the card shows holds characters a person would not see as they are."""
        return (
            has_hidden(self.code)
            or has_hidden(self.change)
            or has_hidden(self.path, line_breaks=True)
            or has_hidden(self.client, line_breaks=True)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agent": self.agent,
            "client": self.client,
            "tool": self.tool,
            "path": self.path,
            "kind": self.kind,
            "code": self.code,  # whole: a call over the bound is refused, never shown cut
            "change": self.change,
            "hidden_controls": self.hidden_controls,
            "since": iso(self.since),
        }


@dataclass
class Turn:
    """What "approve the rest of this turn" lets through: calls left, until when (monotonic)."""

    left: int
    until: float


class Approvals:
    def __init__(
        self,
        timeout: float,
        on_change: Callable[[str], None],
        *,
        per_agent: int = 8,
        max_chars: int = 100_000,
        turn_calls: int = 10,
        turn_seconds: float = 120.0,
    ):
        self.timeout = timeout
        self.per_agent = per_agent
        self.max_chars = max_chars
        self.turn_calls = turn_calls
        self.turn_seconds = turn_seconds
        self._on_change = on_change
        self._pending: dict[str, Approval] = {}
        self._turns: dict[tuple[str, str, str | None], Turn] = {}  # (agent, tool, path) -> its allowance

    def pending(self) -> list[Approval]:
        return list(self._pending.values())

    def to_json(self, approval: Approval) -> dict[str, Any]:
        """An approval as the panel shows it, with what "the rest of this turn" would allow."""
        turn = {"calls": self.turn_calls, "seconds": self.turn_seconds}
        return {**approval.to_json(), "rest_of_turn": turn}

    def allowed_for_turn(self, agent: str, tool: str, path: str | None) -> bool:
        """Whether a person approved the rest of this agent's turn for this tool and path; uses one call."""
        key = (agent, tool, path)
        turn = self._turns.get(key)
        if turn is None:
            return False
        if turn.left <= 0 or time.monotonic() > turn.until:
            del self._turns[key]
            return False
        turn.left -= 1
        return True

    def admit(self, approval: Approval) -> None:
        """Refuse (a ToolError) a call a person cannot be shown whole, or one too many from its agent."""
        if approval.size > self.max_chars:
            raise ToolError(
                f"{approval.tool} was refused: under the policy 'ask' a person must see what it would do, "
                f"and it is {approval.size:,} characters (at most {self.max_chars:,} are shown). Nothing "
                "was done. Split it into smaller calls, or ask the person to change the policy."
            )
        # Per agent, and per credential: a new session (or, stateless, a new client name) is a new agent.
        mine = sum(1 for a in self._pending.values() if a.agent == approval.agent)
        theirs = sum(1 for a in self._pending.values() if a.principal == approval.principal)
        for count, limit, whose in (
            (mine, self.per_agent, "your calls"),
            (theirs, self.per_agent * PER_PRINCIPAL, "the calls made with your credential"),
        ):
            if count >= limit:
                raise ToolError(
                    f"{approval.tool} was refused: {count} of {whose} already wait for a person's "
                    f"approval (at most {limit}). Nothing was done; wait for those to be answered."
                )

    async def wait(self, approval: Approval, report: Callable[[float, str], Awaitable[None]]) -> None:
        """Return once a person approves; raise a ToolError when refused, denied or not answered in time."""
        self.admit(approval)
        self._pending[approval.id] = approval
        self._on_change(approval.id)
        what = f"{approval.tool} ({approval.kind}{' in ' + approval.path if approval.path else ''})"
        deadline = time.monotonic() + self.timeout
        every = min(PROGRESS_EVERY, max(0.5, self.timeout / 4))  # a short wait still reports progress
        try:
            waited = 0
            while (left := deadline - time.monotonic()) > 0:
                with contextlib.suppress(TimeoutError):
                    approved = await asyncio.wait_for(asyncio.shield(approval.decision), min(left, every))
                    if not approved:
                        raise ToolError(
                            f"A person denied {what}; nothing was done. Ask them what they would "
                            "rather have, or do something else."
                        )
                    return
                waited += 1
                await report(waited, f"waiting for a person to approve {what} ({approval.id})")
            raise ToolError(
                f"No one approved {what} within {self.timeout:g} s (the server asks a person first); "
                "nothing was done. Ask the person to approve it in JupyterLab's MCP panel, then call again."
            )
        finally:
            self._pending.pop(approval.id, None)
            if not approval.decision.done():
                approval.decision.cancel()
            self._on_change(approval.id)

    def decide(self, approval_id: str, approve: bool, *, rest_of_turn: bool = False) -> bool:
        """A person's answer; False when no call waits under that id (answered, gone or timed out)."""
        approval = self._pending.get(approval_id)
        if approval is None or approval.decision.done():
            return False
        if approve and rest_of_turn and self.turn_calls > 0:
            now = time.monotonic()
            self._turns = {k: t for k, t in self._turns.items() if t.left > 0 and t.until >= now}
            key = (approval.agent, approval.tool, approval.path)
            self._turns[key] = Turn(self.turn_calls, now + self.turn_seconds)
        approval.decision.set_result(approve)
        return True

    def forget_turns(self) -> None:
        self._turns.clear()
