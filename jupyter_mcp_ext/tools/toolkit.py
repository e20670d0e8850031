"""How a tool is declared: its name, agent-facing description, argument model and result schema.

Tools are thin async functions ``(ToolContext, Args) -> ToolResult`` declared with ``@tool``. The
docstring is the description the agent reads, so it is written for the agent and kept short: every
byte of ``tools/list`` is paid for in tokens by every session.
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

import mcp_types as types
from pydantic import BaseModel, ConfigDict

from ..documents import activity
from ..errors import ToolError
from .authz import is_allowed

if TYPE_CHECKING:
    from jupyter_server.base.handlers import JupyterHandler
    from jupyter_ydoc import YNotebook
    from mcp.server import ServerRequestContext

    from ..services import Services


class Args(BaseModel):
    """Base of every argument model: unknown arguments are an error, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class NoArgs(Args):
    """For tools that take no arguments."""


A = TypeVar("A", bound=Args)


@dataclass
class ToolResult:
    """A short text for the agent, the same facts as ``structuredContent``, and any images."""

    text: str
    data: dict[str, Any]
    images: list[tuple[str, str]] = field(default_factory=list)  # (mime type, base64 data)
    view: dict[str, Any] | None = None  # the cells for a host's view (``apps/``): never shown to the agent


class TaskHooks(Protocol):
    """A call that runs as an MCP task (``protocol/tasks.py``): it outlives its request, so it waits
    for its run to end and reports progress as the task's status, not on the request's stream."""

    async def progress(self, message: str) -> None: ...


# What an agent reads when a person approved other cells or files than the call acts on now (the cells
# here, the files in ``people/approval_cards.py``).
CHANGED = (
    "{tool} was refused: {what} changed after the person was asked to approve it, so it is no longer "
    "what they approved. Nothing was done. Call again to ask them about what is there now."
)


def confirm_cells(tool: str, shown: list[tuple[str, str]], now: list[tuple[str, str]]) -> None:
    """Refuse when the cells a tool is about to act on are not those a person approved."""
    if now != shown:
        raise ToolError(CHANGED.format(tool=tool, what="the cells (their source, or which cells there are)"))


@dataclass
class ToolContext:
    """What a tool call may use besides its arguments."""

    services: Services
    handler: JupyterHandler | None
    request: ServerRequestContext[Any, Any]
    on_open: Callable[[str, YNotebook], None] | None = None  # the journal's snapshot of what a call edits
    shown_cells: list[tuple[str, str]] | None = None  # (id, source) a person approved acting on
    task: TaskHooks | None = None  # set when the call runs as an MCP task
    view: bool = False  # the client renders views (MCP Apps): tools that show cells fill ``ToolResult.view``
    held: list[str] = field(default_factory=list)  # rooms this call keeps open until it ends (``release``)
    rooms: dict[str, str] = field(default_factory=dict)  # API path -> room id of each notebook it opened
    agent: Any = None  # the calling agent (agents.directory.Agent), found once as the call came in
    journal: Any = None  # people.journal.Journal: what people undid of this agent's changes (``with_undone``)

    def confirm_shown(self, tool: str, cells: list[tuple[str, str]]) -> None:
        """Refuse (a ToolError) when a person approved this call on other cells than it acts on now;
        called in the same step as the tool reads them, so nothing can change in between."""
        if self.shown_cells is not None:
            confirm_cells(tool, self.shown_cells, cells)

    async def open_notebook(self, path: str) -> tuple[str, YNotebook]:
        """The live notebook; an old one (nbformat < 4.5) gets persistent cell ids only for a user
        who may write it: a read by a read-only user never rewrites the file."""
        upgrade = await self.may("contents", "write")
        user = getattr(self.agent, "id", None)  # its rooms close as a tab's once it has left
        path, doc = await self.services.documents.open(
            path, upgrade=upgrade, held=self.held, rooms=self.rooms, user=user
        )
        activity.watch(doc)  # from the agent's first look on, a person's typing is noted
        if self.on_open is not None:
            self.on_open(path, doc)
        return path, doc

    def release(self) -> None:
        """The call has ended: the rooms it opened may close once idle."""
        while self.held:
            self.services.documents.release(self.held.pop())

    @property
    def client(self) -> tuple[str, str]:
        """Whom the server remembers reads for: (user, MCP session id, "" in stateless calls)."""
        if self.handler is None:
            return ("", "")
        user = getattr(self.handler.current_user, "username", "")
        return (str(user), self.handler.request.headers.get("Mcp-Session-Id", ""))

    async def may(self, resource: str, action: str) -> bool:
        """Whether Jupyter's authorizer lets this call's user do ``action`` on ``resource``."""
        return await is_allowed(self.handler, action, resource)

    async def require(self, resource: str, action: str, what: str) -> None:
        """Refuse (a ToolError saying so) unless the authorizer allows it."""
        if not await self.may(resource, action):
            name = self.handler.current_user.username if self.handler is not None else "?"
            raise ToolError(
                f"Not permitted: user '{name}' may not {action} {resource} on this server, so {what} "
                "was refused. Ask the server's administrator for that permission."
            )


