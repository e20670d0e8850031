"""The agents connected right now: one per MCP session, each with an identity of its own.

A person sees agents as collaborators (presence), reviews what each did (journal) and lists them in
a panel (API). All of those need the same record: which client it is (``clientInfo``), whose Jupyter
identity it acts for, where it works and what it is doing. An agent is one MCP session; a stateless
2026 client has no session, so there it is one principal (token or user) plus client name.

Agents are forgotten when their MCP session ends, or after ``idle_timeout`` without a call; a
stateless one also when the session ledger drops it (``protocol/sessionless.py``: it counts there as a
session, toward the same caps).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from mcp_types import CLIENT_INFO_META_KEY
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from ..documents.paths import MAX_PATH_CHARS


def iso(at: float) -> str:
    """Wall-clock seconds as ISO 8601 UTC with milliseconds, as the API shows every time."""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


log = logging.getLogger(__name__)

State = Literal["idle", "editing", "running", "waiting"]
BUSY: dict[str, State] = {"write": "editing", "execute": "running"}  # a call's action -> its state
Change = Literal["joined", "changed", "left"]
Callback = Callable[["Agent", Change], None]

#: Matplotlib's tab10: distinct on light and dark themes, and readable under white text.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
SESSION_HEADER = "mcp-session-id"
MAX_CELL_ID = 64  # characters of a cell id (nbformat 4.5): a longer one names no cell


@dataclass
class Agent:
    id: str
    key: str  # what identifies it: the MCP session id, or principal + client name
    client: dict[str, str]  # clientInfo: name, version, title (what the client said)
    user: str  # the Jupyter user it acts for
    name: str  # what people know it by (``agent_name``; "" if nothing): the journal, feed, approvals, marks
    display_name: str  # ``name`` marked as an agent's: presence, the collaborators list
    username: str
    initials: str
    color: str
    session_id: str | None = None
    since: float = field(default_factory=time.time)
    last_call: float = field(default_factory=time.time)
    path: str | None = None
    cell_id: str | None = None
    state: State = "idle"
    credential: dict[str, str] = field(
        default_factory=dict
    )  # what it authenticated with (see ``credential_of``)
    _busy: list[State] = field(default_factory=list, repr=False)  # states of calls in flight

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "client": dict(self.client),
            "user": self.user,
            "name": self.name,
            "since": iso(self.since),
            "last_call": iso(self.last_call),
            "path": self.path,
            "cell_id": self.cell_id,
            "state": self.state,
            "display_name": self.display_name,
            "username": self.username,
            "initials": self.initials,
            "color": self.color,
            "credential": dict(self.credential),
        }


class AgentDirectory:
    """Who is calling: creates an agent on its first call, and forgets it when it is gone.

    ``suffix`` marks an agent's display name ("Claude Code (agent)"); ``{user}`` in it is replaced by
    the person's name. ``None`` means " (agent)", or " ({user}'s agent)" under JupyterHub, where
    several people's agents may share one server.
    """

    def __init__(self, *, suffix: str | None = None, idle_timeout: float | None = 600.0):
        self.suffix = suffix
        self.idle_timeout = idle_timeout
        self._agents: dict[str, Agent] = {}  # by id
        self._callbacks: list[Callback] = []
        self._ended: list[Callable[[str], None]] = []  # told each MCP session id that ended
        self._sweeper: asyncio.Task[None] | None = None

    # -- reading -------------------------------------------------------------------------

    def get(self, agent_id: str) -> Agent | None:
        return self._agents.get(agent_id)

    def all(self) -> list[Agent]:
        return sorted(self._agents.values(), key=lambda a: a.since)

    def on_change(self, callback: Callback) -> None:
        """Call ``callback(agent, what)`` when an agent joins, changes (state, place) or leaves."""
        self._callbacks.append(callback)

    def on_session_ended(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(session_id)`` when an agent's MCP session ends: unlike an agent that left
        for being idle (it comes back with its next call), nothing can name that session again."""
        self._ended.append(callback)

    # -- life ----------------------------------------------------------------------------

    def agent_for(self, ctx: Any, handler: Any) -> Agent:
        """The agent making this request (created on first sight); its last call is now."""
        session_id = _session_id(ctx)
        client = client_info(ctx)
        key = session_id or sessionless_key(ctx, handler)[1]
        agent_id = agent_id_of(key)
        agent = self._agents.get(agent_id)
        if agent is not None:
            agent.last_call = time.time()
            return agent
        agent = self._new_agent(agent_id, key, session_id, client, handler)
        self._agents[agent_id] = agent
        if session_id is not None:
            on_session_end(ctx, lambda: self._session_end(agent_id, session_id))
        self._ensure_sweeper()
        self._emit(agent, "joined")
        return agent

    def forget(self, agent_id: str) -> None:
        """The agent is gone (its session ended, or it was idle too long)."""
        agent = self._agents.pop(agent_id, None)
        if agent is not None:
            agent.state = "idle"
            self._emit(agent, "left")

    def _session_end(self, agent_id: str, session_id: str) -> None:
        self.forget(agent_id)
        for callback in list(self._ended):
            try:
                callback(session_id)
            except Exception:  # one broken listener must not break the session's teardown
                log.exception("session end callback failed")

    def set_state(
        self, agent: Agent, state: State, path: str | None = None, cell_id: str | None = None
    ) -> None:
        """Record what the agent does and where; ``None`` keeps the path or cell it had."""
        changed = (state, path or agent.path, cell_id or agent.cell_id) != (
            agent.state,
            agent.path,
            agent.cell_id,
        )
        if path is not None and path != agent.path:
            agent.cell_id = None  # a cell id means nothing in another file
        agent.state = state
        agent.path = path or agent.path
        agent.cell_id = cell_id or agent.cell_id
        if changed and agent.id in self._agents:
            self._emit(agent, "changed")

    @contextlib.asynccontextmanager
    async def at_work(
        self, agent: Agent | None, action: str, args: Any
    ) -> AsyncIterator[Callable[[Mapping[str, Any]], None]]:
        """Around one tool call: the agent is editing or running in the call's file and cell.

        Yields ``done(result_data)``, which moves the agent to the cell the call ended on (a new
        cell's id). Reads place the agent in the file without changing its state.
        """
        ended: list[Mapping[str, Any]] = []
        if agent is None:
            yield ended.append
            return
        path = args_path(args)
        busy = BUSY.get(action)
        if busy is not None:
            agent._busy.append(busy)
        self.set_state(agent, _combined(agent._busy), path, _cell_of(vars(args)) if path else None)
        try:
            yield ended.append
        finally:
            if busy is not None:
                agent._busy.remove(busy)
            agent.last_call = time.time()
            # A write or run ends on the cell it made or ran last; a read's result lists cells it only saw.
            cell = _cell_of(ended[-1], last=True) if ended and path and busy else None
            self.set_state(agent, _combined(agent._busy), path, cell)

    def _new_agent(
        self, agent_id: str, key: str, session_id: str | None, client: dict[str, str], handler: Any
    ) -> Agent:
        person = person_of(handler)
        suffix = self.suffix
        if suffix is None:
            suffix = " ({user}'s agent)" if person.get("hub") else " (agent)"
        credential = credential_of(handler)
        name = agent_name(credential, client)
        label = name or "MCP client"
        hue = int(hashlib.sha256(credential["id"].encode()).hexdigest(), 16) if "id" in credential else None
        display = label + suffix.replace("{user}", person["display_name"])
        names = {a.display_name for a in self._agents.values()}
        # A second session of the same client gets a number, so a person can tell the two apart.
        number = next(n for n in range(1, len(names) + 2) if _numbered(label, n, display) not in names)
        return Agent(
            id=agent_id,
            key=key,
            client=client,
            user=person["name"],
            name=name,
            display_name=_numbered(label, number, display),
            username=f"mcp-agent-{agent_id}",
            initials=initials(credential.get("name") or label),
            color=PALETTE[(hue if hue is not None else int(agent_id, 16)) % len(PALETTE)],
            session_id=session_id,
            credential=credential,
        )

    def _emit(self, agent: Agent, what: Change) -> None:
        for callback in list(self._callbacks):
            try:
                callback(agent, what)
            except Exception:  # one broken listener must not break a tool call
                log.exception("agent %s callback failed", what)

    # -- forgetting idle agents ------------------------------------------------------------

    def _ensure_sweeper(self) -> None:
        if self.idle_timeout is None:
            return
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.create_task(self._sweep(), name="jupyter-mcp-ext agent sweeper")

    async def _sweep(self) -> None:
        assert self.idle_timeout is not None
        while self._agents:
            await asyncio.sleep(max(0.1, min(self.idle_timeout / 4, 30.0)))
            now = time.time()
            for agent in list(self._agents.values()):
                if not agent._busy and now - agent.last_call >= self.idle_timeout:
                    self.forget(agent.id)

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        for agent_id in list(self._agents):
            self.forget(agent_id)


