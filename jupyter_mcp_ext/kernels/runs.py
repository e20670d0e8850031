"""Runs: cells executed in the notebook's kernel, with outputs written live into the shared document.

Nobody else writes outputs of a cell run on the server (in JupyterLab the browser that ran it does),
so a run writes what the browser would: ``execution_state`` running then idle, outputs as they
arrive, the execution count. A run outlives the tool call that started it when the call's timeout
is up; runs on one kernel queue behind each other in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..documents import cells as nb
from ..documents import run_outputs
from ..documents.rooms import DocumentService
from ..errors import ToolError
from ..loop.gate import yield_turn
from .chunks import lengths_before, steps
from .messages import Budget
from .output_model import Op, OutputModel
from .sessions import KernelService

log = logging.getLogger(__name__)

KEEP_FINISHED = 200  # finished runs kept for get_execution, at most this many
KEEP_FINISHED_BYTES = 64 * 1024 * 1024  # and outputs of at most this size, together
START_GRACE = 0.05  # seconds a run's start may wait to go into the document with what follows
BATCH = 256  # kernel messages taken in one go: a flood is handled in steps, the loop free between them
# Seconds of silence on a cell's output channel, after its reply, before the run ends without the
# kernel's "idle": a kernel whose output thread failed (ipykernel's does on a lone surrogate in a
# print) never sends it, and the run would wait out its whole timeout for nothing.
IDLE_AFTER_REPLY = 5.0
OTHERS_RUN = "a run another agent started"  # what a run waits behind when that run is not the caller's


@dataclass(eq=False)  # identity: a run's cells are found with `in`
class CellRun:
    """One cell (or one scratch snippet) run once."""

    cell_id: str | None
    code: str
    model: OutputModel
    status: str = "queued"  # queued, running, ok, error, interrupted, died, skipped
    execution_count: int | None = None
    error: dict[str, Any] | None = None
    note: str | None = None  # why the cell's document copy stopped updating, if it did
    _pending: list[Op] = field(default_factory=list)  # edits made outside the message loop
    _synced: int = -1  # outputs this run last left in the document (-1: not written yet)
    _reply: dict[str, Any] | None = None
    _idle: bool = False
    _heard: float = 0.0  # when the cell's last output-channel message came (monotonic)
    _done: asyncio.Event = field(default_factory=asyncio.Event)
    _waiter: asyncio.Future[None] | None = None  # what the run's loop awaits while its inbox is empty

    def wake(self) -> None:
        """Wake the run's loop: a message came, the cell ended or its grace is over."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def end(self) -> None:
        self._done.set()
        self.wake()


@dataclass(eq=False)
class Run:
    id: str
    path: str
    room_id: str  # the notebook's room, fixed when the run starts
    kernel_id: str
    cells: list[CellRun]
    stop_on_error: bool
    # Who started it (``agents.directory.principal_of``: an agent credential, or the person's token or
    # login): only they see it with get_execution, or learn its id.
    owner: str | None = None
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    queued_behind: str | None = None  # what it waits for: "execution <id>" if the caller's own
    done: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    listeners: list[Callable[[CellRun], None]] = field(default_factory=list)

    @property
    def status(self) -> str:
        states = [c.status for c in self.cells]
        for state in ("died", "interrupted", "error"):
            if state in states:
                return state
        if not self.done.is_set():
            return "queued" if all(c.status == "queued" for c in self.cells) else "running"
        return "ok"


