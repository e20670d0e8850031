"""Who is calling ``/mcp`` with an agent credential: the agent, the person it acts for, its policy.

Jupyter's identity provider knows people (its token, a login cookie, the Hub's OAuth); it never sees
an agent token, so every Jupyter route refuses one. Only the MCP handler asks here first.

Under JupyterHub an agent's rights also follow the Hub after it was allowed (``hub_rights``).
"""

from __future__ import annotations

import re
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.auth import User
from jupyter_server.auth.authorizer import Authorizer

from .hub_rights import HubAgentRights
from .tokens import PREFIX, Credential, TokenStore

_BEARER = re.compile(r"bearer\s+(\S+)\s*$", re.IGNORECASE)


class AgentUser(User):
    """The Jupyter user an agent acts for, carrying the agent's credential.

    ``username`` is the person's (the journal and presence say whose agent it is); ``credential``
    says which agent, and ``agent_policy`` the most it may do.
    """

    def __init__(self, credential: Credential):
        super().__init__(username=credential.user, name=credential.user, display_name=credential.user_display)
        self.credential = credential

    @property
    def agent_policy(self) -> str:
        return self.credential.policy

    @property
    def agent_name(self) -> str:
        return self.credential.name


def agent_token(headers: Any) -> str | None:
    """The agent token in ``Authorization: Bearer jmcp_...``, if that is what the request sends."""
    found = _BEARER.match(headers.get("Authorization", ""))
    token = found.group(1) if found else None
    return token if token is not None and token.startswith(PREFIX) else None


def authenticate(store: TokenStore, token: str) -> AgentUser | None:
    credential = store.lookup(token)
    return AgentUser(credential) if credential is not None else None


def credential_of(handler: Any) -> Credential | None:
    user = getattr(handler, "current_user", None)
    return user.credential if isinstance(user, AgentUser) else None


async def permissions_of(handler: Any, pairs: frozenset[tuple[str, str]]) -> list[str]:
    """What Jupyter's authorizer lets the person of ``handler`` do, of the (resource, action) pairs.

    Called as the person allows or mints an agent: under JupyterHub their Hub login on this server is
    kept then, to re-check the agent's rights with the Hub later.
    """
    rights = HubAgentRights.of(handler)
    if rights is not None:
        rights.keep_login(handler)
    allowed = []
    for resource, action in sorted(pairs):
        if await ensure_async(
            handler.authorizer.is_authorized(handler, handler.current_user, action, resource)
        ):
            allowed.append(f"{resource}:{action}")
    return allowed


class CredentialAuthorizer(Authorizer):
    """An agent may do what its person could when they let it in (their policy applies on top) and,
    under JupyterHub, what the Hub lets the person do now.

    Credentials without recorded permissions (minted on the command line) are not re-checked.
    """

    async def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        credential = getattr(user, "credential", None)
        permissions = getattr(credential, "permissions", None)
        if permissions is None:
            return True
        if f"{resource}:{action}" not in permissions:
            return False
        rights = HubAgentRights.of(handler)
        return rights is None or await rights.allows(handler, credential, action, resource)
