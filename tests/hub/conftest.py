"""One JupyterHub for the agents' Hub tests (test_hub_rights.py, test_hub_signin.py), set up as the
README's Hub recipe for agent hosts says (the discovery service and its proxy route), with servers that
trust the Hub's answer about a person for one second (``HubAgentRights.recheck_seconds``), so that a
removed share shows within a test. test_hub.py has a Hub of its own, as the base recipe alone.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .agents import GROUPS, ROLES
from .harness import Hub, find_proxy


@pytest.fixture(scope="package")
def agents_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    proxy, why = find_proxy()
    if proxy is None:
        pytest.skip(why)
    hub = Hub(
        tmp_path_factory.mktemp("hub"),
        proxy,
        discovery=True,
        agent_recheck_seconds=1,
        roles=ROLES,
        groups=GROUPS,
    )
    try:
        hub.start()
        yield hub
    finally:
        hub.stop()


@pytest.fixture(scope="package")
def alice(agents_hub: Hub) -> str:
    """alice's server (its public URL), with a file for agents to read."""
    for name in ("alice", "erin", "frank", "gina"):
        agents_hub.add_user(name)
    home = agents_hub.home("alice")
    home.mkdir(parents=True, exist_ok=True)
    (home / "notes.txt").write_text("agents read this\n")
    return agents_hub.start_server("alice")
