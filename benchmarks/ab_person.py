"""The person's side of ``benchmarks.ab`` (issue 36, item 4: nothing else slower): the keystroke with
and without agents, and the server's memory while a cell prints 100 MB, on the baseline's server and
today's, in blocks that ``ab.py`` takes in one shuffled order with its calls each round.

Keystroke: a person is two Yjs clients in a notebook, as two JupyterLab tabs (a keystroke in one
timed until the other sees it, ``echo.keystrokes``). Two pairs of servers. On the quiet pair no agent
ever connects: a block is twenty keystrokes. On the busy pair a process of agents calls flat out
(``benchmarks.agents``, as ``agent_turns.py`` starts it) on notebooks of their own, paused
(``SIGSTOP``) but in their server's turns, so one server's agents never slow the other's person: a
turn resumes them and has the person type and browse (``typist.sample``) for ``turn`` seconds.

Print: a cell printing 100 MB (``execution.FLOOD_CODE``) on a server of its own that has printed
nothing before, its kernel started and linked beforehand: the server's peak RSS over the call less its
RSS before it. A fresh server per sample, since a server that printed once keeps what its allocator
got back (a second print reuses it and grows nothing); the servers start with the others, so their
start-up window of the gate is over with theirs.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import statistics
import time
from dataclasses import dataclass

import httpx
import psutil

from tests.support.server import JupyterServer

from .agent_turns import agents_process
from .client import write_notebook
from .echo import keystrokes, mcp_status
from .execution import FLOOD_CODE, PeakRSS
from .report import ms, pct, spread
from .scaling import Session
from .typist import for_seconds, sample
from .yjs import YPeer

SETTLE = 0.3  # seconds the resumed agents work before the person's turn is timed: their calls in full flow
AGENTS_SECONDS = 3600.0  # the agents' own clock (it runs while they are paused); they are killed at the end


@dataclass
class Compared:
    """One row of the summary: the baseline's figure and today's, with the spread behind each."""

    name: str
    unit: str
    before: float
    now: float
    before_spread: str  # the interquartile range of the blocks' figures, or the samples themselves
    now_spread: str
    target: float | None = 1.05  # now / before at most; None: shown, not a target

    @property
    def ratio(self) -> float:
        return self.now / self.before if self.before else float("inf")


class Person:
    """One server's person and its ``agents`` (none: a server no agent ever connected to, where the
    extension is as a person without agents has it), for the keystroke's blocks."""

    def __init__(self, server: JupyterServer, agents: int, turn: float) -> None:
        self.server, self.agents, self.turn = server, agents, turn
        self.idle: list[list[float]] = []  # ms, one list per block
        self.busy: list[list[float]] = []
        self.rest: list[list[float]] = []  # the person's folder listings in the agents' turns
        self.calls_per_s: list[float] = []  # the agents' calls the gate let in, per turn
        self.proc: asyncio.subprocess.Process | None = None

    async def open(self, stack: contextlib.AsyncExitStack) -> None:
        """The person's tabs, warmed up, and the agents' process, its sessions open, paused."""
        url, headers = self.server.url, self.server.headers
        write_notebook(self.server.root, "person.ipynb", 3)
        paths = [write_notebook(self.server.root, f"agent-{i}.ipynb", 20).name for i in range(self.agents)]
        self.peer = await stack.enter_async_context(YPeer(url, headers, "person.ipynb"))
        self.tab = await stack.enter_async_context(YPeer(url, headers, "person.ipynb"))
        self.http = await stack.enter_async_context(httpx.AsyncClient(headers=headers, timeout=60))
        if not paths:  # the extension loaded, as echo.py's server "with" has it: no agent connected
            assert await mcp_status(self.server) != 404
        await keystrokes(self.peer, self.tab)
        if paths:
            self.proc = await agents_process(self.server, paths, AGENTS_SECONDS)
            self.proc.send_signal(signal.SIGSTOP)
            stack.push_async_callback(self.close)

    async def close(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            await self.proc.wait()

    async def idle_block(self) -> None:
        self.idle.append(ms(await keystrokes(self.peer, self.tab)))

    async def _admitted(self) -> int:
        """The calls the server's gate has let in so far (``benchmarks.floor``; 0 without a gate)."""
        return int((await self.http.get(f"{self.server.url}bench/gate")).json()["admitted"])

    async def agents_turn(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)
        try:
            await asyncio.sleep(SETTLE)
            before, start = await self._admitted(), time.monotonic()
            got = await sample(self.peer, self.tab, self.http, self.server.url, for_seconds(self.turn))
            self.calls_per_s.append((await self._admitted() - before) / (time.monotonic() - start))
        finally:
            self.proc.send_signal(signal.SIGSTOP)
        self.busy.append(got["keystroke"])
        self.rest.append(got["rest"])


def keystroke_rows(quiet: dict[str, Person], busy: dict[str, Person]) -> list[Compared]:
    """p50 and p95 of every keystroke of a kind, pooled; the spread is of the blocks' own p50 or p95."""
    rows = []
    base, now = busy["base"], busy["now"]
    for people, what, label, target in (
        (quiet, "idle", "keystroke, no agent", 1.05),
        (busy, "busy", f"keystroke, {base.agents} agents at work", 1.05),
        (busy, "rest", f"folder listing, {base.agents} agents at work", None),
    ):
        blocks = {side: getattr(person, what) for side, person in people.items()}
        for q in (0.5, 0.95):
            figure = {side: pct([k for b in blocks[side] for k in b], q) for side in blocks}
            spreads = {side: spread([pct(b, q) for b in blocks[side] if b]) for side in blocks}
            rows.append(
                Compared(
                    f"{label} p{round(q * 100)}",
                    "ms",
                    figure["base"],
                    figure["now"],
                    spreads["base"],
                    spreads["now"],
                    target,
                )
            )
    rows.append(
        Compared(
            f"{base.agents} agents' calls/s in those turns",
            "calls/s",
            statistics.median(base.calls_per_s),
            statistics.median(now.calls_per_s),
            spread(base.calls_per_s),
            spread(now.calls_per_s),
            None,
        )
    )
    return rows


class Printer:
    """A fresh server's one print of 100 MB, its kernel started and linked beforehand."""

    def __init__(self, server: JupyterServer) -> None:
        self.server = server
        self.growth_mb: float | None = None

    async def open(self, stack: contextlib.AsyncExitStack) -> None:
        headers = {**self.server.headers, "Accept": "application/json, text/event-stream"}
        http = await stack.enter_async_context(httpx.AsyncClient(headers=headers, timeout=300))
        self.session = Session(self.server, http)
        await self.session.open()
        write_notebook(self.server.root, "flood.ipynb", 1)
        # The kernel's start and the extension's link to it are not the print's.
        await self.session.tool("execute_code", path="flood.ipynb", code="0")

    async def block(self) -> None:
        with PeakRSS(psutil.Process(self.server.pid)) as rss:
            out = await self.session.tool(
                "insert_and_execute", path="flood.ipynb", source=FLOOD_CODE, timeout=300
            )
        if out.get("status") != "ok":
            raise RuntimeError(f"the 100 MB print failed: {out}")
        self.growth_mb = rss.growth_mb


def print_rows(printers: dict[str, list[Printer]]) -> list[Compared]:
    growth = {side: [p.growth_mb for p in ps if p.growth_mb is not None] for side, ps in printers.items()}
    return [
        Compared(
            "server RSS growth, a cell printing 100 MB (peak)",
            "MB",
            statistics.median(growth["base"]),
            statistics.median(growth["now"]),
            spread(growth["base"]),
            spread(growth["now"]),
        )
    ]
