"""The ``ui://`` view: its HTML, the tools that carry it, and who gets either.

The page is assembled once from ``view.html``, ``view.css`` and the scripts (``view.js`` talks to the
host and draws cells; ``text.js``, ``markdown.js`` and ``sanitize.js`` it uses), no build step. Its
content security policy allows that one script by its hash, inline style, and ``data:`` images, and
nothing else: no network, no frames, no plugins, no forms, no other script. Even markup that got past
the view's sanitizer could not run (an ``onerror`` attribute is inline script the hash does not
allow) nor load anything. The resource declares no CSP domains either, so the host's own policy is
its restrictive default.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from importlib import resources
from typing import Any

import mcp_types as types
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID, ResourceCsp, client_supports_apps

__all__ = ["EXTENSION_ID", "VIEW_TOOLS", "VIEW_URI", "html", "listing", "read", "wants_view", "with_view"]

VIEW_URI = "ui://jupyter/cells"
VIEW_TOOLS = frozenset({"read_cells", "execute_cells", "insert_and_execute", "execute_code", "get_execution"})
"""The tools whose results the view renders: cells read, or cells run (and their outputs)."""

SCRIPTS = ("text.js", "markdown.js", "sanitize.js", "view.js")  # one script in this order; view.js starts it
TOOL_META = {"ui": {"resourceUri": VIEW_URI}}
RESOURCE_META = {
    "ui": {"csp": ResourceCsp().model_dump(by_alias=True, exclude_none=True), "prefersBorder": True}
}
CSP = (
    "default-src 'none'; script-src '{script}'; style-src 'unsafe-inline'; img-src data:; "
    "font-src 'none'; connect-src 'none'; media-src 'none'; frame-src 'none'; object-src 'none'; "
    "base-uri 'none'; form-action 'none'"
)


def wants_view(ctx: Any) -> bool:
    """Whether this request's client negotiated MCP Apps (HTML views); never raises."""
    try:
        return client_supports_apps(ctx)
    except Exception:  # no session or capabilities on this request: no view
        return False


@functools.cache
def html() -> str:
    """The view's page, its script allowed by hash in its own content security policy."""
    folder = resources.files(__package__)
    page = (folder / "view.html").read_text(encoding="utf-8")
    style = (folder / "view.css").read_text(encoding="utf-8")
    parts = [(folder / name).read_text(encoding="utf-8") for name in SCRIPTS]
    script = '"use strict";\n(function () {\n' + "\n".join(parts) + "})();\n"  # one scope, one hash
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return (
        page.replace("{{csp}}", CSP.format(script=f"sha256-{digest}"))
        .replace("{{style}}", style)
        .replace("{{script}}", script)
    )


def listing() -> types.Resource:
    return types.Resource(
        uri=VIEW_URI,
        name="notebook-view",
        title="Notebook cells",
        mime_type=APP_MIME_TYPE,
        description="Renders the cells a tool read or ran, as JupyterLab shows them.",
        meta=RESOURCE_META,
    )


def read() -> types.ReadResourceResult:
    content = types.TextResourceContents(
        uri=VIEW_URI, mime_type=APP_MIME_TYPE, text=html(), meta=RESOURCE_META
    )
    return types.ReadResourceResult(contents=[content])


def with_view(tool: types.Tool) -> types.Tool:
    """The tool's definition pointing at the view, for a client with MCP Apps."""
    if tool.name not in VIEW_TOOLS:
        return tool
    return tool.model_copy(update={"meta": {**(tool.meta or {}), **TOOL_META}})
