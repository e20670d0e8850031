"""Calls waiting for a person's approval (policy ``ask``), and what each would do.

A waiting call shows the person the code it would run or the change it would make, reports
progress to its agent while it waits, and gives up after a set time with an error that says so.
A person may approve the rest of an agent's turn: its later calls of the same kind go through
until it pauses for longer than ``TURN_GAP`` seconds.
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
from .journal import iso, shown

TURN_GAP = 60.0  # seconds without a call that end an agent's turn
PROGRESS_EVERY = 5.0  # seconds between progress reports to a waiting agent
SHOWN_CHARS = 20_000  # of the code or change a person is shown

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
    id: str = field(default_factory=lambda: f"ap-{next(_ids)}")
    since: float = field(default_factory=time.time)
    decision: asyncio.Future[bool] = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agent": self.agent,
            "client": self.client,
            "tool": self.tool,
            "path": self.path,
            "kind": self.kind,
            "code": shown(self.code, SHOWN_CHARS),
            "change": shown(self.change, SHOWN_CHARS),
            "since": iso(self.since),
        }


class Approvals:
    def __init__(self, timeout: float, on_change: Callable[[str], None]):
        self.timeout = timeout
        self._on_change = on_change
        self._pending: dict[str, Approval] = {}
        self._turns: dict[tuple[str, str], float] = {}  # (agent, kind) -> last call approved for the turn

    def pending(self) -> list[Approval]:
        return list(self._pending.values())

    def allowed_for_turn(self, agent: str, kind: str) -> bool:
        last = self._turns.get((agent, kind))
        now = time.monotonic()
        if last is None or now - last > TURN_GAP:
            self._turns.pop((agent, kind), None)
            return False
        self._turns[(agent, kind)] = now
        return True

    async def wait(self, approval: Approval, report: Callable[[float, str], Awaitable[None]]) -> None:
        """Return once a person approves; raise a ToolError when denied or not answered in time."""
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
        if approve and rest_of_turn:
            self._turns[(approval.agent, approval.kind)] = time.monotonic()
        approval.decision.set_result(approve)
        return True

    def forget_turns(self) -> None:
        self._turns.clear()
