"""The live notebook view (MCP Apps): a host that negotiated the extension gets the ``ui://`` view on
the tools that read or run cells and the cells in each result's ``_meta``; any other client sees
exactly what it saw before, byte for byte."""

from __future__ import annotations

import base64
import json
import re

import pytest
from jupyter_server.auth import Authorizer
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from nbformat.v4 import new_output
from traitlets.config import Config

from jupyter_mcp_ext.apps.payload import MAX_VIEW_BYTES, META_KEY
from jupyter_mcp_ext.apps.view import VIEW_TOOLS, VIEW_URI

from ..support.apps_host import APPS, apps_client, listing_bytes
from ..support.mcp_client import MODES, STATELESS, connect, fails, text
from ..support.mcp_tasks import Tasks

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()
BUDGET = 16 * 1024


def notebook_with_outputs(make_notebook) -> str:
    return make_notebook(
        "shown.ipynb",
        cells=[
            {"cell_type": "markdown", "source": "# Results"},
            {
                "cell_type": "code",
                "source": "df",
                "execution_count": 3,
                "outputs": [
                    new_output(
                        "execute_result",
                        execution_count=3,
                        data={"text/html": "<table><tr><td>1</td></tr></table>", "text/plain": "   a\n0  1"},
                    ),
                    new_output("display_data", data={"image/png": PNG}),
                ],
            },
        ],
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_host_with_apps_gets_the_view_and_the_agent_reads_what_it_read_before(
    server_url, jp_auth_header, make_notebook, mode
):
    path = notebook_with_outputs(make_notebook)
    async with connect(server_url, jp_auth_header, mode) as plain:
        plain_tools = (await plain.list_tools()).tools
        plain_read = await plain.call_tool("read_cells", {"path": path})
        plain_resources = (await plain.list_resources()).resources
    async with apps_client(server_url, jp_auth_header, mode) as host:
        if mode == STATELESS:  # server/discover says so (the SDK sieves extensions off a 2025 handshake)
            assert EXTENSION_ID in (host.server_capabilities.extensions or {})
        tools = (await host.list_tools()).tools
        read = await host.call_tool("read_cells", {"path": path})
        resources = (await host.list_resources()).resources
        page = (await host.read_resource(VIEW_URI)).contents[0]

    # tools/list: the view on the tools that show cells, and only there; within budget either way.
    with_view = {t.name for t in tools if (t.meta or {}).get("ui", {}).get("resourceUri") == VIEW_URI}
    assert with_view == VIEW_TOOLS
    assert not [t for t in plain_tools if t.meta]
    plain_bytes, apps_bytes = listing_bytes(plain_tools), listing_bytes(tools)
    print(f"tools/list ({mode}): {plain_bytes} bytes without Apps, {apps_bytes} with")
    assert apps_bytes - plain_bytes < 300 and apps_bytes < BUDGET

    # The agent's side of the result is what it was; the view's cells ride in _meta.
    assert read.content == plain_read.content and read.structured_content == plain_read.structured_content
    assert not (plain_read.meta or {}).get(META_KEY)
    shown = read.meta[META_KEY]
    assert shown["path"] == path and shown["lab"].endswith("/lab/tree/shown.ipynb")
    heading, code = shown["cells"]
    assert heading["type"] == "markdown" and heading["source"] == "# Results"
    assert code["execution_count"] == 3
    assert code["outputs"][0]["data"]["text/html"].startswith("<table>")
    assert code["outputs"][1]["data"]["image/png"] == PNG

    # The view itself: listed for the host only, HTML under the app MIME type with a strict CSP.
    assert VIEW_URI in [str(r.uri) for r in resources]
    assert VIEW_URI not in [str(r.uri) for r in plain_resources]
    assert page.mime_type == APP_MIME_TYPE
    assert page.meta["ui"]["csp"] == {}  # no outside origin at all: the host's own default is strict
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page.text).group(1)
    assert "default-src 'none'" in csp and "connect-src 'none'" in csp and "img-src data:" in csp
    assert "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]  # one script, by its hash
    loads = (
        "fetch(",
        "XMLHttpRequest",
        "WebSocket",
        "EventSource",
        "@import",
        "url(",
        "<link",
        "<script src",
    )
    assert not [way for way in loads if way in page.text]  # nothing fetched: all of it is in the page


