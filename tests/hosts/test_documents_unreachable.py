"""Claude Code and Codex CLI on a default lab that cannot reach their client ID metadata documents
(``claude.ai``, ``chatgpt.com``: a lab without outbound internet, as this machine is): each signs in
as an unverified client, its answer going to its loopback listener, and is connected."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .hosts import ClaudeCode, Host
from .lab import Lab, lab_on
from .person import Person

pytestmark = pytest.mark.timeout(300)

CLIENT_IDS = {"claude": "claude.ai", "codex": "chatgpt.com"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with lab_on(tmp_path_factory.mktemp("lab")) as running:  # documents on, as by default
        print(f"lab started in {running.started_in:.1f} s")
        yield running


async def test_the_host_signs_in_unverified_and_says_connected(lab: Lab, host: Host, person: Person):
    seen = await host.connect(lab.mcp, person)
    assert seen.site is None  # no site is named as vouching for a name nobody could check
    assert seen.status in (None, "unverified")
    assert await host.connected(lab)
    (agent,) = [a for a in await lab.agents() if CLIENT_IDS[host.command] in (a.get("client_id") or "")]
    assert agent.get("name_verified") is False
    if isinstance(host, ClaudeCode):
        await lab.revoke(agent["client"])
        assert await host.status() == "Needs authentication"
