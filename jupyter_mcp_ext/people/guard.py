"""What stands between an agent's call and its tool: the policy, a person's approval, the journal.

The call pipeline hands every tool call to ``Guard.run``. Reads go straight through (after the
policy); calls that change something are recorded in the journal with what they changed; calls the
policy gates wait for a person. Every call runs as a task of its own so that a person's stop can
cancel it, approval waits included.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

from jupyter_core.utils import ensure_async

from ..agents.directory import principal_of
from ..errors import ToolError
from ..services import Services
from . import approval_cards
from .approvals import Approval, Approvals
from .journal import Journal
from .policy import Policy, kind_of
from .recorder import Recorder

KERNEL_NOTE = "kernel state cannot be undone"
STOP_GRACE = 2.0  # seconds a stopped call has to answer before the sessions end


@dataclass
class Caller:
    """Who makes a call: the agent (an MCP session), the name people know it by and the Jupyter user."""

    agent: Any  # agents.directory.Agent
    id: str
    client: str
    user: str


def credential_policy(call: Any) -> str | None:
    """The policy the person chose for the calling agent's own credential (None: the server's alone)."""
    return getattr(getattr(call.handler, "current_user", None), "agent_policy", None)


class Guard:
    def __init__(self, services: Services, journal: Journal, policy: Policy, approvals: Approvals):
        self.services = services
        self.journal = journal
        self.policy = policy
        self.approvals = approvals
        self._calls: dict[asyncio.Task[Any], asyncio.Event] = {}  # a call's task -> set once it answered
        self._credentials: dict[asyncio.Task[Any], str] = {}  # a call's task -> its agent credential
        self._stopped: dict[asyncio.Task[Any], str] = {}  # a cancelled call's task -> why, for its answer

    async def run(self, spec: Any, call: Any, args: Any) -> Any:
        """Run ``spec`` for this call under the policy, recording what it changes."""
        caller = self.caller(call)
        task = asyncio.ensure_future(self._run(spec, call, args, caller))
        answered = self._calls[task] = asyncio.Event()
        credential = getattr(
            getattr(getattr(call.handler, "current_user", None), "credential", None), "id", None
        )
        if credential:
            self._credentials[task] = credential
        try:
            return await task
        except asyncio.CancelledError:
            if task in self._stopped:
                raise ToolError(f"{spec.name} was stopped by the user{self._stopped[task]}.") from None
            raise
        finally:
            answered.set()
            self._calls.pop(task, None)
            self._credentials.pop(task, None)
            self._stopped.pop(task, None)

    async def _run(self, spec: Any, call: Any, args: Any, caller: Caller) -> Any:
        kind = kind_of(spec)
        if spec.name == "interrupt_kernel" and await self._own_run(call, args):
            kind = "edit"  # an agent may stop its own approved run; a person's code is theirs
        if kind == "read":
            self.policy.check(spec.name, kind, credential_policy(call))
            return await spec.run(call, args)
        entry = self.journal.new(
            agent=caller.id,
            client=caller.client,
            user=caller.user,
            tool=spec.name,
            path=getattr(args, "path", None),
        )
        recorder = Recorder(self.services, spec.name, kind, args)
        started = time.monotonic()
        try:
            try:
                if self.policy.check(
                    spec.name, kind, credential_policy(call)
                ) and not self.approvals.allowed_for_turn(caller.id, spec.name, getattr(args, "path", None)):
                    await self._approval(spec, call, args, caller, kind)
            except ToolError as err:
                entry.outcome, entry.error = "denied", str(err)
                raise
            await recorder.before(args)
            call.on_open = recorder.opened
            try:
                with recorder.recording():
                    return await spec.run(call, args)
            except asyncio.CancelledError:
                entry.outcome, entry.error = "error", "cancelled"
                raise
            except BaseException as err:
                entry.outcome, entry.error = "error", str(err) or type(err).__name__
                raise
        finally:
            entry.duration_ms = (time.monotonic() - started) * 1000
            with contextlib.suppress(Exception):  # before any await: only what the tool did
                if entry.outcome != "denied":
                    recorder.notebooks_after(entry.outcome == "ok")
            with contextlib.suppress(Exception):  # a journal that fails must not fail the call
                done = entry.outcome == "ok"
                now = recorder.after_now(done) if entry.outcome != "denied" else []
                entry.changes = now if now is not None else await asyncio.shield(recorder.after(done))
            entry.path = recorder.path or entry.path
            if kind == "run" and entry.outcome == "ok":
                entry.note = KERNEL_NOTE
            if entry.changes or entry.outcome != "ok" or kind == "run":
                self.journal.add(entry)

    async def _approval(self, spec: Any, call: Any, args: Any, caller: Caller, kind: str) -> None:
        """Wait for a person to approve what they are shown; the call then does that or nothing."""
        what = await approval_cards.describe(self.services, spec, args)
        path = getattr(args, "path", None)
        approval = Approval(caller.id, caller.client, spec.name, path, kind, what.code, what.change)
        approval.principal = principal_of(call.request, call.handler) or caller.user
        self.approvals.admit(approval)  # before anything else is held for it
        agents = self.services.agents
        was = caller.agent.state
        agents.set_state(caller.agent, "waiting", path=approval.path)

        async def report(n: float, message: str) -> None:
            with contextlib.suppress(Exception):
                if call.task is not None:  # a task's request has ended: its status says it instead
                    await call.task.progress(message)
                else:
                    await call.request.session.report_progress(n, message=message)

        try:
            await self.approvals.wait(approval, report)
        finally:
            agents.set_state(caller.agent, was)
        await approval_cards.confirm(self.services, spec, what)
        call.shown_cells = what.cells  # the tool compares them with what it reads, as it acts

    async def _own_run(self, call: Any, args: Any) -> bool:
        """Whether the notebook's kernel is running a run this caller started through MCP (approved
        already, under ``ask``): interrupting anything else ends a person's or another agent's code."""
        try:
            path = await self.services.documents.resolve(args.path)
        except Exception:
            return False  # the tool says what is wrong with the path, after the policy
        owner = principal_of(call.request, call.handler)
        execution = self.services.execution
        return any(
            not run.done.is_set()
            and run.path == path
            and run.owner == owner
            and execution.running_on(run.kernel_id) in run.cells
            for run in list(execution.runs.values())
        )

    def caller(self, call: Any) -> Caller:
        """The agent of this call: the one the call came in as, else from the agent directory (which
        knows it already: same request)."""
        agent = getattr(call, "agent", None)
        if agent is None:
            agent = self.services.agents.agent_for(call.request, call.handler)
        return Caller(agent, agent.id, agent.name, agent.user or "")

    # -- stop --------------------------------------------------------------------------

    async def stop(self) -> dict[str, int]:
        """Cancel every pending call (approval waits too) and interrupt kernels running agent code."""
        cancelled = self._cancel(list(self._calls), "; the session is ending")
        self.approvals.forget_turns()
        interrupted = await self._interrupt_runs()
        await self._answered(cancelled)
        return {"cancelled": len(cancelled), "interrupted": interrupted}

    async def end_credential(self, credential_id: str) -> int:
        """A revoked agent credential: its calls still going (approval waits, MCP tasks, calls of a
        client without a session) end now, as a person's Stop ends them; others go on."""
        mine = [task for task, credential in self._credentials.items() if credential == credential_id]
        cancelled = self._cancel(
            mine, ", who revoked this agent's credential: nothing more can be done with it"
        )
        await self._answered(cancelled)
        return len(cancelled)

    def _cancel(self, tasks: list[asyncio.Task[Any]], why: str) -> list[asyncio.Event]:
        cancelled = []
        for task in tasks:
            if not task.done() and task in self._calls:
                self._stopped[task] = why
                task.cancel()
                cancelled.append(self._calls[task])
        return cancelled

    @staticmethod
    async def _answered(cancelled: list[asyncio.Event]) -> None:
        """Let each cancelled call answer why before its session ends."""
        if not cancelled:
            return
        waits = [asyncio.ensure_future(a.wait()) for a in cancelled]
        await asyncio.wait(waits, timeout=STOP_GRACE)
        for w in waits:
            w.cancel()
        await asyncio.sleep(0.1)  # the SDK writes the answer on the next loop iterations

    async def _interrupt_runs(self) -> int:
        execution = self.services.execution
        kernels: set[str] = set()
        for run in list(execution.runs.values()):
            if run.done.is_set():
                continue
            for cell in run.cells:
                if cell.status == "queued":
                    cell.status = "skipped"  # what waits behind the running cell is dropped
            if execution.running_on(run.kernel_id) in run.cells:
                kernels.add(run.kernel_id)
        for kernel_id in kernels:
            with contextlib.suppress(Exception):
                await ensure_async(self.services.kernels.kernels.interrupt_kernel(kernel_id))
        return len(kernels)
