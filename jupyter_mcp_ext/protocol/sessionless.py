"""Sessionless (2026-07-28) clients, held to the same session caps and the same Stop as session clients.

A 2026 client opens no MCP session: each request stands alone, so the SDK keeps nothing and the
session ledger (``sessions.py``) saw nothing; one token could act as any number of agents, and a
person's Stop, which ends sessions, left such a client's next call untouched.

What such a client holds on the server is its agent (``people/agents.py``): a row in the sessions
list, a collaborator in the notebooks it works in. So its *session* here is that agent: the principal
(token or user) plus the ``clientInfo`` name its requests carry. The first request of such a pair
(other than ``server/discover``) enters it in the ledger as one session of that principal, making
room or being refused exactly as an ``initialize`` is; each later request keeps it in use. It ends
when the ledger drops it: idle for ``session_idle_timeout``, closed to make room for a newer session
of the same principal (or, at the total cap, of anyone), or a person's Stop; its agent goes with it.

Stop ends a session client's session: its next request gets a 404 until it opens a new one with
``initialize``. A sessionless client has no session to end, so its pair is marked stopped instead:
every request of it is refused until it connects again with ``server/discover``, as a client that
starts afresh does. As with ``initialize``, nothing stops a client from doing so at once: Stop ends
what agents are doing; keeping them out is the policy's job (``off``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST

from ..agents.directory import AgentDirectory, agent_id_of, is_stateless, sessionless_key
from ..tools.authz import handler_of
from .sessions import Session, SessionLedger, SessionRefused

PREFIX = "sessionless:"
STOPPED = (
    "Stopped by the user: this client's calls were ended. Connect again (a new server/discover) to go on."
)
MAX_STOPPED = 10_000  # stop marks kept (oldest dropped first)


class SessionlessClients:
    """Server middleware (the SDK's ``Server.middleware``) that enters sessionless clients in the ledger."""

    def __init__(
        self,
        ledger: SessionLedger,
        close: Callable[[str, Session], Awaitable[None]],
        agents: AgentDirectory | None,
    ):
        self.ledger = ledger
        self.close = close
        self.agents = agents
        self.stopped: OrderedDict[str, None] = OrderedDict()

    async def __call__(self, ctx: Any, call_next: CallNext) -> HandlerResult:
        headers = getattr(ctx.request, "headers", None)
        if ctx.request_id is None or headers is None or not is_stateless(headers):
            return await call_next(ctx)  # a session's request (or one the SDK refuses)
        handler = handler_of(ctx)
        if handler is None:
            return await call_next(ctx)  # no Jupyter identity: the tools refuse it
        principal, key = sessionless_key(ctx, handler)
        agent_id = agent_id_of(key)
        sid = PREFIX + agent_id
        if ctx.method == "server/discover":
            self.stopped.pop(sid, None)  # connecting again, as after a session's end
            return await call_next(ctx)
        if sid in self.stopped:
            raise MCPError(code=INVALID_REQUEST, message=STOPPED)
        session = self.ledger.begin(sid, sessionless=True)
        if session is None:
            session = await self._open(principal, sid, agent_id)
        try:
            return await call_next(ctx)
        finally:
            self.ledger.end(sid, session, gone=False)

    async def _open(self, principal: str, sid: str, agent_id: str) -> Session:
        try:
            victims = self.ledger.reserve(principal)
        except SessionRefused as refused:
            raise MCPError(
                code=INVALID_REQUEST,
                message=f"{refused} (A sessionless client counts as one session per client name.)",
            ) from None
        session = self.ledger.settle(principal, sid, None, object())
        assert session is not None
        agents = self.agents
        session.on_end = (lambda: agents.forget(agent_id)) if agents is not None else (lambda: None)
        session.in_flight += 1
        for victim_id, victim in victims:
            await self.close(victim_id, victim)
        return session

    def stop(self, sessions: list[str]) -> None:
        """A person's Stop: these sessionless clients are refused until they connect again."""
        for sid in sessions:
            self.stopped[sid] = None
            self.stopped.move_to_end(sid)
        while len(self.stopped) > MAX_STOPPED:
            self.stopped.popitem(last=False)
