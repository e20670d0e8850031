"""Tools on kernels: what runs and what is installed, interrupt, restart, switch, and look inside."""

from __future__ import annotations

import ast
import asyncio
import json
from typing import Any

from jupyter_core.utils import ensure_async
from pycrdt import Map

from ..documents import cells as nb
from ..errors import ToolError
from .toolkit import Args, NoArgs, ToolContext, ToolResult, ToolSpec, arr, obj, tool

# Evaluated in the kernel as a user expression: no cell, no execution count, no new variables.
_SUMMARY = r"""
import json as _j, sys as _s
def _summary(v):
    t = type(v)
    d = {"type": t.__module__ + "." + t.__qualname__ if t.__module__ != "builtins" else t.__qualname__}
    shape = getattr(v, "shape", None)
    if isinstance(shape, tuple):
        d["shape"] = list(shape)
    cols = getattr(v, "columns", None)
    if cols is not None and hasattr(v, "dtypes"):
        d["columns"] = [str(c) for c in list(cols)[:20]]
    elif isinstance(v, (list, tuple, dict, set, frozenset, str, bytes)):
        d["len"] = len(v)
    try:
        r = repr(v)
    except Exception as e:
        r = "<repr failed: %s>" % e
    d["summary"] = r if len(r) <= 120 else r[:119] + "…"
    return d
_ns = get_ipython().user_ns
_hidden = getattr(get_ipython(), "user_ns_hidden", {})
_out = {}
for _k, _v in list(_ns.items()):
    if (WANT and _k not in WANT) or (not WANT and (_k.startswith("_") or _k in _hidden)):
        continue
    if not WANT and (type(_v).__name__ in ("module", "function", "builtin_function_or_method", "type")):
        continue
    _out[_k] = _summary(_v)
RESULT = _j.dumps(_out)
"""


class NotebookPath(Args):
    path: str


async def _kernel_of(ctx: ToolContext, path: str) -> str:
    api = await ctx.services.documents.resolve(path)
    session = await ctx.services.kernels.session_for(api)
    kernel = (session or {}).get("kernel")
    if not kernel or kernel["id"] not in ctx.services.kernels.kernels:
        raise ToolError(f"No kernel is running for '{path}'. Running a cell (execute_cells) starts one.")
    return kernel["id"]


@tool("interrupt_kernel", NotebookPath, obj(interrupted="boolean"), resource="kernels", action="write")
async def interrupt_kernel(ctx: ToolContext, args: NotebookPath) -> ToolResult:
    """Interrupt what the notebook's kernel is running (KeyboardInterrupt)."""
    services = ctx.services
    kernel_id = await _kernel_of(ctx, args.path)
    model = await ensure_async(services.kernels.kernels.kernel_model(kernel_id))  # async with a gateway
    state = model.get("execution_state")
    if services.execution.running_on(kernel_id) is None and state != "busy":
        raise ToolError("Nothing is running in this notebook's kernel, so there is nothing to interrupt.")
    await ensure_async(services.kernels.kernels.interrupt_kernel(kernel_id))
    return ToolResult("Interrupted the kernel.", {"interrupted": True})


@tool(
    "restart_kernel",
    NotebookPath,
    obj(kernel_id="string"),
    resource="kernels",
    action="write",
    destructive=True,
)
async def restart_kernel(ctx: ToolContext, args: NotebookPath) -> ToolResult:
    """Restart the notebook's kernel: all variables are lost; a running cell ends with an error."""
    kernel_id = await _kernel_of(ctx, args.path)
    # A restart interrupts first: end the running cell as restarted before its KeyboardInterrupt
    # arrives (through a gateway it comes well before the restart's own event).
    ctx.services.kernels._announce(kernel_id, "restart")
    try:
        await ensure_async(ctx.services.kernels.kernels.restart_kernel(kernel_id))
    except Exception as err:
        raise ToolError(f"The kernel failed to restart: {err}") from err
    await ctx.services.kernels.forget_link(kernel_id)
    return ToolResult("Restarted the kernel; variables are gone.", {"kernel_id": kernel_id})


@tool("list_kernels", NoArgs, obj(kernels=arr("object")), resource="kernels")
async def list_kernels(ctx: ToolContext, args: NoArgs) -> ToolResult:
    """Running kernels, with their state and the notebooks bound to them."""
    kernels = ctx.services.kernels
    sessions = await ensure_async(kernels.sessions.list_sessions())
    found = []
    for model in await ensure_async(kernels.kernels.list_kernels()):
        paths = [s["path"] for s in sessions if (s.get("kernel") or {}).get("id") == model["id"]]
        found.append(
            {k: model.get(k) for k in ("id", "name", "execution_state", "connections")} | {"notebooks": paths}
        )
    lines = [
        f"{k['id'][:8]} {k['name']} ({k['execution_state']}): {', '.join(k['notebooks']) or '-'}"
        for k in found
    ]
    return ToolResult("\n".join([f"{len(found)} kernels", *lines]), {"kernels": found})


