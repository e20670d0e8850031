"""The view seen by a host built on the TypeScript SDKs (the MCP SDK's client and ext-apps' host
helpers), with and without the Apps extension declared."""

from __future__ import annotations

from jupyter_mcp_ext.apps.payload import META_KEY
from jupyter_mcp_ext.apps.view import VIEW_TOOLS, VIEW_URI

from ..support.ts_host import apps_host
from .test_apps import notebook_with_outputs


async def test_a_typescript_apps_host_finds_the_view_and_the_cells_for_it(
    server_url, jp_auth_header, make_notebook
):
    path = notebook_with_outputs(make_notebook)
    token = jp_auth_header["Authorization"].split(" ", 1)[1]
    host = await apps_host(f"{server_url}mcp", token, path, "ui")
    plain = await apps_host(f"{server_url}mcp", token, path, "plain")

    assert set(host["views"]) == VIEW_TOOLS
    assert set(host["views"].values()) == {VIEW_URI}
    assert set(host["forModel"]) == set(plain["forModel"])  # no tool hidden from the model, none added
    page = host["page"]
    assert page["uri"] == VIEW_URI and page["mimeType"] == "text/html;profile=mcp-app"
    assert page["meta"]["ui"]["csp"] == {} and "Content-Security-Policy" in page["html"]
    cells = host["result"]["_meta"][META_KEY]["cells"]
    assert [c["type"] for c in cells] == ["markdown", "code"]
    assert host["result"]["content"] == plain["result"]["content"]  # what the model reads: the same
    assert plain["views"] == {} and plain["page"] is None and META_KEY not in plain["result"].get("_meta", {})
    print(
        f"tools/list as the TypeScript host got it: {plain['listingBytes']} bytes, {host['listingBytes']} with Apps"
    )