def agent_name(credential: Mapping[str, str], client: Mapping[str, str]) -> str:
    """The name everyone sees for an agent. With a credential of its own, the credential's name: what
    the person approved (a registered or fetched ``client_name``, or the name given at minting); what
    the MCP client calls itself (``clientInfo``, its to choose at any time) may follow in brackets,
    never replace it. On the person's own token or login, the client's name is all there is."""
    own = client.get("title") or client.get("name") or ""
    approved = credential.get("name") if credential.get("kind") == "agent" else None
    if not approved:
        return own
    if not own or own.casefold() == approved.casefold():
        return approved
    return f"{approved} ({own})"


def _numbered(label: str, number: int, display: str) -> str:
    """'Claude Code (agent)', then 'Claude Code 2 (agent)'."""
    return display if number == 1 else f"{label} {number}{display[len(label) :]}"


def _combined(busy: list[State]) -> State:
    """Running wins over editing: a long run stays visible while the agent edits elsewhere."""
    return "running" if "running" in busy else "editing" if "editing" in busy else "idle"


def args_path(args: Any) -> str | None:
    """The file a call names; one longer than any path is cut to one character over the limit, so
    that it still names no file (the agent leaves the collaborators panel) while the agent's record
    (the sessions list, events to every panel) never holds an agent's megabyte of text."""
    path = getattr(args, "path", None)
    return path[: MAX_PATH_CHARS + 1] if isinstance(path, str) and path else None


