"""Claude Code and Codex CLI given a user's server under JupyterHub (the loopback Hub of tests/hub/,
configured as the README says, with its discovery service for agent hosts): ``<hub>/user/alice/mcp``
alone. The person passes the Hub's own
login first, then allows the host on the consent page; the host is connected."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from playwright.async_api import Page

from ..hub.harness import Hub, find_proxy
from .hosts import Host
from .lab import Lab
from .person import Person, person_in

pytestmark = pytest.mark.timeout(300)

USER = "alice"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    proxy, why = find_proxy()
    if proxy is None:
        pytest.skip(why)
    running = Hub(tmp_path_factory.mktemp("hub"), proxy, discovery=True)  # the README's Hub recipe
    try:
        running.start()
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def lab(hub: Hub) -> Lab:
    hub.add_user(USER)
    hub.home(USER).mkdir(parents=True, exist_ok=True)
    url = hub.start_server(USER)
    return Lab(url, hub.token(USER), 0.0)  # the token: alice's own, for her panel's API


@pytest.fixture
async def person(hub: Hub) -> AsyncIterator[Person]:
    async def hub_login(page: Page) -> None:
        await page.goto(f"{hub.url}/hub/login")
        await page.locator("#username_input").fill(USER)
        await page.locator("#password_input").fill("any")
        async with page.expect_navigation(wait_until="commit"):  # logged in: on to her server
            await page.locator("#login_submit").click()

    async with person_in(hub_login) as someone:
        yield someone


async def test_the_host_signs_in_through_the_hub_and_says_connected(lab: Lab, host: Host, person: Person):
    assert lab.mcp.endswith(f"/user/{USER}/mcp")
    seen = await host.connect(lab.mcp, person)
    assert seen.client
    assert await host.connected(lab)
    assert [a for a in await lab.agents() if a["client"] == seen.client]