class ExecutionService:
    def __init__(self, kernels: KernelService, documents: DocumentService, *, max_document_output_bytes: int):
        self.kernels = kernels
        self.documents = documents
        self.max_document_output_bytes = max_document_output_bytes
        self.runs: OrderedDict[str, Run] = OrderedDict()
        self._current: dict[str, CellRun] = {}  # kernel id -> the cell running on it now
        self._finished_bytes = 0  # outputs kept by the finished runs in self.runs
        self._last_finished: str | None = None
        kernels.on_kernel_event(self._on_kernel_event)

    def get(self, execution_id: str, owner: str | None) -> Run:
        """The run, for the user who started it; to anyone else it does not exist."""
        run = self.runs.get(execution_id)
        if run is None or run.owner != owner:
            raise ToolError(
                f"No execution '{execution_id}' (finished runs are kept for a while, then forgotten)."
            )
        return run

    async def start(
        self,
        path: str,
        kernel_id: str,
        cells: list[tuple[str | None, str]],
        *,
        stop_on_error: bool,
        owner: str | None = None,
    ) -> Run:
        """Queue cells ``(cell id or None for scratch code, code)`` on the kernel; returns at once."""
        link = await self.kernels.link(kernel_id)
        run = Run(
            id=secrets.token_hex(6),
            path=path,
            room_id=self.documents.room_id(path),
            kernel_id=kernel_id,
            cells=[CellRun(cid, code, OutputModel(self.max_document_output_bytes)) for cid, code in cells],
            stop_on_error=stop_on_error,
            owner=owner,
        )
        if link.lock.locked():
            ahead = next(
                (r for r in reversed(self.runs.values()) if r.kernel_id == kernel_id and not r.done.is_set()),
                None,
            )
            if ahead is not None:  # another caller's run is not named: its id would open its output
                run.queued_behind = f"execution {ahead.id}" if ahead.owner == owner else OTHERS_RUN
        self.runs[run.id] = run
        self._forget_old_runs()
        run.task = asyncio.create_task(self._run(run, link), name=f"jupyter-mcp-ext run {run.id}")
        return run

    def _forget_old_runs(self) -> None:
        """Forget the runs that finished first beyond a count and a size (a flood's outputs are MBs),
        wherever they are: an endless cell must not pin them. The last to finish is always kept:
        its caller may be about to read it with get_execution. Runs at every start and end, so it
        looks only as far as it must: finished runs move to the end of ``runs`` as they end."""
        over_count = len(self.runs) - KEEP_FINISHED
        over_bytes = self._finished_bytes - KEEP_FINISHED_BYTES
        doomed = []
        for old in self.runs.values():
            if over_count <= 0 and over_bytes <= 0:
                break
            if old.done.is_set() and old.id != self._last_finished:
                doomed.append(old)
                over_count -= 1
                over_bytes -= _kept_bytes(old)
        for old in doomed:
            del self.runs[old.id]
            self._finished_bytes -= _kept_bytes(old)

    async def _run(self, run: Run, link: Any) -> None:
        try:
            async with link.lock:
                for cell in run.cells:
                    if cell.status == "skipped":
                        continue
                    await self._run_cell(run, link, cell)
                    if cell.status != "ok" and run.stop_on_error:
                        for later in run.cells:
                            if later.status == "queued":
                                later.status = "skipped"
                        break
        finally:
            self.kernels.touch(run.kernel_id)
            for cell in run.cells:
                if cell.status in ("queued", "running"):
                    cell.status = "skipped" if cell.status == "queued" else "died"
            run.ended = time.monotonic()
            run.done.set()
            if run.id in self.runs:
                self.runs.move_to_end(run.id)
                self._finished_bytes += _kept_bytes(run)
                self._last_finished = run.id
            self._forget_old_runs()

    async def _run_cell(self, run: Run, link: Any, cell: CellRun) -> None:
        cell.status = "running"
        # [*] and the first outputs are held for a moment: a quick cell then reaches the document
        # (and its store) as one change, its end, instead of three a person could not tell apart.
        show_at: float | None = time.monotonic() + START_GRACE
        inbox: deque[tuple[str, dict[str, Any]]] = deque()
        loop = asyncio.get_running_loop()
        msg_id = link.client.execute(
            cell.code, store_history=cell.cell_id is not None, allow_stdin=False, stop_on_error=True
        )

        def deliver(channel: str, msg: dict[str, Any]) -> None:
            cell._heard = time.monotonic()  # as it arrives: a backlog still to handle is not silence
            inbox.append((channel, msg))
            cell.wake()

        link.routes[msg_id] = deliver
        link.budgets[msg_id] = Budget(self.max_document_output_bytes)  # what waits in the inbox is bounded
        self._current[run.kernel_id] = cell
        try:
            while not cell._done.is_set():
                if not inbox:
                    # One future woken by a message, the cell's end or the grace's timer: a message
                    # costs the loop one wake-up, not a task per message and per end to watch.
                    waiter = cell._waiter = loop.create_future()
                    timer = None
                    if show_at is not None:
                        timer = loop.call_later(max(0.0, show_at - time.monotonic()), cell.wake)
                    try:
                        await waiter
                    finally:
                        cell._waiter = None
                        if timer is not None:
                            timer.cancel()
                    if not inbox:
                        if cell._done.is_set():
                            break
                        if show_at is not None and time.monotonic() >= show_at:
                            show_at = None  # the grace is over and the cell still runs: show [*] now
                            await self._write(run, cell, [], state="running", count=None)
                        continue
                batch = [inbox.popleft() for _ in range(min(len(inbox), BATCH))]
                # One document transaction per batch: a flood of small messages stays cheap.
                ops: list[Op] = []
                for channel, msg in batch:
                    ops += self._on_message(cell, channel, msg)
                if cell._done.is_set():
                    # The last batch goes in with the end of the run: one transaction, not two.
                    cell._pending = ops + cell._pending
                elif show_at is None or time.monotonic() >= show_at:
                    # The count goes in only at the end, as JupyterLab does: a tab that sees a
                    # count takes the cell for idle and stops showing [*].
                    state = "running" if show_at is not None else None
                    show_at = None
                    await self._write(run, cell, ops, state=state, count=None)
                if ops:
                    for listener in run.listeners:
                        listener(cell)
        finally:
            link.routes.pop(msg_id, None)
            link.budgets.pop(msg_id, None)
            self._current.pop(run.kernel_id, None)
            if cell.status == "running" and cell._done.is_set():
                reply = cell._reply or {}
                if reply.get("status", "ok") == "ok":
                    cell.status = "ok"
                else:
                    cell.error = {k: reply.get(k) for k in ("ename", "evalue", "traceback")}
                    cell.status = "interrupted" if reply.get("ename") == "KeyboardInterrupt" else "error"
            try:  # whatever happened, the cell must not stay at [*]
                await self._write(run, cell, cell._pending, state="idle", count=cell.execution_count)
            except Exception:
                log.exception("Could not mark cell %s idle", cell.cell_id)
            if cell._done.is_set():
                cell.model.finish()

    def _on_message(self, cell: CellRun, channel: str, msg: dict[str, Any]) -> list[Op]:
        msg_type = msg["header"]["msg_type"]
        content = msg.get("content", {})
        ops: list[Op] = []
        if channel == "shell":
            if msg_type == "execute_reply":
                cell._reply = content
                cell.execution_count = content.get("execution_count", cell.execution_count)
                if not cell._idle:
                    asyncio.get_running_loop().call_later(IDLE_AFTER_REPLY, self._no_idle, cell)
        elif msg_type == "status":
            cell._idle = content.get("execution_state") == "idle"
        elif msg_type == "execute_input":
            cell.execution_count = content.get("execution_count")
        else:
            ops = cell.model.apply(msg_type, content)
        if cell._reply is not None and cell._idle:
            # A run ends when both the reply and the kernel's idle for it are in, in either order.
            cell.end()
        return ops

    def _no_idle(self, cell: CellRun) -> None:
        """End a replied cell whose output channel went silent without "idle" (see IDLE_AFTER_REPLY)."""
        if cell._done.is_set():
            return
        quiet = time.monotonic() - cell._heard
        if quiet < IDLE_AFTER_REPLY:  # outputs still coming (a big print read behind): wait on
            asyncio.get_running_loop().call_later(IDLE_AFTER_REPLY - quiet, self._no_idle, cell)
            return
        cell.note = "The kernel answered but never said it was idle; outputs it sent after may be missing."
        cell.end()

    def _on_kernel_event(self, event: dict[str, Any]) -> None:
        cell = self._current.get(event["kernel_id"])
        if cell is None or cell._done.is_set():
            return
        what = {"restart": "was restarted", "shutdown": "was shut down"}.get(event["action"], "died")
        cell.status = "died"
        cell.error = {
            "ename": "KernelDied",
            "evalue": f"The kernel {what} while this cell was running.",
            "traceback": [],
        }
        cell._pending = cell.model.apply("error", cell.error)
        cell.end()

    # -- the shared document -------------------------------------------------------------

    async def _write(
        self, run: Run, cell: CellRun, ops: list[Op], *, state: str | None, count: int | None
    ) -> None:
        """Apply output edits to the cell in the live document, in steps that leave the loop free."""
        if cell.cell_id is None or cell.note is not None or (not ops and state is None and count is None):
            return
        if cell._synced == -1:
            # The run's first write replaces the cell's old outputs with all the run has so far.
            ops = [("clear",), *(("append", output) for output in cell.model.outputs)]
        before = max(cell._synced, 0)
        parts = steps(ops, lengths_before(cell.model.outputs, ops, before))
        expect = before  # outputs the document holds once a step is in
        for i, part in enumerate(parts):
            if i:
                await yield_turn()  # a big output: others go first, agents within their share
            for op in part:
                expect = 0 if op[0] == "clear" else expect + (op[0] == "append")
            last = i == len(parts) - 1
            await self._write_step(
                run, cell, part, expect, state=state if last else None, count=count if last else None
            )
            if cell.note is not None:
                return

    async def _write_step(
        self, run: Run, cell: CellRun, ops: list[Op], expect: int, *, state: str | None, count: int | None
    ) -> None:
        """One transaction of output edits on the cell in the live document, found afresh by id."""
        doc = await self.documents.live(run.path, run.room_id)
        if doc is None:
            cell.note = (
                "the notebook was closed or deleted while the cell ran; outputs are only in this result"
            )
            return
        try:
            index = nb.find(doc, cell.cell_id)
        except ToolError:
            cell.note = "the cell was deleted while it ran; outputs are only in this result"
            return
        ycell = doc.ycells[index]
        if ycell.get("cell_type") != "code":
            cell.note = "the cell stopped being a code cell while it ran; outputs are only in this result"
            return
        cell._synced = run_outputs.write_step(
            doc,
            ycell,
            ops,
            synced=cell._synced,
            expect=expect,
            outputs=cell.model.outputs,
            state=state,
            count=count,
        )

    # -- control -------------------------------------------------------------------------

    def running_on(self, kernel_id: str) -> CellRun | None:
        return self._current.get(kernel_id)

    async def stop(self) -> None:
        for run in list(self.runs.values()):  # each run, as it ends, forgets older ones
            if run.task is not None and not run.task.done():
                run.task.cancel()
                with contextlib.suppress(BaseException):
                    await run.task


def _kept_bytes(run: Run) -> int:
    return sum(cell.model.kept_bytes for cell in run.cells)
