"""The server shows hosts its icon (SEP-973) in both protocol eras: a small, self-contained SVG."""

from __future__ import annotations

import base64
import json
import xml.etree.ElementTree as ET

import pytest

from ..support.mcp_client import MODES, connect

SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize("mode", MODES)
async def test_server_info_carries_a_small_self_contained_svg_icon(server_url, jp_auth_header, mode):
    async with connect(server_url, jp_auth_header, mode) as client:
        info = client.server_info
        tools = (await client.list_tools()).tools
    assert info is not None and info.icons
    (icon,) = info.icons
    assert (icon.mime_type, icon.sizes) == ("image/svg+xml", ["any"])
    prefix = "data:image/svg+xml;base64,"
    assert icon.src.startswith(prefix)
    svg = base64.b64decode(icon.src[len(prefix) :]).decode()
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg" and root.get("viewBox") == "0 0 24 24"
    # Nothing a host must not run or fetch: no script, no links, no styles, no foreign content.
    tags = {element.tag.removeprefix(SVG) for element in root.iter()}
    assert tags <= {"svg", "g", "rect", "circle"}, tags
    assert "href" not in svg and "url(" not in svg
    # Stamped into every 2026 result: it stays small.
    assert len(json.dumps(info.model_dump(by_alias=True, exclude_none=True, mode="json"))) < 1024
    assert all(tool.icons is None for tool in tools)  # tools/list has no room for them
