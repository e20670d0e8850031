"""The TypeScript MCP SDK's OAuth client connects to a real server: the Node.js host
(``tests/ts_client/connect.mjs``) discovers, registers and makes the authorization URL; a person
logged in to JupyterLab answers it in headless Chromium, whose redirect lands on the host's own
loopback listener; the host exchanges the code, lists the tools and calls one."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.async_api import async_playwright
from traitlets.config import Config

from ..support.browser import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, with_lab
from ..support.oauth_flow import query
from ..support.ts_host import connect

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path: Path) -> Config:
    return with_lab(jp_server_config, tmp_path / "lab-settings")


async def test_the_typescript_sdks_client_connects_after_consent_in_jupyterlab(
    server_url, jp_auth_header, jp_root_dir, panel
):
    (jp_root_dir / "hello.txt").write_text("from the person\n")
    token = jp_auth_header["Authorization"].split()[-1]
    seen: dict[str, str] = {}
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = await (await browser.new_context()).new_page()
            page.set_default_timeout(TIMEOUT_MS)
            await page.goto(f"{server_url}lab?token={token}")  # the person, logged in to JupyterLab
            await page.locator("#jp-main-dock-panel").wait_for()

            async def consent(url: str) -> None:
                await page.goto(url)
                seen["client"] = await page.locator("#client-name").inner_text()
                seen["where"] = await page.locator("#redirect-host").inner_text()
                await page.locator("input[name=policy][value=read-only]").check()
                async with page.expect_navigation(url="http://127.0.0.1:*/callback?*"):
                    await page.locator("#allow").click()  # to the Node host's listener, for real
                seen["landed"] = await page.locator("body").inner_text()

            got = await connect(f"{server_url}mcp", consent, "read_file", path="hello.txt")
        finally:
            await browser.close()
    sent = query(got["authorize"])
    assert sent["code_challenge_method"] == "S256" and sent["resource"] == f"{server_url}mcp"
    assert seen["client"] == "TS SDK Test Host" and seen["landed"] == "You may close this tab."
    assert seen["where"] == urlsplit(got["client"]["redirect_uris"][0]).netloc
    assert "get_notebook" in got["tools"]
    assert not got["result"].get("isError") and "from the person" in str(got["result"]["content"])
    assert got["tokens"] == {"access_prefix": "jmcp_", "has_refresh": True}
    (agent,) = (await panel.get("agents"))["agents"]
    assert agent["client"] == "TS SDK Test Host" and agent["policy"] == "read-only"
