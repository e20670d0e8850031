"""The cells a tool read or ran, as the view renders them: sent in the tool result's ``_meta``.

The agent's text and ``structuredContent`` stay exactly as they are; this travels beside them, for
the person, under its own bound (outputs past it are marked, never silently dropped). Only the
MIME types the view renders are kept: nothing the view would ignore is sent.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from jupyter_server.utils import url_path_join

from ..cli.endpoint import hub_endpoint

META_KEY = "jupyter-mcp-ext/view"
"""The result ``_meta`` key the view reads its cells from."""

MAX_VIEW_BYTES = 2_000_000  # the whole payload; hosts pass it to the view, not to the model
MAX_TEXT_CHARS = 100_000  # one source or one output's text
RENDERED = (
    "text/html",
    "text/markdown",
    "text/latex",
    "image/svg+xml",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/json",
    "text/plain",
)


def lab_url(handler: Any, path: str) -> str:
    """JupyterLab's address of the notebook: under JupyterHub its public one, else as the agent
    reached this server."""
    if handler is None:
        return ""
    tree = "lab/tree/" + quote(path)
    if public := hub_endpoint(handler.base_url, path=tree):
        return public
    return f"{handler.request.protocol}://{handler.request.host}" + url_path_join(handler.base_url, tree)


def view_meta(view: dict[str, Any], handler: Any) -> dict[str, Any]:
    """The ``_meta`` entry for a tool result: the cells, bounded, and where JupyterLab shows them."""
    left = MAX_VIEW_BYTES
    cells = []
    omitted = 0
    for cell in view.get("cells", []):
        source = _clip(cell.get("source") or "")
        shaped = {k: cell[k] for k in ("id", "index", "type", "execution_count", "status") if k in cell}
        shaped["source"] = source
        left -= len(source.encode())
        outputs = []
        for output in cell.get("outputs") or []:
            kept = _output(output)
            size = len(json.dumps(kept))
            if size > left:
                omitted += 1
                kept = {"output_type": "omitted"}
            else:
                left -= size
            outputs.append(kept)
        if outputs or cell.get("type") == "code":
            shaped["outputs"] = outputs
        cells.append(shaped)
    path = view.get("path", "")
    shaped_view = {"path": path, "lab": lab_url(handler, path), "cells": cells, "omitted": omitted}
    if "execution_id" in view:  # a run: the view follows it with get_execution while it goes on
        shaped_view.update(execution_id=view["execution_id"], status=view["status"])
    return shaped_view


def _output(output: dict[str, Any]) -> dict[str, Any]:
    kind = output.get("output_type")
    if kind == "stream":
        return {"output_type": kind, "name": output.get("name"), "text": _clip(_text(output.get("text")))}
    if kind == "error":
        trace = [_clip(_text(line)) for line in (output.get("traceback") or [])[:200]]
        return {
            "output_type": kind,
            "ename": _clip(str(output.get("ename", ""))),
            "evalue": _clip(_text(output.get("evalue"))),
            "traceback": trace,
        }
    data = output.get("data") or {}
    kept = {  # text is clipped, an image kept whole or not at all (by the payload's bound)
        mime: _text(data[mime]) if mime.startswith("image/") else _clip(_text(data[mime]))
        for mime in RENDERED
        if mime in data and mime != "application/json"
    }
    if "application/json" in data:
        kept["application/json"] = _clip(json.dumps(data["application/json"]))
    return {"output_type": kind, "data": kept}


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return "" if value is None else str(value)


def _clip(text: str) -> str:
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[:MAX_TEXT_CHARS] + f"\n[… {len(text) - MAX_TEXT_CHARS:,} characters not shown here]"