@tool("list_kernelspecs", NoArgs, obj(default="string", kernelspecs=arr("object")))
async def list_kernelspecs(ctx: ToolContext, args: NoArgs) -> ToolResult:
    """Installed kernels (kernel_name values) and the default."""
    kernels = ctx.services.kernels
    specs = await ensure_async(kernels.kernelspecs.get_all_specs())
    found = [
        {"name": name, "display_name": s["spec"].get("display_name"), "language": s["spec"].get("language")}
        for name, s in sorted(specs.items())
    ]
    default = kernels.kernels.default_kernel_name
    lines = [f"{k['name']}: {k['display_name']} ({k['language']})" for k in found]
    return ToolResult("\n".join([f"default: {default}", *lines]), {"default": default, "kernelspecs": found})


class SetKernel(Args):
    path: str
    kernel_name: str


@tool(
    "set_kernel",
    SetKernel,
    obj(kernel_id="string", kernel_name="string"),
    resource="kernels",
    action="execute",
    also=(("kernels", "write"), ("sessions", "write"), ("contents", "write")),
)
async def set_kernel(ctx: ToolContext, args: SetKernel) -> ToolResult:
    """Switch the notebook to another kernel (its session and metadata); variables start empty."""
    kernels = ctx.services.kernels
    await kernels.check_kernelspec(args.kernel_name)
    path = await ctx.services.documents.resolve(args.path)
    kernel_id = await kernels.switch(path, args.kernel_name)
    spec = (await ensure_async(kernels.kernelspecs.get_all_specs()))[args.kernel_name]["spec"]
    kernelspec = {
        "name": args.kernel_name,
        "display_name": spec.get("display_name", args.kernel_name),
        "language": spec.get("language", ""),
    }
    _, doc = await ctx.open_notebook(path)  # after the awaits above: a fresh handle
    meta = doc.ydoc.get("meta", type=Map)
    with doc.ydoc.transaction():
        metadata = meta.get("metadata")
        if isinstance(metadata, Map):  # JupyterLab reads notebook metadata as a shared map: keep it one
            metadata["kernelspec"] = kernelspec
        else:
            meta["metadata"] = Map({**(metadata or {}), "kernelspec": kernelspec})
        nb.mark_dirty(doc)
    return ToolResult(
        f"{path} now uses {args.kernel_name}.", {"kernel_id": kernel_id, "kernel_name": args.kernel_name}
    )


class InspectVariables(Args):
    path: str
    names: list[str] | None = None


@tool("inspect_variables", InspectVariables, obj(variables="object"), resource="kernels", action="execute")
async def inspect_variables(ctx: ToolContext, args: InspectVariables) -> ToolResult:
    """The kernel's variables: type, shape/columns/length and a short repr (Python kernels)."""
    kernel_id = await _kernel_of(ctx, args.path)
    _, doc = await ctx.open_notebook(args.path)
    if (nb.kernel_info(doc)[1] or "python") != "python":
        raise ToolError(
            "inspect_variables works with Python kernels; use execute_code to look inside others."
        )
    link = await ctx.services.kernels.link(kernel_id)
    code = _SUMMARY.replace("WANT", repr(set(args.names or [])))
    expression = f"(lambda g: (exec({code!r}, g), g['RESULT'])[1])({{'get_ipython': get_ipython}})"
    reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    msg_id = link.client.execute("", silent=True, store_history=False, user_expressions={"v": expression})
    link.routes[msg_id] = lambda channel, msg: (
        reply.set_result(msg["content"]) if channel == "shell" and not reply.done() else None
    )
    try:
        content = await asyncio.wait_for(reply, timeout=10)
    except TimeoutError as err:
        raise ToolError("The kernel is busy running something; try again when it is idle.") from err
    finally:
        link.routes.pop(msg_id, None)
    value = (content.get("user_expressions") or {}).get("v", {})
    if value.get("status") != "ok":
        raise ToolError(
            f"The kernel could not list its variables: {value.get('ename')}: {value.get('evalue')}"
        )
    variables = json.loads(ast.literal_eval(value["data"]["text/plain"]))
    missing = sorted(set(args.names or []) - set(variables))
    lines = [
        f"{name}: {v['type']}"
        + (f" shape={v['shape']}" if "shape" in v else "")
        + (f" columns={v['columns']}" if "columns" in v else "")
        + (f" len={v['len']}" if "len" in v else "")
        + f" = {v['summary']}"
        for name, v in sorted(variables.items())
    ]
    if missing:
        lines.append(f"not defined: {', '.join(missing)}")
    return ToolResult("\n".join(lines) or "No user variables.", {"variables": variables})


TOOLS: list[ToolSpec[Any]] = [
    interrupt_kernel,
    restart_kernel,
    list_kernels,
    list_kernelspecs,
    set_kernel,
    inspect_variables,
]
