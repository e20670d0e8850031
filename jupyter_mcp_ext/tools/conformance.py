"""Tools and a prompt the official MCP conformance suite calls by name; listed only with
``conformance_tools`` on.

``test_reconnection`` (scenario ``server-sse-polling``, SEP-1699) closes its own SSE stream mid-call,
as a proxy cutting an idle connection would, and answers after the client has reconnected with
``Last-Event-ID``: the answer must reach it through the event store.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types

from .toolkit import NoArgs, ToolContext, ToolResult, ToolSpec, obj, tool


@tool("test_reconnection", NoArgs, obj(resumed="boolean"))
async def test_reconnection(ctx: ToolContext, args: NoArgs) -> ToolResult:
    """Conformance test: closes this call's stream, then answers once the client has reconnected."""
    close = ctx.request.close_sse_stream
    if close is not None:
        await close()
        await asyncio.sleep(0.5)
    return ToolResult("Reconnection test completed", {"resumed": close is not None})


TOOLS: list[ToolSpec[Any]] = [test_reconnection]


# The prompt the suite's prompts-get-with-args and completion-complete scenarios ask for.
PROMPT = types.Prompt(
    name="test_prompt_with_arguments",
    description="Conformance test: a prompt with two arguments.",
    arguments=[
        types.PromptArgument(name="arg1", description="First test argument", required=True),
        types.PromptArgument(name="arg2", description="Second test argument", required=True),
    ],
)


def prompt_result(arguments: dict[str, str]) -> types.GetPromptResult:
    text = f"Prompt with arguments: arg1='{arguments.get('arg1', '')}', arg2='{arguments.get('arg2', '')}'"
    return types.GetPromptResult(
        messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))]
    )
