"""The person at the lab: logged in to Jupyter in headless Chromium, answering an agent host's
authorization URL on the consent page, as they would after clicking the link their terminal showed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from playwright.async_api import Page, Request, Route, async_playwright

from ..support.browser import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS


@dataclass
class Consent:
    """What the person saw and where their browser was sent back."""

    client: str  # the name the consent page gave the agent
    site: str | None  # the verified site it named, if it named one
    status: str | None  # how the page says the name is known ("verified", "unverified", ...), if it says
    page: str  # the page's whole text
    callback: str  # the URL the browser was sent to: the host's loopback callback, with the code


class Person:
    def __init__(self, page: Page) -> None:
        self.page = page

    async def answer(self, url: str, *, reach_host: bool = True) -> Consent:
        """Open ``url``, read the consent page, click Allow. ``reach_host=False``: the person's
        browser is on another machine than the host, so its callback never reaches the host's listener
        (the request is recorded and answered here instead), and the URL is what the person pastes."""
        page = self.page
        sent: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        def recorded(request: Request) -> None:
            if "/callback" in request.url and request.is_navigation_request() and not sent.done():
                sent.set_result(request.url)

        async def elsewhere(route: Route) -> None:
            await route.fulfill(status=200, body="This site can't be reached (the host is elsewhere).")

        page.on("request", recorded)
        if not reach_host:
            await page.route("http://127.0.0.1:*/callback**", elsewhere)
            await page.route("http://localhost:*/callback**", elsewhere)
        try:
            shown = await page.goto(url)
            if shown is None or shown.status != 200 or not await page.locator("#allow").count():
                raise AssertionError(f"no consent page but: {await page.locator('body').inner_text()}")
            client = await page.locator("#client-name").inner_text()
            site = page.locator("#client-host")
            named = await site.inner_text() if await site.count() else None
            known = page.locator("#name-status")
            status = await known.get_attribute("data-status") if await known.count() else None
            text = await page.locator("body").inner_text()
            await page.locator("#allow").click()
            callback = await asyncio.wait_for(sent, TIMEOUT_MS / 1000)
            await page.wait_for_load_state()
        finally:
            page.remove_listener("request", recorded)
            await page.unroute_all()
        return Consent(client, named, status, text, callback)


@asynccontextmanager
async def person_in(log_in: Callable[[Page], Awaitable[None]]) -> AsyncIterator[Person]:
    """A person in a fresh headless Chromium, logged in by ``log_in`` (Jupyter's token URL, or the
    Hub's login form)."""
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = await (await browser.new_context()).new_page()
            page.set_default_timeout(TIMEOUT_MS)
            await log_in(page)
            yield Person(page)
        finally:
            await browser.close()


def with_token(server_url: str, token: str) -> Callable[[Page], Awaitable[None]]:
    """Log in to a Jupyter server by its token URL, as the link ``jupyter lab`` prints does."""

    async def log_in(page: Page) -> None:
        answer = await page.goto(f"{server_url}api/status?token={token}")
        assert answer is not None and answer.ok, await page.content()

    return log_in
