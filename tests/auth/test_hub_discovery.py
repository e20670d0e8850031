"""The Hub discovery service's mapping from a host-root well-known path to a user's server, alone.

Through a real Hub it is tested in tests/hub/test_hub_agents.py; here, the paths no client sends
as they are (an HTTP client resolves dot segments first) but a raw request could.
"""

from __future__ import annotations

import pytest

from jupyter_mcp_ext.auth.hub_discovery import target


@pytest.mark.parametrize(
    ("path", "users", "where"),
    [
        ("/user/alice/mcp", "/user/", "/user/alice/mcp/.well-known/openid-configuration"),
        ("/user/alice/mcp/", "/user/", "/user/alice/mcp/.well-known/openid-configuration"),
        (
            "/jhub/user/al%40ce/named/mcp",
            "/jhub/user/",
            "/jhub/user/al%40ce/named/mcp/.well-known/openid-configuration",
        ),
        ("/user/alice/%2e%2e/%2E%2E/hub/api", "/user/", None),
        ("/user/alice/../../hub/api", "/user/", None),
        ("/user//evil.example/x", "/user/", None),
        ("/user/alice\\@evil.example", "/user/", None),
        ("/user/", "/user/", None),
        ("/hub/api/users", "/user/", None),
        ("/user/alice/mcp?x=1", "/user/", None),
    ],
)
def test_only_a_users_servers_own_path_is_a_target(path: str, users: str, where: str | None):
    assert target("openid-configuration", path, users) == where
