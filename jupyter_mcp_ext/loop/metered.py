"""Drives an MCP coroutine step by step for the loop gate (``gate.py``): each step's loop time is
charged to the gate, and between two steps the work waits while the gate says so (past its share,
or its slice used up with a person here).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine, Generator
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Gate(Protocol):
    """What the driver needs of the loop gate (``gate.LoopGate``): its meter and its waits."""

    credit: float  # seconds of loop time MCP work may still use (below 0: it owes)
    slice_used: float  # loop time MCP steps held since this slice began
    slice_limit: float

    def owes(self) -> bool: ...
    def hold(self) -> asyncio.Future[None]: ...
    def yields(self) -> bool: ...
    def next_slice(self, first: bool = True) -> asyncio.Future[None]: ...
    def unhold(self, waiter: asyncio.Future[None]) -> None: ...
    def spend(self, seconds: float) -> None: ...


class Metered:
    """Drives a coroutine step by step, adding the loop time of each step to the gate.

    A task cancelled while paused before its first step still takes that step and hears the
    cancellation at its first wait, as it would have without the gate: code that starts a task and
    then waits for what its ``finally`` does (the collaboration layer's saves) would wait forever.
    """

    __slots__ = ("_coro", "_gate")

    def __init__(self, coro: Coroutine[Any, Any, T], gate: Gate):
        self._coro = coro
        self._gate = gate

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, gate, clock = self._coro, self._gate, time.perf_counter
        send, throw = coro.send, coro.throw
        value: Any = None
        error: BaseException | None = None
        early: BaseException | None = None  # thrown in while paused before the first step
        started = False
        while True:
            woken = False  # from a slice's wait: look again, the new slice may be used up already
            while error is None:
                if gate.credit < 0 and gate.owes():  # cheap tests first: every step
                    waiter, for_slice = gate.hold(), False
                elif gate.slice_used > gate.slice_limit and gate.yields():
                    waiter, for_slice = gate.next_slice(first=not woken), True
                else:
                    break
                try:
                    yield from waiter.__await__()
                except BaseException as exc:  # cancelled while paused: the coroutine hears it now
                    gate.unhold(waiter)
                    if started or isinstance(exc, GeneratorExit):
                        value, error = None, exc
                    else:  # thrown into it unstarted, it would skip its body, ``finally`` included
                        early = exc
                    break
                if not for_slice:
                    break
                woken = True
            start = clock()
            try:
                yielded = send(value) if error is None else throw(error)
            except StopIteration as stop:
                gate.spend(clock() - start)
                if early is not None:
                    raise early from None
                return stop.value
            except BaseException:
                gate.spend(clock() - start)
                raise
            gate.spend(clock() - start)
            started = True
            if early is not None:  # it hears it at its first wait, as it would have without the gate
                _call_off(yielded)
                value, error, early = None, early, None
                continue
            try:
                value, error = (yield yielded), None
            except BaseException as exc:  # cancellation and anything thrown in goes to the coroutine
                value, error = None, exc


def _call_off(awaited: Any) -> None:
    # What a task's cancel does to the future it waits on (an executor's job not begun is dropped).
    if isinstance(awaited, asyncio.Future) and not awaited.done():
        awaited.cancel()


async def drive(coro: Coroutine[Any, Any, T], gate: Gate) -> T:
    """``coro`` run metered, as a coroutine a task can run."""
    return await Metered(coro, gate)
