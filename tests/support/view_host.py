"""A host page for the notebook view, as an agent host embeds an MCP App: the ``ui://`` HTML in an
iframe with ``sandbox="allow-scripts"`` (an opaque origin: no cookies, no storage, no parent DOM) set
through ``srcdoc``, and the page answering the view's JSON-RPC over postMessage: ``ui/initialize``,
then ``ui/notifications/tool-input`` and ``ui/notifications/tool-result`` once the view says it is
initialized, and ``tools/call`` from the view proxied to the server (``proxy_tool_calls``). Everything the view sends is kept in ``window.seen``; links it asks to open in
``window.opened``."""

from __future__ import annotations

import struct
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import FrameLocator, Page, async_playwright

from .browser import CHROMIUM, CHROMIUM_ARGS

HOST_PAGE = """<!DOCTYPE html><html><body style="margin:0;background:#eee">
<iframe id="view" sandbox="allow-scripts" style="width:820px;height:400px;border:0;background:#fff"></iframe>
<script>
window.seen = []; window.opened = []; window.pending = []; window.calls = [];
const frame = document.getElementById("view");
const toView = (msg) => frame.contentWindow.postMessage({jsonrpc: "2.0", ...msg}, "*");
window.addEventListener("message", (event) => {
  if (event.source !== frame.contentWindow) return;
  const m = event.data; window.seen.push(m);
  if (m.method === "ui/initialize") {
    toView({id: m.id, result: {protocolVersion: "2026-01-26", hostInfo: {name: "test-host", version: "1"},
      hostCapabilities: {openLinks: {}, serverTools: {}}, hostContext: {theme: "light", displayMode: "inline"}}});
  } else if (m.method === "ui/notifications/initialized") {
    window.ready = true;
    for (const msg of window.pending) toView(msg);
  } else if (m.method === "tools/call") {
    window.calls.push(m);  // the test proxies it to the MCP server, as a host does
  } else if (m.method === "ui/open-link") {
    window.opened.push(m.params.url); toView({id: m.id, result: {}});
  } else if (m.method === "ui/notifications/size-changed") {
    frame.style.height = Math.min(m.params.height, 2000) + "px";
  }
});
window.answer = (id, result) => toView({id, result});
window.deliver = (msg) => window.ready ? toView(msg) : window.pending.push(msg);
window.embed = (html) => { frame.srcdoc = html; };
</script></body></html>"""


@dataclass
class ViewHost:
    page: Page
    requests: list[str] = field(default_factory=list)  # every URL the page or the view asked for
    console: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # what the view asked the server

    @property
    def view(self) -> FrameLocator:
        return self.page.frame_locator("#view")

    async def tool_input(self, arguments: dict[str, Any]) -> None:
        await self.deliver("ui/notifications/tool-input", {"arguments": arguments})

    async def tool_result(self, result: Any) -> None:
        """A ``CallToolResult`` as the host got it from the server, handed over whole."""
        params = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        await self.deliver("ui/notifications/tool-result", params)

    async def deliver(self, method: str, params: dict[str, Any]) -> None:
        await self.page.evaluate("(msg) => window.deliver(msg)", {"method": method, "params": params})

    async def proxy_tool_calls(self, client: Any) -> None:
        """Forward the view's ``tools/call`` requests to the MCP server, as a host does (until cancelled)."""
        while True:
            await self.page.wait_for_function("window.calls.length > 0", timeout=0)
            call = await self.page.evaluate("window.calls.shift()")
            params = call["params"]
            self.tool_calls.append(params)
            result = await client.call_tool(params["name"], params.get("arguments") or {})
            answer = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            await self.page.evaluate("([id, result]) => window.answer(id, result)", [call["id"], answer])

    async def seen(self) -> list[dict[str, Any]]:
        return await self.page.evaluate("window.seen")

    async def opened(self) -> list[str]:
        return await self.page.evaluate("window.opened")


@asynccontextmanager
async def view_host(html: str) -> AsyncIterator[ViewHost]:
    """Headless Chromium with the host page, the view embedded in it."""
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = await (await browser.new_context(viewport={"width": 860, "height": 900})).new_page()
            host = ViewHost(page)
            page.on("request", lambda r: host.requests.append(r.url))
            page.on("console", lambda m: host.console.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: host.console.append(f"pageerror: {e}"))
            await page.set_content(HOST_PAGE)
            await page.evaluate("(html) => window.embed(html)", html)
            await page.wait_for_function("window.ready === true")
            yield host
        except BaseException:
            print("console:", *host.console, sep="\n  ") if "host" in locals() else None
            raise
        finally:
            await browser.close()


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A plain PNG of one colour: a real image for the view to show, made without an image library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\0" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )
