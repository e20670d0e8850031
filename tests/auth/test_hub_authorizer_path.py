"""The Hub authorizer moved to ``auth/hub_authorizer.py``; configurations naming its first path,
``jupyter_mcp_ext.hub_authorizer.ScopedHubAuthorizer``, keep working."""

from __future__ import annotations

from jupyter_server.serverapp import ServerApp

from jupyter_mcp_ext.auth.hub_authorizer import ScopedHubAuthorizer

FIRST_PATH = "jupyter_mcp_ext.hub_authorizer.ScopedHubAuthorizer"


def test_a_config_naming_the_first_path_gets_the_scoped_hub_authorizer():
    app = ServerApp(authorizer_class=FIRST_PATH)
    assert app.authorizer_class is ScopedHubAuthorizer


def test_a_config_naming_the_new_path_gets_it_too():
    app = ServerApp(authorizer_class="jupyter_mcp_ext.auth.hub_authorizer.ScopedHubAuthorizer")
    assert app.authorizer_class is ScopedHubAuthorizer
