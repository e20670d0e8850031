"""The MCP server: lists the tools, and runs a call through validation, authorization and the tool.

Failures the agent can act on come back as ``isError`` results with the reason; only a malformed
request (unknown tool) is a protocol error. Nothing here knows about HTTP: the transport delivers
calls, and this module hands them to tools.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from .._version import __version__
from ..apps import view
from ..apps.payload import META_KEY, view_meta
from ..documents.paths import without_root
from ..errors import ToolError
from ..people.guard import Guard
from ..services import Services
from ..tools.authz import handler_of, listing_for
from ..tools.bounds import bound_result
from ..tools.completions import Completions
from ..tools.prompts import NotebookPrompts
from ..tools.resources import NotebookResources, require
from ..tools.toolkit import TaskHooks, ToolContext, ToolSpec
from .icons import SERVER_ICONS
from .tasks import EXTENSION, LEGACY, CreateTaskResult, TaskBoard, TaskParams, UpdateTaskParams

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
Tools for the notebooks of a live Jupyter server, shared with people who may have them open.
- Paths are relative to the server root; list_notebooks finds them.
- Address cells by id, never by index alone: people edit too, and indices shift. get_notebook gives ids.
- Read before you edit (get_notebook, then read_cells), and prefer update_cell with old_string/new_string
  for small changes.
- Edits appear live in open JupyterLab tabs and are saved by Jupyter; do not edit .ipynb files as text."""


