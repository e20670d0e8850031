"""The official SDK's OAuth client (``OAuthClientProvider``) connects to a real server: it discovers,
registers and opens the consent page, which a person logged in to JupyterLab answers in headless
Chromium; the redirect to the client's loopback callback is caught by a Playwright route."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2
import pytest
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientMetadata,
)
from playwright.async_api import async_playwright
from pydantic import AnyUrl
from traitlets.config import Config

from ..support.browser import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, with_lab
from ..support.oauth_flow import MemoryStorage, query

CALLBACK = "http://127.0.0.1:47113/callback"


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path: Path) -> Config:
    return with_lab(jp_server_config, tmp_path / "lab-settings")


async def test_the_sdks_oauth_client_connects_after_consent_in_jupyterlab(server_url, jp_auth_header, panel):
    token = jp_auth_header["Authorization"].split()[-1]
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = await (await browser.new_context()).new_page()
            page.set_default_timeout(TIMEOUT_MS)
            await page.goto(f"{server_url}lab?token={token}")  # the person, logged in to JupyterLab
            await page.locator("#jp-main-dock-panel").wait_for()
            answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

            async def caught(route) -> None:  # the agent host's loopback listener, in effect
                if not answer.done():
                    answer.set_result(route.request.url)
                await route.fulfill(status=200, body="You may close this tab.")

            await page.route(CALLBACK + "*", caught)
            seen: dict[str, str] = {}

            async def redirect_handler(url: str) -> None:
                await page.goto(url)  # the SDK "opens the browser" on the authorization URL
                seen["client"] = await page.locator("#client-name").inner_text()
                seen["where"] = await page.locator("#redirect-host").inner_text()
                await page.locator("input[name=policy][value=full]").check()
                await page.locator("#allow").click()

            async def callback_handler() -> AuthorizationCodeResult:
                params = query(await asyncio.wait_for(answer, TIMEOUT_MS / 1000))
                return AuthorizationCodeResult(code=params["code"], state=params.get("state"))

            storage = MemoryStorage()
            auth = OAuthClientProvider(
                server_url=f"{server_url}mcp",
                client_metadata=OAuthClientMetadata(
                    client_name="SDK Test Host",
                    redirect_uris=[AnyUrl(CALLBACK)],
                    grant_types=["authorization_code", "refresh_token"],
                    response_types=["code"],
                ),
                storage=storage,
                redirect_handler=redirect_handler,
                callback_handler=callback_handler,
            )
            http = httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30, read=60))
            async with (
                http,
                Client(streamable_http_client(f"{server_url}mcp", http_client=http), mode="legacy") as c,
            ):
                tools = [t.name for t in (await c.list_tools()).tools]
                assert "get_notebook" in tools
                assert not (await c.call_tool("list_files", {})).is_error
                (session,) = (await panel.get("sessions"))["sessions"]
                assert session["credential"]["name"] == "SDK Test Host"
                assert session["credential"]["policy"] == "full"
        finally:
            await browser.close()
    assert seen == {"client": "SDK Test Host", "where": "127.0.0.1:47113"}
    assert storage.tokens is not None and storage.tokens.access_token.startswith("jmcp_")
    assert storage.tokens.refresh_token
    (agent,) = (await panel.get("agents"))["agents"]
    assert agent["client"] == "SDK Test Host" and agent["user"]
