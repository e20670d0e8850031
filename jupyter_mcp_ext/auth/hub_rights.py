"""Under JupyterHub, an agent holds what its person chose and what the Hub lets the person do now.

A credential keeps the permissions its person had when they allowed it; the Hub may take rights away
later (a share removed, a role changed). So each agent request is also judged by the server's own
authorizer against the person's Hub model as the Hub gives it now: the single-user server asks the
Hub (``HubAuth.user_for_token``) with the person's Hub login on this server, the token their browser
held when they last allowed an agent or minted one here. The answer is kept ``recheck_seconds`` (the
bound on how long a removed right can outlive its removal), one question per person at a time.

Those logins are kept in memory only: a Hub token on disk would outlive the server and could be read
by whoever reads the person's files. Without one (the server restarted, the person logged out of the
Hub) the server's owner is checked with the server's own Hub token (may the owner still reach their
server; their agents keep the rights chosen at sign-in), and anyone else's agents end.

When an agent's person may no longer use this server, every credential they allowed here through the
Hub is revoked: its host is told to sign in again, and refreshing it gets nothing. Off a Hub nothing
here runs.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any, Literal

from jupyter_core.utils import ensure_async
from tornado.web import HTTPError
from traitlets import Float
from traitlets.config import LoggingConfigurable

from ..errors import ToolError

SETTINGS_KEY = "jupyter_mcp_ext.hub_rights"
# What the Hub was asked with: the person's browser login, the server's own token, or nothing.
Source = Literal["login", "server", "none"]


class AccessEnded(ToolError):
    """The Hub no longer lets this agent's person use this server: what the agent is told."""


class HubAgentRights(LoggingConfigurable):
    """The people's Hub logins on this server and the Hub's latest answers about them."""

    recheck_seconds = Float(
        60.0,
        config=True,
        help="Under JupyterHub, how long (seconds) the Hub's answer about an agent's person is trusted "
        "before the Hub is asked again: a share or role removed at the Hub ends the agent's rights "
        "within this time.",
    )

    def __init__(self, hub_auth: Any, authorizer: Any, owner: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.hub_auth = hub_auth
        self.authorizer = authorizer  # the server's own (the Hub's scopes, ScopedHubAuthorizer's)
        self.owner = owner
        self.logins: dict[str, str] = {}  # person -> their latest browser's Hub token on this server
        self._answers: dict[str, tuple[float, Source, dict[str, Any] | None]] = {}
        self._asking: dict[str, asyncio.Future[tuple[Source, dict[str, Any] | None]]] = {}

    @classmethod
    def of(cls, handler: Any) -> HubAgentRights | None:
        """This server's instance, made on first use; None off a Hub."""
        settings = handler.settings
        if SETTINGS_KEY not in settings:
            hub_auth = getattr(settings.get("identity_provider"), "hub_auth", None)
            settings[SETTINGS_KEY] = (
                None
                if hub_auth is None
                else cls(
                    hub_auth,
                    settings["authorizer"],
                    os.environ.get("JUPYTERHUB_USER", ""),
                    parent=settings.get("serverapp"),
                )
            )
        return settings[SETTINGS_KEY]

    # -- the person's login -------------------------------------------------------------------

    def keep_login(self, handler: Any) -> None:
        """Remember the Hub token of this person's browser session here: their agents are checked with
        it. Only a browser's, which the Hub scoped to this server and expires: a token a script sent
        in a header may be broader, and is not kept."""
        person = getattr(handler.current_user, "username", None)
        if not person or self.hub_auth.get_token(handler, in_cookie=False):
            return
        token = self.hub_auth.get_token(handler)
        if token and self.logins.get(person) != token:
            self.logins[person] = token
            self._answers.pop(person, None)

    # -- judging an agent's request -------------------------------------------------------------

    async def allows(self, handler: Any, credential: Any, action: str, resource: str) -> bool:
        """Whether the person may still do this, by the Hub now; raises ``AccessEnded`` if they may
        not use this server at all any more (their credentials here are revoked first)."""
        from jupyterhub.singleuser.extension import JupyterHubUser

        person = credential.user
        try:
            source, model = await self._model(person)
        except HTTPError as err:
            raise ToolError(
                f"This server could not confirm with JupyterHub what {person} may do here "
                f"({err.log_message or err.status_code}); try again in a moment."
            ) from None
        if model is None:
            self._end(handler, person)
            raise AccessEnded(
                f"JupyterHub no longer vouches for the login {person} allowed this agent from (they "
                "logged out, it expired, or this server restarted since), so this agent's access ended. "
                "Sign in again from this server's MCP URL."
            )
        if not self.hub_auth.check_scopes(self.hub_auth.access_scopes, model):
            self._end(handler, person)
            raise AccessEnded(
                f"JupyterHub no longer lets {person} use this server (a share or role was removed), so "
                "this agent's access ended. Once the server is shared again, sign in again."
            )
        if source == "server":  # the owner, by the server's own token: it carries no custom scopes
            return True
        user = JupyterHubUser(model)
        return bool(await ensure_async(self.authorizer.is_authorized(handler, user, action, resource)))

    async def _model(self, person: str) -> tuple[Source, dict[str, Any] | None]:
        """What the Hub says of the person, no older than ``recheck_seconds``, and how it was asked.
        Raises HTTPError if the Hub could not be asked."""
        answered = self._answers.get(person)
        if answered is not None and time.monotonic() - answered[0] < self.recheck_seconds:
            return answered[1], answered[2]
        asking = self._asking.get(person)
        if asking is None:
            asking = self._asking[person] = asyncio.ensure_future(self._ask(person))
            asking.add_done_callback(lambda _: self._asking.pop(person, None))
        return await asyncio.shield(asking)

    async def _ask(self, person: str) -> tuple[Source, dict[str, Any] | None]:
        source: Source = "none"
        model = None
        token = self.logins.get(person)
        if token is not None:
            source, model = "login", await self._user_for(token, person)
            if model is None:  # logged out or expired: not worth asking about again
                self.logins.pop(person, None)
        if model is None and person == self.owner and self.hub_auth.api_token:
            source, model = "server", await self._user_for(self.hub_auth.api_token, person)
        self._answers[person] = (time.monotonic(), source, model)
        return source, model

    async def _user_for(self, token: str, person: str) -> dict[str, Any] | None:
        model = await self.hub_auth.user_for_token(token, use_cache=False, sync=False)
        return model if model is not None and model.get("name") == person else None

    def _end(self, handler: Any, person: str) -> None:
        """Revoke every credential ``person`` allowed here through the Hub; forget their login."""
        store = getattr(handler, "tokens", None)
        if store:
            ended = [c.id for c in store.mine() if c.user == person and c.permissions is not None]
            for credential_id in ended:
                store.revoke(credential_id)
        self.logins.pop(person, None)
        self._answers.pop(person, None)
        self.log.warning(
            "JupyterHub ended %s's rights on this server: %d agent(s) revoked", person, len(ended)
        )