ToolFn = Callable[[ToolContext, A], Awaitable[ToolResult]]
Action = Literal["read", "write", "execute"]


@dataclass(frozen=True)
class ToolSpec(Generic[A]):
    name: str
    description: str
    args: type[A]
    output: dict[str, Any]
    run: ToolFn[A]
    resource: str
    action: Action
    destructive: bool
    also: tuple[tuple[str, Action], ...] = ()
    task: bool = False  # may run as an MCP task (``protocol/tasks.py``)

    @property
    def permissions(self) -> list[tuple[str, Action]]:
        """Every (resource, action) the authorizer must allow: running a cell also writes its outputs."""
        return [(self.resource, self.action), *self.also]

    def definition(self) -> types.Tool:
        read_only = all(action == "read" for _, action in self.permissions)
        return types.Tool(
            name=self.name,
            description=self.description,
            input_schema=copy.deepcopy(input_schema(self.args)),
            output_schema=self.output,
            annotations=types.ToolAnnotations(
                read_only_hint=read_only,
                destructive_hint=None if read_only else self.destructive,
            ),
            # 2025-11-25's flag for a task-augmented call; the 2026 wire drops it (the server decides).
            execution=types.ToolExecution(task_support="optional") if self.task else None,
        )


@functools.cache
def input_schema(args: type[BaseModel]) -> dict[str, Any]:
    """``args``' schema as agents see it, made once per process: pydantic builds a model's JSON schema anew
    at each call (about 1 ms a tool), and it is asked for by every server start's listing and by every
    ``tools/call`` on the 2026 transport (its ``Mcp-Param`` check). Callers get a copy (``definition``)."""
    return compact_schema(args.model_json_schema())


def tool(
    name: str,
    args: type[A],
    output: dict[str, Any],
    *,
    resource: str = "contents",
    action: Action = "read",
    destructive: bool = False,
    also: tuple[tuple[str, Action], ...] = (),
    task: bool = False,
) -> Callable[[ToolFn[A]], ToolSpec[A]]:
    """Declare a tool; ``resource`` and ``action`` are what Jupyter's authorizer is asked for."""

    def declare(fn: ToolFn[A]) -> ToolSpec[A]:
        description = " ".join(inspect.cleandoc(fn.__doc__ or "").split())
        return ToolSpec(name, description, args, output, fn, resource, action, destructive, also, task)

    return declare


def obj(**props: Any) -> dict[str, Any]:
    """A terse object schema: ``obj(path="string", cells=arr(...))``."""
    return {"type": "object", "properties": {k: _prop(v) for k, v in props.items()}}


def arr(items: Any) -> dict[str, Any]:
    """An array schema; items of objects stay unspecified: the tool's text says what is in them."""
    return {"type": "array"} if items == "object" else {"type": "array", "items": _prop(items)}


def _prop(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"type": value}
    if isinstance(value, list):  # several types: anyOf, since some clients take one type per schema
        return {"anyOf": [{"type": t} for t in value]}
    return value


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Pydantic's schema without what an agent does not need: titles, ``$defs`` and null branches.

    An optional argument (``X | None = None``) is shown as plain ``X``: omitting it is how an agent
    says "none", and the extra ``anyOf`` costs bytes in every session.
    """
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return walk(defs[node["$ref"].rsplit("/", 1)[-1]])
        out = {k: walk(v) for k, v in node.items() if k not in ("title", "$defs")}
        branches = out.get("anyOf")
        if isinstance(branches, list) and {"type": "null"} in branches:
            rest = [b for b in branches if b != {"type": "null"}]
            del out["anyOf"]
            if out.get("default", 0) is None:
                del out["default"]
            out = {**rest[0], **out} if len(rest) == 1 else {"anyOf": rest, **out}
        if out.get("additionalProperties") is True or (
            out.get("additionalProperties") is False and "properties" in out
        ):
            del out["additionalProperties"]
        return out

    return walk(schema)
