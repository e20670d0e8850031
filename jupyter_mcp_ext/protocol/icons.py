"""The server's icon (SEP-973), shown by hosts beside the server's name: the panel's robot on
Jupyter orange, with its own background so it reads on light and dark themes alike.

It travels as a ``data:`` URI in ``serverInfo``: a host shows it without fetching anything (no
origin to trust, nothing to authenticate), and ``serverInfo`` is not part of ``tools/list``. On the
2026 wire ``serverInfo`` is stamped into every result's ``_meta``, so the icon is kept small.
Tools carry no icons: even a URL per tool would not fit ``tools/list`` in its 16 KB budget.
"""

from __future__ import annotations

import base64

import mcp_types as types

SERVER_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="48" height="48" viewBox="0 0 24 24">'
    '<rect width="24" height="24" rx="5" fill="#F37726"/><g fill="#fff">'
    '<rect x="5" y="8" width="14" height="11" rx="2.5"/><rect x="11.2" y="4.5" width="1.6" height="4"/>'
    '<circle cx="12" cy="4" r="1.6"/><rect x="2.5" y="11.5" width="2" height="4" rx="1"/>'
    '<rect x="19.5" y="11.5" width="2" height="4" rx="1"/></g><g fill="#F37726">'
    '<circle cx="9.5" cy="12.5" r="1.6"/><circle cx="14.5" cy="12.5" r="1.6"/>'
    '<rect x="9" y="15.6" width="6" height="1.4" rx=".7"/></g></svg>'
)
SVG_MIME = "image/svg+xml"


def data_uri(svg: str) -> str:
    return f"data:{SVG_MIME};base64,{base64.b64encode(svg.encode()).decode()}"


SERVER_ICONS = [types.Icon(src=data_uri(SERVER_SVG), mime_type=SVG_MIME, sizes=["any"])]
