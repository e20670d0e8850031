"""Tools the official MCP conformance suite calls by name; listed only with ``conformance_tools`` on.

``test_reconnection`` (scenario ``server-sse-polling``, SEP-1699) closes its own SSE stream mid-call,
as a proxy cutting an idle connection would, and answers after the client has reconnected with
``Last-Event-ID``: the answer must reach it through the event store.
"""

from __future__ import annotations

import asyncio

from .toolkit import NoArgs, ToolContext, ToolResult, obj, tool


@tool("test_reconnection", NoArgs, obj(resumed="boolean"))
async def test_reconnection(ctx: ToolContext, args: NoArgs) -> ToolResult:
    """Conformance test: closes this call's stream, then answers once the client has reconnected."""
    close = ctx.request.close_sse_stream
    if close is not None:
        await close()
        await asyncio.sleep(0.5)
    return ToolResult("Reconnection test completed", {"resumed": close is not None})


TOOLS = [test_reconnection]
