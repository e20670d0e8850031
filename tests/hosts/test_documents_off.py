"""Claude Code and Codex CLI on a lab that accepts no client documents
(``oauth_client_documents = "off"``): both register themselves, the person allows them in the
browser, and they are connected; still after their access token expired; refused once revoked."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from .hosts import ClaudeCode, Codex, Host
from .lab import Lab, lab_on
from .person import Person

pytestmark = pytest.mark.timeout(300)

LIFETIME = 3  # seconds an access token lasts here: every host refreshes within the test


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with lab_on(
        tmp_path_factory.mktemp("lab"),
        "--MCPExtensionApp.oauth_client_documents=off",
        f"--MCPExtensionApp.access_token_lifetime={LIFETIME}",
    ) as running:
        print(f"lab started in {running.started_in:.1f} s")
        yield running


NAMES = {ClaudeCode: "Claude Code (jupyter)", Codex: "Codex"}  # the names they register under


async def test_the_host_signs_in_and_says_connected(lab: Lab, host: Host, person: Person):
    if isinstance(host, ClaudeCode):
        await host.add(lab.mcp)
        assert await host.status() == "Needs authentication"
        seen = await host.sign_in(person)
    else:
        seen = await host.connect(lab.mcp, person)  # `codex mcp add` signs in by itself
    assert seen.client == NAMES[type(host)]
    assert await host.connected(lab)
    assert NAMES[type(host)] in [agent["client"] for agent in await lab.agents()]


@pytest.mark.parametrize("host", [ClaudeCode], indirect=True, ids=["claude"])
async def test_after_its_access_token_expires_the_host_is_still_connected(
    lab: Lab, host: Host, person: Person
):
    """Claude Code's health check uses its token (Codex has no command that does, short of a model)."""
    await host.connect(lab.mcp, person)
    first = host.access_token()
    async with asyncio.timeout(LIFETIME * 20):
        while await lab.accepts(first):  # until the server refuses it: expired
            await asyncio.sleep(0.5)
    assert await host.status() == "Connected"
    assert host.access_token() != first  # it refreshed


async def test_after_the_person_revokes_it_the_host_is_refused_until_it_signs_in_again(
    lab: Lab, host: Host, person: Person
):
    await host.connect(lab.mcp, person)
    await lab.revoke(NAMES[type(host)])
    assert not await lab.accepts(host.access_token())
    if isinstance(host, ClaudeCode):
        assert await host.status() == "Needs authentication"
    # The person's browser on another machine: the host's listener never hears back; the URL is pasted.
    await host.sign_in(person, paste=True)
    assert await host.connected(lab)
