"""Every tool's schemas are portable (no ``type`` arrays), and all of tools/list stays within budget."""

from __future__ import annotations

import json
from typing import Any

from ..support.mcp_client import connect

BUDGET = 16 * 1024


def type_arrays(node: Any, where: str = "") -> list[str]:
    """The places in a schema where ``type`` is a list (``["string", "null"]``)."""
    found: list[str] = []
    if isinstance(node, dict):
        if isinstance(node.get("type"), list):
            found.append(where or "/")
        for key, value in node.items():
            found += type_arrays(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += type_arrays(value, f"{where}/{i}")
    return found


async def test_no_tool_schema_uses_type_arrays_and_the_listing_fits_the_budget(server_url, jp_auth_header):
    async with connect(server_url, jp_auth_header) as client:
        listed = await client.list_tools()
    assert listed.tools
    problems = []
    for tool in listed.tools:
        assert tool.output_schema is not None, tool.name
        problems += [f"{tool.name} input {p}" for p in type_arrays(tool.input_schema)]
        problems += [f"{tool.name} output {p}" for p in type_arrays(tool.output_schema)]
    assert problems == []
    payload = json.dumps(
        [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools],
        separators=(",", ":"),
    )
    size = len(payload.encode())
    print(f"tools/list: {len(listed.tools)} tools, {size} bytes")
    assert size < BUDGET, f"tools/list is {size} bytes, over the {BUDGET}-byte budget"
