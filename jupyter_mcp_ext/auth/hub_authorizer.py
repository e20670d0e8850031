"""Granular permissions under JupyterHub: the Hub's custom scopes mapped to Jupyter's actions.

Out of the box a single-user server lets any token with ``access:servers`` do everything. With
``c.ServerApp.authorizer_class = "jupyter_mcp_ext.auth.hub_authorizer.ScopedHubAuthorizer"`` (or its
first path, ``jupyter_mcp_ext.hub_authorizer.ScopedHubAuthorizer``) each
request also needs the Hub custom scope ``custom:jupyter_server:<action>:<resource>`` (or
``...:<action>:*``) for this server, as in the Hub's read-only recipe (``examples/read-only/``).
Every REST handler, every MCP tool and ``tools/list`` then follow the token's scopes, so an admin
can hand an agent a token that reads but does not write, or writes but does not execute.

The Hub expands subscopes before it answers, so with the recipe's declarations (execute includes
write, write includes read) a token checked here carries every scope it implies.
"""

from __future__ import annotations

import os
from functools import cached_property
from typing import Any

from jupyterhub.singleuser.extension import JupyterHubAuthorizer

SCOPE_PREFIX = "custom:jupyter_server"


def required_scopes(action: str, resource: str, user: str, server: str) -> set[str]:
    """Any one of these scopes lets a token do ``action`` on ``resource`` of ``user``'s ``server``.

    The filters name this server (``!server=alice/``, a share's filter) or its owner (``!user=alice``,
    a role's); the Hub's own check also accepts the unfiltered scope (an admin's role).
    """
    scopes = {f"{SCOPE_PREFIX}:{action}:{resource}", f"{SCOPE_PREFIX}:{action}:*"}
    filters = (f"!server={user}/{server}", f"!user={user}")
    return {scope + f for scope in scopes for f in filters}


class ScopedHubAuthorizer(JupyterHubAuthorizer):
    """Allows an action only to a token with the Hub's access scope and the matching custom scope."""

    @cached_property
    def _server(self) -> tuple[str, str]:
        # The Hub tells the spawned server whose it is only through its environment.
        return os.environ.get("JUPYTERHUB_USER", ""), os.environ.get("JUPYTERHUB_SERVER_NAME", "")

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        if not super().is_authorized(handler, user, action, resource):
            return False
        owner, server = self._server
        have = self.hub_auth.check_scopes(required_scopes(action, resource, owner, server), user.hub_user)
        if not have:
            self.log.debug("%s lacks %s:%s:%s for this server", user.username, SCOPE_PREFIX, action, resource)
        return bool(have)
