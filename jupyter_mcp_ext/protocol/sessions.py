"""Who holds which MCP session, so that one client cannot fill the server with them.

The SDK caps sessions in all (then refuses everyone with 503); a client that sends 10,000
``initialize`` requests would lock every other user out. Here each principal (a token, a user) may
hold ``per_principal`` sessions and the server ``total``; a new session makes room by closing the
oldest idle session of the same principal first, then (at the total cap) the oldest idle one of
anyone. A session busy with a request (an open stream, a running call) is never closed to make room.

The ledger mirrors the SDK's own idle timeout: a session with no request in flight for
``idle_timeout`` seconds is gone there, and is forgotten here. ``on_gone`` hears of each session
that ended (its client's DELETE, a 404, the idle timeout), so what was kept for it can go too.

Sessionless (2026-07-28) clients are entered here too, as one session per agent (``sessionless.py``),
so that they count toward the same caps and age out the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Session:
    principal: str
    owner: Any  # the scope "user" that opened it: closing it must present the same one
    scope: object  # the event store's scope of this session
    version: str | None = None  # the protocol version negotiated at initialize
    in_flight: int = 0
    last_used: float = field(default_factory=time.monotonic)
    # A sessionless client's entry (no SDK session to close); called when the entry is dropped.
    on_end: Callable[[], None] | None = None

    @property
    def sessionless(self) -> bool:
        return self.on_end is not None


class SessionRefused(Exception):
    """No room for a new session; the message says why and what to do."""


class SessionLedger:
    def __init__(
        self,
        *,
        per_principal: int | None,
        total: int | None,
        idle_timeout: float | None,
        on_gone: Callable[[Session], None] = lambda session: None,
    ):
        self.on_gone = on_gone
        self.per_principal = per_principal
        self.total = total
        self.idle_timeout = idle_timeout
        self.sessions: dict[str, Session] = {}
        self._opening: dict[str, int] = {}  # principal -> opening requests not answered yet

    def _prune(self) -> None:
        if self.idle_timeout is None:
            return
        expired = time.monotonic() - self.idle_timeout
        for sid in [s for s, x in self.sessions.items() if not x.in_flight and x.last_used < expired]:
            self.on_gone(self.sessions.pop(sid))

    def reserve(self, principal: str) -> list[tuple[str, Session]]:
        """Hold a place for one new session of ``principal``; returns the sessions to close for it.

        Raises ``SessionRefused`` if every session that would have to go is busy.
        """
        self._prune()
        idle = sorted(
            ((sid, s) for sid, s in self.sessions.items() if not s.in_flight),
            key=lambda item: item[1].last_used,
        )
        mine_idle = [item for item in idle if item[1].principal == principal]
        victims: list[tuple[str, Session]] = []
        if self.per_principal is not None:
            held = sum(s.principal == principal for s in self.sessions.values()) + self._opening.get(
                principal, 0
            )
            need = held - self.per_principal + 1
            if need > len(mine_idle):
                raise SessionRefused(
                    f"This client already has {held} MCP sessions open and busy (at most {self.per_principal} "
                    "per user: MCPExtensionApp.max_sessions_per_user). End unused sessions (HTTP DELETE) first."
                )
            victims += mine_idle[: max(need, 0)]
        if self.total is not None:
            held = len(self.sessions) + sum(self._opening.values()) - len(victims)
            need = held - self.total + 1
            if need > 0:
                taken = {sid for sid, _ in victims}
                others = [item for item in mine_idle + idle if item[0] not in taken]
                candidates = list(dict.fromkeys(sid for sid, _ in others))
                if need > len(candidates):
                    raise SessionRefused(
                        f"The server has {held} MCP sessions open, all busy (at most {self.total}: "
                        "MCPExtensionApp.max_sessions). Try again when one ends."
                    )
                victims += [(sid, self.sessions[sid]) for sid in candidates[:need]]
        for sid, _ in victims:
            del self.sessions[sid]  # closed by the caller (``MCPTransport._close``)
        self._opening[principal] = self._opening.get(principal, 0) + 1
        return victims

    def settle(self, principal: str, session_id: str | None, owner: Any, scope: object) -> Session | None:
        """The opening request of a reservation was answered, with a new session or without one."""
        left = self._opening.get(principal, 1) - 1
        if left:
            self._opening[principal] = left
        else:
            self._opening.pop(principal, None)
        if session_id is None:
            return None
        session = self.sessions[session_id] = Session(principal, owner, scope)
        return session

    def begin(self, session_id: str, *, sessionless: bool = False) -> Session | None:
        """A request of this session starts. An id a client sends finds only a session it could have
        opened: never a sessionless client's entry, which it could otherwise end (``end``)."""
        session = self.sessions.get(session_id)
        if session is None or session.sessionless != sessionless:
            return None
        session.in_flight += 1
        return session

    def end(self, session_id: str, session: Session, *, gone: bool) -> None:
        session.in_flight -= 1
        session.last_used = time.monotonic()
        if gone and self.sessions.pop(session_id, None) is not None:
            self.on_gone(session)