def _cell_of(data: Mapping[str, Any], *, last: bool = False) -> str | None:
    """The cell a call addresses (arguments) or ended on (result): a cell id, or one of a list."""
    for key in ("cell_id", "id"):
        if isinstance(data.get(key), str):
            return data[key] if len(data[key]) <= MAX_CELL_ID else None
    ids = data.get("cell_ids")
    if not isinstance(ids, list):  # a run's result: its cells, each with its id
        cells = data.get("cells")
        ids = [c.get("id") for c in cells if isinstance(c, Mapping)] if isinstance(cells, list) else []
    ids = [i for i in ids if isinstance(i, str)]
    found = (ids[-1] if last else ids[0]) if ids else None
    return found if found is None or len(found) <= MAX_CELL_ID else None


def initials(label: str) -> str:
    """'Claude Code' -> 'CC', 'codex' -> 'C'."""
    words = [w for w in re.split(r"[^0-9A-Za-z]+|(?<=[a-z])(?=[A-Z])", label) if w]
    return "".join(w[0] for w in words[:2]).upper() or "AI"


def client_info(ctx: Any) -> dict[str, str]:
    """``clientInfo`` from the handshake, or from a 2026 request's ``_meta``."""
    params = getattr(ctx.session, "client_params", None)
    info: Any = getattr(params, "client_info", None)
    if info is None and isinstance(ctx.meta, Mapping):
        info = ctx.meta.get(CLIENT_INFO_META_KEY)
    if info is None:
        return {}
    raw = info if isinstance(info, Mapping) else info.model_dump()
    return {k: str(raw[k])[:100] for k in ("name", "version", "title") if raw.get(k)}


