"""Claude Code and Codex CLI on a lab that can reach their client ID metadata documents: documents
of the same shape as theirs, published over TLS under their own names (``documents.py``). Each signs
in under the name its document gives, and the consent page names the site that vouches for it."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from .connect_to_main import VARIABLE
from .documents import Published, published
from .hosts import Host
from .lab import Lab, lab_on
from .person import Person

pytestmark = pytest.mark.timeout(300)

VERIFIED = {"claude": ("Claude Code", "claude.ai"), "codex": ("Codex", "chatgpt.com")}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Published]:
    with published(tmp_path_factory.mktemp("site")) as serving:
        yield serving


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, site: Published) -> Iterator[Lab]:
    with lab_on(
        tmp_path_factory.mktemp("lab"),
        # The test mode: the documents' names resolve to loopback (for this process alone, below).
        "--MCPExtensionApp.oauth_client_documents=https+loopback",
        env={VARIABLE: site.connect_to, "SSL_CERT_FILE": str(site.ca)},
        launcher=(sys.executable, "-m", "tests.hosts.connect_to_main", "jupyter_server"),
    ) as running:
        print(f"lab started in {running.started_in:.1f} s")
        yield running


async def test_the_host_signs_in_under_the_name_its_site_vouches_for(
    lab: Lab, site: Published, host: Host, person: Person
):
    name, where = VERIFIED[host.command]
    seen = await host.connect(lab.mcp, person)
    assert (seen.client, seen.site) == (name, where)
    assert seen.status in (None, "verified")
    assert await host.connected(lab)
    assert any(f.startswith(where) for f in site.fetched), site.fetched  # fetched from its site
    (agent,) = [a for a in await lab.agents() if a["client"] == name]
    assert agent.get("name_verified") is not False