def build_server(services: Services, guard: Guard, tools: list[ToolSpec], tasks: TaskBoard) -> Server[Any]:
    """The server; every tool call runs through ``guard`` (policy, approvals, journal, stop)."""
    if not isinstance(guard, Guard):  # a server without the person's guard must not start
        raise TypeError(f"build_server needs the person's Guard, not {type(guard).__name__}")
    by_name = {t.name: t for t in tools}
    resources = NotebookResources(services)
    prompts = NotebookPrompts(services)
    completions = Completions(services, prompts)
    listing = types.ListToolsResult(tools=[t.definition() for t in tools])
    with_views = types.ListToolsResult(tools=[view.with_view(t) for t in listing.tools])

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        hide = bool(services.settings.get("hide_forbidden_tools"))
        mine = await listing_for(handler_of(ctx), tools, hide=hide)
        if not view.wants_view(ctx):
            return listing if mine is None else types.ListToolsResult(tools=mine)
        return with_views if mine is None else types.ListToolsResult(tools=[view.with_view(t) for t in mine])

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        found = await resources.list_resources(ctx, params)
        if view.wants_view(ctx):
            found.resources.append(view.listing())
        return found

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if params.uri != view.VIEW_URI:
            return await resources.read(ctx, params)
        await require(ctx, "read", params.uri)
        return view.read()

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | CreateTaskResult | types.CreateTaskResult:
        spec = by_name.get(params.name)
        if spec is None:
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"Unknown tool '{params.name}'; tools/list names them."
            )
        handler = handler_of(ctx)
        if (too_big := _oversized(params.arguments)) is not None:
            return _error(too_big)
        agent = services.agents.agent_for(ctx, handler) if handler is not None else None
        try:
            args = spec.args.model_validate(params.arguments or {})
        except ValidationError as err:
            return _error(f"Invalid arguments for {spec.name}: {_explain(err)}")
        if tasks.wanted(ctx, spec.task, params):
            return tasks.start(ctx, lambda task: run(ctx, handler, agent, spec, args, task))
        return await run(ctx, handler, agent, spec, args, None)

    async def run(
        ctx: ServerRequestContext[Any],
        handler: Any,
        agent: Any,
        spec: ToolSpec,
        args: Any,
        task: TaskHooks | None,
    ) -> types.CallToolResult:
        """Authorize and run the call: in its request, or for a task after the request has ended."""
        call = ToolContext(
            services, handler, ctx, task=task, view=view.wants_view(ctx), agent=agent, journal=guard.journal
        )
        try:
            if handler is None:
                raise ToolError("This call carries no Jupyter identity and was refused.")
            for resource, action in spec.permissions:
                await call.require(resource, action, spec.name)
            async with services.agents.at_work(agent, spec.action, args) as done:
                result = await guard.run(spec, call, args)
                done(result.data)
        except ToolError as err:  # a contents manager's words may name the server's own folder
            return _error(without_root(str(err), services.contents))
        except (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException:  # pycrdt panics are BaseExceptions: they must not end the session
            log.exception("Tool %s failed", spec.name)
            return _error(
                f"{spec.name} failed on the server (see the Jupyter server log). "
                "Read the notebook again before retrying."
            )
        finally:
            call.release()
        shown = result.view
        result = bound_result(result, services.limits.max_result_bytes)
        content: list[types.ContentBlock] = [types.TextContent(type="text", text=result.text)]
        content += [
            types.ImageContent(type="image", data=data, mime_type=mime) for mime, data in result.images
        ]
        # The view's cells ride in _meta, which hosts give the view and not the model (MCP Apps).
        meta = {META_KEY: view_meta(shown, handler)} if shown is not None else None
        return types.CallToolResult(content=content, structured_content=result.data, meta=meta)

    async def set_logging_level(
        ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        return types.EmptyResult()

    with warnings.catch_warnings():
        # Logging is deprecated in the 2026 protocol, but handshake-era clients still send setLevel.
        warnings.simplefilter("ignore")
        server = _Server(
            "jupyter-mcp-ext",
            version=__version__,
            title="Jupyter",
            instructions=INSTRUCTIONS,
            icons=SERVER_ICONS,
            get_tool_input_schema=lambda name: (
                by_name[name].definition().input_schema if name in by_name else None
            ),
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_set_logging_level=set_logging_level,
            on_list_resources=list_resources,
            on_list_resource_templates=resources.list_templates,
            on_read_resource=read_resource,
            on_subscribe_resource=resources.subscribe,
            on_unsubscribe_resource=resources.unsubscribe,
            on_subscriptions_listen=resources.listen,
            on_list_prompts=prompts.list_prompts,
            on_get_prompt=prompts.get_prompt,
            on_completion=completions.complete,
        )
    server.extensions[EXTENSION] = {}
    server.extensions[view.EXTENSION_ID] = {}  # MCP Apps: the view, for clients that declare it too
    server.add_request_handler("tasks/get", TaskParams, tasks.get)
    server.add_request_handler("tasks/update", UpdateTaskParams, tasks.update)
    server.add_request_handler("tasks/cancel", TaskParams, tasks.cancel)
    server.add_request_handler("tasks/result", TaskParams, tasks.result)

    async def legacy_task_call(ctx: Any, call_next: CallNext) -> HandlerResult:
        """A 2025-11-25 ``tools/call`` asking for a task is answered here: the SDK's result sieve knows
        only ``CallToolResult`` for ``tools/call`` at that version, and would refuse the task handle."""
        raw = ctx.params or {}
        if ctx.method != "tools/call" or ctx.protocol_version != LEGACY or not raw.get("task"):
            return await call_next(ctx)
        try:
            params = types.CallToolRequestParams.model_validate(raw, by_name=False)
        except ValidationError:
            return await call_next(ctx)  # the SDK answers malformed params as it always does
        result = await call_tool(ctx, params)
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    server.middleware.append(legacy_task_call)
    return server


class _Server(Server[Any]):
    """The SDK's server, also advertising 2025-11-25's ``tasks`` capability at that handshake."""

    def get_capabilities(self, *args: Any, protocol_version: str | None = None, **kw: Any) -> Any:
        capabilities = super().get_capabilities(*args, protocol_version=protocol_version, **kw)
        if protocol_version in MODERN_PROTOCOL_VERSIONS:
            return capabilities
        tools = types.ServerTasksRequestsCapability(
            tools=types.TasksToolsCapability(call=types.TasksCallCapability())
        )
        return capabilities.model_copy(
            update={
                "tasks": types.ServerTasksCapability(cancel=types.TasksCancelCapability(), requests=tools)
            }
        )


MAX_ARGUMENT_VALUES = 10_000


def _oversized(arguments: Any) -> str | None:
    """Arguments with more values than any real call needs are refused before validation: pydantic
    builds an error per bad value on the event loop (20,000 bad list items froze it 250 ms)."""
    pending, seen = [arguments], 0
    while pending:
        value = pending.pop()
        if isinstance(value, dict | list):
            seen += len(value)
            if seen > MAX_ARGUMENT_VALUES:
                return (
                    f"The arguments hold more than {MAX_ARGUMENT_VALUES} values; split the call "
                    "(fewer cells or ids at a time)."
                )
            pending.extend(value.values() if isinstance(value, dict) else value)
    return None


def _explain(err: ValidationError) -> str:
    parts = []
    for problem in err.errors()[:5]:
        where = ".".join(str(p) for p in problem["loc"]) or "arguments"
        message = "unknown argument" if problem["type"] == "extra_forbidden" else problem["msg"]
        parts.append(f"{where}: {message}")
    return "; ".join(parts) + ". The tool's input schema (tools/list) lists the arguments."


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)
