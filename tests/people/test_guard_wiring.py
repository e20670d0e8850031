"""The person's guard is wired into the call pipeline so that it cannot drop out: the MCP server is
built with it or not at all, and every tool call a running server takes goes through the same guard
the panel shows and controls."""

from __future__ import annotations

import dataclasses

import pytest

from jupyter_mcp_ext.protocol.server import build_server
from jupyter_mcp_ext.protocol.tasks import TaskBoard
from jupyter_mcp_ext.services import Services
from jupyter_mcp_ext.tools import ALL

from ..support.mcp_client import connect, fails, ok


def test_a_server_without_the_guard_does_not_start(jp_serverapp):
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    with pytest.raises(TypeError, match="needs the person's Guard"):
        build_server(app.services, None, ALL, TaskBoard())  # type: ignore[arg-type]
    assert "guard" not in {f.name for f in dataclasses.fields(Services)}  # no optional wiring left


async def test_every_call_goes_through_the_guard_the_panel_controls(
    server_url, jp_auth_header, make_notebook, panel
):
    path = make_notebook("guarded.ipynb", cells=["x = 1"])
    await panel.post("policy", {"mode": "off"})
    async with connect(server_url, jp_auth_header) as agent:
        for tool, args in [
            ("get_notebook", {"path": path}),
            ("insert_cells", {"path": path, "cells": [{"source": "y"}]}),
            ("execute_code", {"path": path, "code": "1"}),
            ("list_files", {}),
        ]:
            assert "paused by the user" in await fails(agent, tool, **args)
    await panel.post("policy", {"mode": "full"})
    async with connect(server_url, jp_auth_header) as agent:
        await ok(agent, "insert_cells", path=path, cells=[{"source": "y"}])
    tools = [e["tool"] for e in await panel.journal()]
    assert (
        tools[0] == "insert_cells" and "insert_cells" in tools[1:]
    )  # the refused one, and the one let through
