"""The notebook view as a person sees it in an agent host: the ``ui://`` page the server serves,
rendered in headless Chromium inside a sandboxed iframe, fed the tool results a real MCP client got
from a real server (``tests/support/view_host.py`` plays the host)."""

from __future__ import annotations

import asyncio
import base64

import pytest
from nbformat.v4 import new_output
from playwright.async_api import expect

from jupyter_mcp_ext.apps.view import VIEW_URI

from ..support import shots
from ..support.apps_host import apps_client
from ..support.browser import CHROMIUM
from ..support.mcp_client import ok
from ..support.view_host import png, view_host

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM}")

CODE = "import math\n\ndef area(r):\n    # a circle\n    return math.pi * r ** 2\n\nprint(area(2))"
TRACEBACK = [
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mZeroDivisionError\x1b[0m                         Traceback (most recent call last)",
    "Cell \x1b[0;32mIn[2], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m \x1b[38;5;241m1\x1b[39m\x1b[38;5;241m/\x1b[39m\x1b[38;5;241m0\x1b[39m",
    "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero",
]
TABLE = (
    "<div><table border='1' class='dataframe'><thead><tr><th></th><th>planet</th><th>moons</th></tr></thead>"
    "<tbody><tr><th>0</th><td>Mars</td><td>2</td></tr><tr><th>1</th><td>Jupiter</td><td>95</td></tr></tbody>"
    "</table></div>"
)


def shown_notebook(make_notebook) -> str:
    image = base64.b64encode(png(120, 40, (243, 119, 38))).decode()
    return make_notebook(
        "shown.ipynb",
        cells=[
            {"cell_type": "markdown", "source": "# Orbits\n\nSome **bold** words and `code`."},
            {
                "cell_type": "code",
                "source": CODE,
                "execution_count": 1,
                "outputs": [
                    new_output("stream", name="stdout", text="12.566370614359172\n"),
                    new_output(
                        "execute_result", execution_count=1, data={"text/html": TABLE, "text/plain": "df"}
                    ),
                    new_output("display_data", data={"image/png": image, "text/plain": "<Figure>"}),
                ],
            },
            {
                "cell_type": "code",
                "source": "1/0",
                "execution_count": 2,
                "outputs": [
                    new_output(
                        "error", ename="ZeroDivisionError", evalue="division by zero", traceback=TRACEBACK
                    )
                ],
            },
        ],
    )


async def test_the_view_shows_cells_as_jupyterlab_does_and_follows_each_result(
    server_url, jp_auth_header, make_notebook
):
    path = shown_notebook(make_notebook)
    async with apps_client(server_url, jp_auth_header) as agent:
        html = (await agent.read_resource(VIEW_URI)).contents[0].text
        first = await agent.call_tool("read_cells", {"path": path})
        cells = first.structured_content["cells"]
        async with view_host(html) as host:
            await host.tool_input({"path": path})
            await host.tool_result(first)
            view = host.view
            await expect(view.locator(".markdown h1")).to_have_text("Orbits")
            await expect(view.locator(".markdown strong")).to_have_text("bold")
            await expect(view.locator(".code-cell").first.locator(".tok-k").first).to_have_text("import")
            await expect(view.locator(".tok-f")).to_have_text("area")
            await expect(view.locator(".tok-c")).to_have_text("# a circle")
            await expect(view.locator(".output.stdout")).to_have_text("12.566370614359172\n")
            await expect(view.locator(".output.html td").nth(2)).to_have_text("Jupiter")
            image = view.locator(".output.image img")
            await expect(image).to_be_visible()
            assert await image.evaluate("img => img.complete && img.naturalWidth") == 120
            error = view.locator(".output.error")
            await expect(error).to_contain_text("ZeroDivisionError: division by zero")
            await expect(error.locator(".ansi-31").first).to_have_text("-" * 75)  # coloured, as in JupyterLab
            assert "\x1b" not in await error.inner_text()
            await expect(view.locator(".prompt").nth(1)).to_have_text("[1]:")
            await shots.keep(host.page.locator("#view"), "notebook-view")

            # A link opens the notebook at that cell in JupyterLab (the host is asked to open it).
            await view.locator(".code-cell .prompt a").first.click()
            await host.page.wait_for_function("window.opened.length > 0")
            assert await host.opened() == [f"{server_url}lab/tree/shown.ipynb#cell-id={cells[1]['id']}"]

            # Each later result re-renders the view: the person follows the agent's work.
            await ok(agent, "update_cell", path=path, cell_id=cells[0]["id"], source="# Orbits, revised")
            await host.tool_result(await agent.call_tool("read_cells", {"path": path}))
            await expect(view.locator(".markdown h1")).to_have_text("Orbits, revised")
            assert not [line for line in host.console if "error" in line.lower()], host.console


async def test_a_run_shows_its_code_while_it_runs_then_its_outputs(server_url, jp_auth_header, make_notebook):
    path = make_notebook("run.ipynb", cells=[])
    source = "print('the answer')\n6 * 7"
    async with apps_client(server_url, jp_auth_header) as agent:
        html = (await agent.read_resource(VIEW_URI)).contents[0].text
        async with view_host(html) as host:
            await host.tool_input({"path": path, "source": source})  # the host calls the tool now
            await expect(host.view.locator(".prompt").first).to_have_text("[*]:")
            await expect(host.view.locator(".status")).to_have_text("running")
            result = await agent.call_tool("insert_and_execute", {"path": path, "source": source})
            await host.tool_result(result)
            await expect(host.view.locator(".output.stdout")).to_have_text("the answer\n")
            await expect(host.view.locator(".output").nth(1)).to_have_text("42")
            await expect(host.view.locator(".status")).to_have_count(0)
            await expect(host.view.locator(".prompt").first).to_have_text("[1]:")
            # The host's theme is followed: a dark host gets the dark palette.
            await host.deliver("ui/notifications/host-context-changed", {"theme": "dark"})
            await expect(host.view.locator("body")).to_have_css("background-color", "rgb(17, 17, 17)")
            # The view tells its content's size (ui/notifications/size-changed): the frame fits it.
            await host.page.wait_for_function("document.getElementById('view').offsetHeight < 300")
            await shots.keep(host.page.locator("#view"), "dark")


HOSTILE_MARKDOWN = """# Still safe
<img src=x onerror="parent.postMessage({jsonrpc:'2.0',method:'pwned',params:{by:'onerror'}},'*')">
<script>parent.postMessage({jsonrpc:'2.0',method:'pwned',params:{by:'script'}},'*')</script>
[a link](javascript:parent.postMessage({jsonrpc:'2.0',method:'pwned'},'*'))
![remote]({beacon}md.png)"""

HOSTILE_HTML = """<script>parent.postMessage({jsonrpc:'2.0',method:'pwned',params:{by:'output'}},'*')</script>
<img src="{beacon}out.png"><img src="data:text/html;base64,PHNjcmlwdD4=">
<iframe srcdoc="<script>parent.parent.postMessage({jsonrpc:'2.0',method:'pwned'},'*')</script>"></iframe>
<svg onload="parent.postMessage({jsonrpc:'2.0',method:'pwned',params:{by:'svg'}},'*')"><circle r="5"/></svg>
<a id="bad" href="javascript:parent.postMessage({jsonrpc:'2.0',method:'pwned'},'*')">bad link</a>
<b onmouseover="parent.postMessage({jsonrpc:'2.0',method:'pwned'},'*')">hover me</b>
<form action="{beacon}form"><input name="q" autofocus onfocus="parent.postMessage('pwned','*')"></form>
<style>body { display: none }</style><link rel="stylesheet" href="{beacon}style.css">
<object data="{beacon}thing"></object><meta http-equiv="refresh" content="0;url={beacon}refresh">
<table><tr><td style="background:url({beacon}bg.png)">kept</td></tr></table>"""


async def test_hostile_markdown_and_html_outputs_run_nothing_and_load_nothing(
    server_url, jp_auth_header, make_notebook
):
    beacon = f"{server_url}beacon/"
    path = make_notebook(
        "hostile.ipynb",
        cells=[
            {"cell_type": "markdown", "source": HOSTILE_MARKDOWN.replace("{beacon}", beacon)},
            {
                "cell_type": "code",
                "source": "show()",
                "outputs": [
                    new_output("display_data", data={"text/html": HOSTILE_HTML.replace("{beacon}", beacon)})
                ],
            },
        ],
    )
    async with apps_client(server_url, jp_auth_header) as agent:
        html = (await agent.read_resource(VIEW_URI)).contents[0].text
        result = await agent.call_tool("read_cells", {"path": path})
    async with view_host(html) as host:
        await host.tool_result(result)
        view = host.view
        await expect(view.locator(".markdown h1")).to_have_text("Still safe")
        await expect(view.locator(".output td")).to_have_text("kept")  # the harmless rest is shown
        await expect(view.locator(".output b")).to_have_text("hover me")
        await view.locator(".output b").hover()
        await view.get_by_text("bad link").click()
        await view.locator(".markdown a").click()
        await asyncio.sleep(0.5)  # anything that was going to run has run by now
        assert not [m for m in await host.seen() if "pwned" in str(m)]
        assert await host.opened() == []  # javascript: links are not links
        assert not [url for url in host.requests if "beacon" in url], host.requests
        rendered = view.locator("#cells")
        for tag in ("script", "iframe", "svg", "style", "form", "input", "object", "link", "meta"):
            await expect(rendered.locator(tag)).to_have_count(0)
        attributes = await rendered.evaluate(
            "root => [...root.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name + '=' + a.value))"
        )
        assert not [a for a in attributes if a.startswith(("on", "style")) or "javascript:" in a], attributes
        assert not [a for a in attributes if a.startswith("src=") and not a.startswith("src=data:image/")]
        await shots.keep(host.page.locator("#view"), "hostile")


GATED = """\
import os, time
print("first", flush=True)
while not os.path.exists("go"):
    time.sleep(0.05)
print("second")"""


async def test_a_run_that_outlives_its_call_is_followed_until_it_ends(
    server_url, jp_auth_header, make_notebook, jp_root_dir
):
    path = make_notebook("long.ipynb", cells=[])
    async with apps_client(server_url, jp_auth_header) as agent:
        html = (await agent.read_resource(VIEW_URI)).contents[0].text
        result = await agent.call_tool("insert_and_execute", {"path": path, "source": GATED, "timeout": 3})
        assert result.structured_content["status"] == "running", result.content
        async with view_host(html) as host:
            proxy = asyncio.ensure_future(host.proxy_tool_calls(agent))
            try:
                await host.tool_result(result)
                view = host.view
                await expect(view.locator(".output.stdout")).to_have_text("first\n")
                await expect(view.locator(".prompt").first).to_have_text("[*]:")
                (jp_root_dir / "go").write_text("")  # the run goes on past its call, and ends
                await expect(view.locator(".output.stdout")).to_have_text("first\nsecond\n")
                await expect(view.locator(".prompt").first).to_have_text("[1]:")
            finally:
                proxy.cancel()
    execution = result.structured_content["execution_id"]
    assert host.tool_calls and {c["name"] for c in host.tool_calls} == {"get_execution"}
    assert all(c["arguments"]["execution_id"] == execution for c in host.tool_calls)
