"""The panel's agents under ``<base_url>/api/mcp/agents``: list, mint, change policy, revoke.

Only people reach these routes: Jupyter authenticates them (an agent token is unknown to it), and
``PanelHandler`` refuses any request that carries an agent token at all. Minting or widening an
agent's policy is as strong as running code, so it needs ``execute`` on ``kernels``.
"""

from __future__ import annotations

from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import authorized
from tornado import web

from ..agents.directory import person_of
from ..auth.principal import permissions_of
from ..auth.tokens import POLICIES, TokenStore
from .handlers import PanelHandler
from .panel import Panel


class AgentsHandler(PanelHandler):
    auth_resource = "kernels"

    def initialize(self, panel: Panel, tokens: TokenStore) -> None:  # type: ignore[override]  # Tornado passes the route's kwargs
        super().initialize(panel)
        self.tokens = tokens

    async def _may_run_code(self) -> None:
        if not await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, "execute", "kernels")
        ):
            raise web.HTTPError(403, "Managing agents needs permission to run code (execute on kernels).")

    def listing(self) -> list[dict[str, Any]]:
        """Each credential with its live sessions (the agents now connected with it)."""
        live: dict[str, list[dict[str, Any]]] = {}
        for agent in self.panel.agents():
            cred = agent.get("credential") or {}
            if cred.get("kind") == "agent":
                live.setdefault(cred["id"], []).append(agent)
        return [{**c.to_json(), "sessions": live.get(c.id, [])} for c in self.tokens.mine()]

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.answer({"agents": self.listing()})

    @web.authenticated
    @authorized
    async def post(self) -> None:
        await self._may_run_code()
        body = self.body()
        policy = body.get("policy", "ask")
        person = person_of(self)
        try:
            credential, token = self.tokens.mint(
                str(body.get("name", "")),
                person["name"],
                str(policy),
                person["display_name"],
                await permissions_of(self, self.tokens.checked),
            )
        except ValueError as err:
            raise web.HTTPError(400, str(err)) from err
        # The token is shown this once: only its hash is kept.
        self.answer({"agent": credential.to_json(), "token": token}, 201)


class AgentHandler(AgentsHandler):
    @web.authenticated
    @authorized
    async def post(self, credential_id: str) -> None:
        await self._may_run_code()
        policy = self.body().get("policy")
        if policy not in POLICIES:
            raise web.HTTPError(400, f"policy must be one of {', '.join(POLICIES)}.")
        credential = self.tokens.set_policy(credential_id, policy)
        if credential is None:
            raise web.HTTPError(404, f"No agent '{credential_id}' (revoked, or never was).")
        self.panel.events.emit("session", credential_id)
        self.answer({"agent": credential.to_json()})

    @web.authenticated
    @authorized
    async def delete(self, credential_id: str) -> None:
        if not self.tokens.revoke(credential_id):
            raise web.HTTPError(404, f"No agent '{credential_id}' (revoked, or never was).")
        ended = await self.panel.end_agent(credential_id)
        self.answer({"revoked": credential_id, "sessions_ended": ended})


def routes(
    prefix: str, panel: Panel, tokens: TokenStore
) -> list[tuple[str, type[PanelHandler], dict[str, Any]]]:
    """``prefix`` is ``<base_url>/api/mcp``."""
    options = {"panel": panel, "tokens": tokens}
    return [
        (prefix + "/agents", AgentsHandler, options),
        (prefix + r"/agents/([0-9a-f]+)", AgentHandler, options),
    ]