def person_of(handler: Any) -> dict[str, Any]:
    """The person an agent acts for: user name and display name, from JupyterHub's model when present.

    Under JupyterHub ``current_user.hub_user`` is the Hub's user model; ``display_name`` and ``color``
    sit at its top level or in ``user_info``, depending on the Hub and its authenticator.
    """
    user = getattr(handler, "current_user", None)
    name = getattr(user, "username", None) or "anonymous"
    display = getattr(user, "display_name", None) or getattr(user, "name", None) or name
    hub = getattr(user, "hub_user", None)
    if not isinstance(hub, Mapping):
        return {"name": name, "display_name": display, "color": None, "hub": False}
    user_info = hub.get("user_info")
    info: Mapping[str, Any] = user_info if isinstance(user_info, Mapping) else {}
    name = hub.get("name") or name
    display = hub.get("display_name") or info.get("display_name") or display or name
    color = hub.get("color") or info.get("color") or getattr(user, "color", None)
    return {"name": name, "display_name": display, "color": color, "hub": True}


def agent_id_of(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:8]


def sessionless_key(ctx: Any, handler: Any) -> tuple[str, str]:
    """``(principal, key)`` of a request without an MCP session: its agent is principal + client name."""
    principal = principal_of(ctx, handler)
    return principal, f"{principal}|{client_info(ctx).get('name', '')}"


def is_stateless(headers: Mapping[str, str]) -> bool:
    """A 2026-07-28 request, served outside any MCP session whatever ``Mcp-Session-Id`` it sends: the
    SDK routes by ``MCP-Protocol-Version`` alone (a handshake-era request may omit it)."""
    version = headers.get("mcp-protocol-version")
    return version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS


def credential_of(handler: Any) -> dict[str, str]:
    """The credential an agent called with, as the panel shows it: its own (name, policy), or the person's."""
    user = getattr(handler, "current_user", None)
    own = getattr(user, "credential", None)
    if own is not None:
        return {"kind": "agent", "id": own.id, "name": own.name, "policy": own.policy}
    if getattr(handler, "token_authenticated", False):
        return {"kind": "jupyter", "label": "your Jupyter token: full access"}
    return {"kind": "jupyter", "label": "your Jupyter login: full access"}


def _session_id(ctx: Any) -> str | None:
    headers = getattr(ctx.request, "headers", None)
    if headers is None or is_stateless(headers):
        return None  # an id sent with it names no session: it must not make an agent of its own
    return headers.get(SESSION_HEADER)


def principal_of(ctx: Any, handler: Any) -> str:
    """Whose call this is, as the MCP handler named it (``MCPHandler._principal``): an agent credential
    by its id, the person's token by its hash, a login by its user name. Never a name a client picks:
    what a caller owns (runs, tasks) is keyed by it."""
    scope = getattr(ctx.request, "scope", None) or {}
    token = getattr(scope.get("user"), "access_token", None)
    client_id = getattr(token, "client_id", None)
    if client_id:
        return str(client_id)
    return person_of(handler)["name"]


def on_session_end(ctx: Any, callback: Callable[[], None]) -> bool:
    """Run ``callback`` when the MCP session of this request ends (DELETE, idle, crash, shutdown);
    False if that cannot be seen (a stateless request, or the SDK changed).

    The SDK's ``Connection.exit_stack`` is the documented place for per-connection teardown, but
    a request context reaches the connection only through the private ``ServerSession._connection``
    (mcp 2.3). If that moves, agents are still forgotten after the idle timeout, and subscriptions
    last until the client unsubscribes.
    """
    connection = getattr(ctx.session, "_connection", None)
    stack = getattr(connection, "exit_stack", None)
    if stack is None or getattr(connection, "session_id", None) is None:
        return False
    stack.callback(callback)
    return True
