"""Asking Jupyter's authorizer from a tool: who is calling, and may they do this.

The transport hands every MCP message the Tornado handler of its HTTP request (under
``JUPYTER_HANDLER_KEY`` in the ASGI scope); tools, resources and prompts ask the server's
authorizer through it, exactly as Jupyter's own REST handlers do.
"""

from __future__ import annotations

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