async def test_a_run_carries_its_cells_and_outputs_for_the_view(server_url, jp_auth_header, make_notebook):
    path = make_notebook("run.ipynb", cells=[])
    async with apps_client(server_url, jp_auth_header) as host:
        result = await host.call_tool("insert_and_execute", {"path": path, "source": "print('hi')\n1/0"})
    (cell,) = result.meta[META_KEY]["cells"]
    assert cell["source"] == "print('hi')\n1/0" and cell["status"] == "error"
    stream, error = cell["outputs"]
    assert stream["text"] == "hi\n" and error["ename"] == "ZeroDivisionError"
    assert any("\x1b[" in line for line in error["traceback"])  # the view colours it as JupyterLab does
    assert "\x1b[" not in text(result)  # the agent's copy stays plain


async def test_a_notebook_the_caller_may_not_read_gives_no_view(
    server_url, jp_auth_header, make_notebook, jp_root_dir
):
    make_notebook("aws_credentials.ipynb", cells=["key = 'AKIA-SECRET'"])
    async with apps_client(server_url, jp_auth_header) as host:
        result = await host.call_tool("read_cells", {"path": "aws_credentials.ipynb"})
        outside = await host.call_tool("read_cells", {"path": "../elsewhere.ipynb"})
    for refused in (result, outside):
        assert refused.is_error and not (refused.meta or {}).get(META_KEY)
        assert "AKIA" not in str(refused.model_dump()) and str(jp_root_dir) not in text(refused)
    assert "denied_files" in text(result)


class NoReading(Authorizer):
    def is_authorized(self, handler, user, action, resource) -> bool:
        return action != "read"


class TestNoReadPermission:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Config) -> Config:
        jp_server_config.ServerApp.authorizer_class = NoReading
        return jp_server_config

    async def test_a_user_who_may_not_read_gets_neither_cells_nor_the_page(
        self, server_url, jp_auth_header, make_notebook
    ):
        path = notebook_with_outputs(make_notebook)
        async with apps_client(server_url, jp_auth_header) as host:
            message = await fails(host, "read_cells", path=path)
            result = await host.call_tool("read_cells", {"path": path})
            with pytest.raises(Exception, match="may not read"):
                await host.read_resource(VIEW_URI)
        assert "may not read" in message and not (result.meta or {}).get(META_KEY)


async def test_outputs_past_the_views_bound_are_marked_not_sent(server_url, jp_auth_header, make_notebook):
    huge = "A" * (MAX_VIEW_BYTES + 1000)  # a plot no view needs in full: the notebook has it
    path = make_notebook(
        "huge.ipynb",
        cells=[
            {
                "cell_type": "code",
                "source": "plot()",
                "outputs": [
                    new_output("display_data", data={"image/png": huge}),
                    new_output("stream", name="stdout", text="after the plot\n"),
                ],
            }
        ],
    )
    async with apps_client(server_url, jp_auth_header) as host:
        result = await host.call_tool("read_cells", {"path": path})
    shown = result.meta[META_KEY]
    assert shown["omitted"] == 1
    assert shown["cells"][0]["outputs"] == [
        {"output_type": "omitted"},
        {"output_type": "stream", "name": "stdout", "text": "after the plot\n"},
    ]
    assert len(json.dumps(shown)) < MAX_VIEW_BYTES


async def test_a_run_as_a_task_ends_with_the_cells_for_the_view(server_url, jp_auth_header, make_notebook):
    path = make_notebook("task.ipynb", cells=["print('from a task')"])
    async with connect(server_url, jp_auth_header, STATELESS, extensions=[APPS, Tasks()]) as host:
        cell = (await host.call_tool("get_notebook", {"path": path})).structured_content["cells"][0]["id"]
        result = await host.call_tool("execute_cells", {"path": path, "cell_ids": [cell]})
    shown = result.meta[META_KEY]
    assert shown["status"] == "ok" and shown["cells"][0]["outputs"][0]["text"] == "from a task\n"
