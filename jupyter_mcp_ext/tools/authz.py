"""Asking Jupyter's authorizer from a tool: who is calling, and may they do this.

The transport hands every MCP message the Tornado handler of its HTTP request (under
``JUPYTER_HANDLER_KEY`` in the ASGI scope); tools, resources and prompts ask the server's
authorizer through it, exactly as Jupyter's own REST handlers do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jupyter_core.utils import ensure_async

JUPYTER_HANDLER_KEY = "jupyter_mcp_ext.handler"
"""ASGI scope key under which tools find the Tornado handler (for the authorizer) of their request."""


def handler_of(request_context: Any) -> Any:
    """The Tornado handler of the HTTP request an MCP message came in (None if there is none)."""
    scope = getattr(request_context.request, "scope", None) or {}
    return scope.get(JUPYTER_HANDLER_KEY)


async def is_allowed(handler: Any, action: str, resource: str) -> bool:
    """Ask Jupyter's authorizer, as Jupyter's own REST handlers do."""
    if handler is None:
        return False
    return bool(
        await ensure_async(handler.authorizer.is_authorized(handler, handler.current_user, action, resource))
    )


async def listing_for(handler: Any, tools: Sequence[Any], *, hide: bool) -> list[Any] | None:
    """``tools/list`` as this caller may use it: None when every tool is allowed (the usual case),
    else each definition, a tool the caller may not use marked and stripped to a line (or left out,
    ``hide``).

    ``tools`` are ``ToolSpec``s; each distinct (resource, action) is asked once per listing.
    """
    if handler is None:
        return None
    pairs = {pair for spec in tools for pair in spec.permissions}
    denied = {pair for pair in pairs if not await is_allowed(handler, pair[1], pair[0])}
    if not denied:
        return None
    listing = []
    for spec in tools:
        missing = [pair for pair in spec.permissions if pair in denied]
        if missing and hide:
            continue
        definition = spec.definition()
        if missing:
            needs = ", ".join(f"{action} {resource}" for resource, action in missing)
            first = definition.description.split(". ")[0].rstrip(".")
            definition.description = f"NOT PERMITTED for you (needs {needs}). {first}."
            # Arguments and results of a tool the caller cannot call are bytes it pays for nothing.
            definition.input_schema, definition.output_schema = {"type": "object"}, None
        listing.append(definition)
    return listing
