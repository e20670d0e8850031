"""A share of the event loop for agents: MCP work waits its turn so the person is served first.

Jupyter Server is one thread. Four agents calling flat out can fill every loop iteration, and a
person's keystroke (about ten loop hops from one browser to another) then waits behind each. The
gate meters the loop time that MCP work holds (the wall clock around every step of an MCP task)
and admits new MCP work only while that time stays within ``share`` of wall time. A call over the
share waits; waiting calls are served round-robin across sessions, so one busy agent cannot starve
another; nothing is refused for load. The gate holds agents back only while a person uses the server
(``person_here``, ``people/attendance.py``): with nobody else on the loop, agents have all of it.

Wall clock, not CPU: while a step runs, nothing else on the loop can, whether the step computes,
blocks in a synchronous disk sync (a save's ``fsync``, the notary's SQLite commit) or waits for a
core on a busy machine. Under four flat-out agents on a loaded two-core machine, MCP's steps held
the loop 2.4-3.1x as long as their CPU: metering CPU, the gate at 0.5 seldom engaged while MCP
held the loop about 0.65 of the time (README, "What the person feels").

What counts as MCP work: every step of a task running in an MCP context (``mcp_context``): the
handler's own request, the SDK's session tasks and the tools' tasks they start (including runs
writing outputs), found through a task factory on the loop. Only steps are metered: time a task
spends waiting (for a kernel, for a client) costs nothing.

Admission alone does not hold the share: a call let in runs all its steps. Four calls in flight on
a loaded two-core machine ran MCP 0.13-0.19 s past its share, a second's window at 0.16-0.24 for a
share of 0.1 (issue 23). So admitted MCP work past its share, with a person here, is paused between
two steps until the share is free again, before any new call is let in. (It first ran up to 20 ms
past the share before a pause; pausing at once cut the person's keystroke p95 by a quarter with four
agents flat out, and gave the agents as many calls: issue 21.)
What serves people too (a shared room an agent's call opened) is metered but never paused (``unpaused``).

The share bounds how much of the loop agents get, not how long a keystroke waits at each hop: asyncio
runs every callback that is ready before it looks for I/O again, so with four calls in flight a hop
waits behind a step of each. So MCP work also comes in slices (``time_slice``, with a person here):
once its steps have held the loop that long, the next ones wait for the loop's next look for I/O, and
what that look brings (a keystroke, a request) goes first (issue 21: keystroke p95 a fifth to a third
lower, agents' calls 5-15% fewer, ``tests/loop/test_gate_slices.py``).

A person who is here is not always waiting on the server. While a request of theirs is in flight (a
folder listing, a save: ``people/attendance.py``), MCP work is held to ``waiting_share``, from the
request's first step on (what was left of its burst is gone); the rest of the time ``share``
holds (issue 21: a person typing and browsing among four flat-out agents saw the folder listing's
p95 halved, below what it is with the agents on another server, for 4-9% fewer agent calls; up to a
third fewer where the person's listings are in flight most of the time, README "A person waiting").
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from .metered import Metered, drive

T = TypeVar("T")

_MCP: contextvars.ContextVar[LoopGate | None] = contextvars.ContextVar("jupyter_mcp_ext_gate", default=None)
_PAUSABLE: contextvars.ContextVar[bool] = contextvars.ContextVar("jupyter_mcp_ext_pausable", default=True)
BURST = 0.02  # seconds of loop time an idle gate lets through at once
RECHECK = 0.5  # seconds at most between two looks at the share while work waits (a person may leave)
WINDOW = 1.0  # seconds over which ``recent_share`` is reported


class LoopGate:
    """Admits MCP work while the loop time it holds stays within ``share`` of wall time.

    ``share`` 1.0 (or more) with ``waiting_share`` 1.0 turns the gate off: nothing waits, the time
    is still metered. With ``person_here``, MCP work waits only while it says a person is here.
    """

    def __init__(
        self,
        share: float = 0.5,
        person_here: Callable[[], bool] | None = None,
        free_step: float = 0.0,
        time_slice: float = 0.0,
        waiting_share: float = 1.0,
    ):
        self.share = share
        self.waiting_share = waiting_share  # the share while a person's request is in flight (if lower)
        self._waiting = False  # a person's request is in flight (``person_waits``)
        self.person_here = person_here
        self.free_step = free_step  # steps shorter than this (seconds) are not charged to the share
        self.spent = 0.0  # seconds of loop time MCP work held, in all
        self.admitted = 0
        self.waited = 0  # admissions that had to wait
        self.paused = 0  # times admitted work was paused between steps, past its share
        self.order: deque[str] = deque(maxlen=256)  # the last admissions' keys, in order (for tests)
        self.credit = BURST  # seconds of loop time MCP work may still use (below 0: it waits)
        self._stamp = time.monotonic()
        self._queues: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        self._held: deque[asyncio.Future[None]] = deque()  # admitted work paused between steps
        self._timer: asyncio.TimerHandle | None = None
        # (monotonic, spent, the longest step since the sample before) about every 50 ms
        self._samples: deque[tuple[float, float, float]] = deque()
        self._longest = 0.0  # the longest step charged since the last sample
        self._installed: asyncio.AbstractEventLoop | None = None
        self._previous_factory: Any = None
        self.time_slice = time_slice
        self.slice_used = 0.0  # loop time MCP steps held since this slice began
        self._next: list[asyncio.Future[None]] = []  # work waiting for the next slice
        self._slice_timer: asyncio.TimerHandle | None = None
        self.sliced = 0  # times a step waited for a slice (a second wait, woken into a full one, not counted)

    @property
    def time_slice(self) -> float:
        """Seconds of loop time MCP steps may hold between two of the loop's polls for I/O while a
        person is here; past it, MCP work waits for the next poll (0: no slices)."""
        return self._slice

    @time_slice.setter
    def time_slice(self, seconds: float) -> None:
        self._slice = seconds
        self.slice_limit = seconds if seconds > 0 else float("inf")

    # -- metering ------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return 0 < min(self.share, self.waiting_share) < 1

    @property
    def _rate(self) -> float:
        return min(self.share, self.waiting_share) if self._waiting else self.share

    def spend(self, seconds: float) -> None:
        self.spent += seconds
        self.slice_used += seconds
        if seconds > self._longest:
            self._longest = seconds
        if not 0 <= seconds < self.free_step:  # a short step is not charged (a negative: a refund)
            self.credit -= seconds

    def _refill(self) -> None:
        now = time.monotonic()
        rate = self._rate
        self.credit = min(BURST, self.credit + (now - self._stamp) * rate)
        self._stamp = now  # before ``person_here``, which may tell the gate a person stopped waiting
        if rate >= 1 or (self.person_here is not None and not self.person_here()):
            self.credit = BURST  # nobody to serve first: the agents may have the loop
        if not self._samples or now - self._samples[-1][0] >= 0.05:
            self._samples.append((now, self.spent, self._longest))
            self._longest = 0.0
            while len(self._samples) > 2 and now - self._samples[1][0] > WINDOW:
                self._samples.popleft()

    def recent_share(self) -> float:
        """MCP's loop time over about the last second, as a share of wall time."""
        self._refill()
        (t0, s0, _), now = self._samples[0], time.monotonic()
        return (self.spent - s0) / (now - t0) if now > t0 else 0.0

    def recent_longest(self) -> float:
        """The longest single step in ``recent_share``'s window, in seconds: the gate pauses work
        between steps, never inside one, so this much may come on top of the share (a loaded machine
        stretched a 1 ms step to 170 ms, waiting for a core)."""
        return max([self._longest, *(longest for _, _, longest in list(self._samples)[1:])])

    def install(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Meter every task started in an MCP context on ``loop`` (a task factory; others chain)."""
        loop = loop or asyncio.get_running_loop()
        if self._installed is loop:
            return
        previous = loop.get_task_factory()
        gate = self

        def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Future[Any]:
            context = kwargs.get("context")
            owner = context.get(_MCP) if context is not None else _MCP.get()
            if owner is gate and asyncio.iscoroutine(coro):
                coro = drive(coro, gate)
            if previous is not None:
                return previous(loop, coro, **kwargs)
            return asyncio.Task(coro, loop=loop, **kwargs)

        loop.set_task_factory(factory)
        self._installed, self._previous_factory = loop, previous

    def uninstall(self) -> None:
        if self._installed is not None and not self._installed.is_closed():
            self._installed.set_task_factory(self._previous_factory)
        self._installed = None
        if self._slice_timer is not None:  # a later loop starts with a slice of its own
            self._slice_timer.cancel()
            self._new_slice()

    async def run(
        self, key: str, work: Coroutine[Any, Any, T], *, meter: bool = True, turn: bool = True
    ) -> T:
        """Run ``work`` as MCP work of ``key`` (a session): wait for a turn, then run it metered.

        Tasks it starts are MCP work too (they inherit the context). ``meter=False``: the caller
        is metered already (``metered``), and its steps must not count twice. ``turn=False``: the
        caller has had its turn (``turn``).
        """
        self.install()
        token = _MCP.set(self)
        try:
            if turn:
                await self.turn(key)
            return await (Metered(work, self) if meter else work)
        finally:
            _MCP.reset(token)

    def metered(self, work: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
        """``work`` with the loop time of each of its steps counted as MCP work."""
        return drive(work, self)

    # -- admission -----------------------------------------------------------------------

    def owes(self) -> bool:
        """Whether the current task is admitted MCP work past the share, with a person here: its next
        step waits (``hold``)."""
        if _MCP.get() is not self or not _PAUSABLE.get() or not self.enabled:
            return False
        self._refill()
        return self.credit < 0

    def person_waits(self, waiting: bool) -> None:
        """A person's request is now in flight (``True``), or none is any more."""
        if waiting == self._waiting:
            return
        if self.waiting_share >= self.share:  # the share is the same either way: nothing to redo
            self._waiting = waiting
            return
        self._refill()  # the time until now at the share it was
        self._waiting = waiting
        if waiting:  # from the request's first step on: what was left of the burst is gone
            self.credit = min(self.credit, 0.0)
        elif self._timer is not None:  # work waiting for the smaller share may go on now
            self._timer.cancel()
            self._timer = None
            self._schedule()

    def hold(self) -> asyncio.Future[None]:
        """A turn for admitted work to go on, served before the calls waiting for admission."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._held.append(waiter)
        self.paused += 1
        self._schedule()
        return waiter

    def yields(self) -> bool:
        """Whether the current task is MCP work to wait for the next slice (a person is here)."""
        if _MCP.get() is not self or not _PAUSABLE.get():
            return False
        if self.person_here is not None and not self.person_here():
            self.slice_used = 0.0  # nobody to make room for: look again a slice later
            return False
        return True

    def next_slice(self, first: bool = True) -> asyncio.Future[None]:
        """A wait until the loop has polled for I/O once more and run what that brought.

        A timer due at once runs after the I/O callbacks of the loop's next poll (asyncio runs what
        was ready before the poll, then the poll's callbacks, then due timers): a person's keystroke
        that arrived meanwhile goes before the work that waits here.
        """
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._next.append(waiter)
        self.sliced += first
        if self._slice_timer is None:
            self._slice_timer = loop.call_later(0, self._new_slice)
        return waiter

    def _new_slice(self) -> None:
        self._slice_timer = None
        self.slice_used = 0.0
        waiting, self._next = self._next, []
        for waiter in waiting:
            if not waiter.done():
                waiter.set_result(None)

    def unhold(self, waiter: asyncio.Future[None]) -> None:
        """A held task was cancelled: forget its turn, or pass it on if it had it."""
        if waiter in self._next:
            self._next.remove(waiter)
        elif waiter in self._held:
            self._held.remove(waiter)
        elif waiter.done() and not waiter.cancelled():
            self._schedule()

    async def turn(self, key: str) -> None:
        """Wait until MCP is within its share and ``key`` is next among the sessions waiting."""
        self._refill()
        self.admitted += 1
        if not self.enabled or (self.credit > 0 and not self._queues):
            self.order.append(key)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(key, deque()).append(waiter)
        self.waited += 1
        self._schedule()
        try:
            await waiter
        except asyncio.CancelledError:
            self._discard(key, waiter)
            if waiter.done() and not waiter.cancelled():
                self._schedule()  # it had its turn: pass it on
            raise

    def _discard(self, key: str, waiter: asyncio.Future[None]) -> None:
        queue = self._queues.get(key)
        if queue is not None and waiter in queue:
            queue.remove(waiter)
            if not queue:
                del self._queues[key]

    def _delay(self) -> float:
        return 0.0 if self.credit > 0 else min(RECHECK, -self.credit / self._rate + 0.001)

    def _schedule(self) -> None:
        if self._timer is not None or not (self._queues or self._held):
            return
        self._refill()
        self._timer = asyncio.get_running_loop().call_later(self._delay(), self._release)

    def _release(self) -> None:
        """Let the next session in turn go (one per loop iteration, so its time is counted first)."""
        self._timer = None
        self._refill()
        while self.credit > 0 and self._held:  # work in flight first: it finishes before more starts
            held = self._held.popleft()
            if not held.done():
                held.set_result(None)
                break
        else:
            self._admit()
        if self._queues or self._held:
            loop = asyncio.get_running_loop()
            if self.credit > 0:
                self._timer = loop.call_soon(self._release)  # type: ignore[assignment]  # a Handle: only ever cancelled
            else:
                self._timer = loop.call_later(self._delay(), self._release)

    def _admit(self) -> None:
        while self.credit > 0 and self._queues:
            key, queue = next(iter(self._queues.items()))
            waiter = queue.popleft()
            if queue:
                self._queues.move_to_end(key)  # round-robin: this session goes behind the others
            else:
                del self._queues[key]
            if waiter.done():  # cancelled while queued
                continue
            self.order.append(key)
            waiter.set_result(None)
            break

    @property
    def waiting(self) -> int:
        return sum(len(q) for q in self._queues.values())


def unpaused(work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """``work`` as a task that, with all it starts, is metered but never paused for the share.

    For what serves people too: a shared room an agent's call opens lives on for every tab, and a
    person's keystrokes reach the other tabs through its tasks.
    """
    context = contextvars.copy_context()
    context.run(_PAUSABLE.set, False)
    return asyncio.get_running_loop().create_task(work, context=context)


def mcp_context() -> LoopGate | None:
    """The gate whose MCP work the current task is part of, if any."""
    return _MCP.get()


async def yield_turn() -> None:
    """In MCP work that runs long (a run writing a large output): let others go if over the share."""
    await asyncio.sleep(0)  # whatever the share: what is ready to run goes first
    gate = _MCP.get()
    if gate is not None:
        await gate.turn("runs")
