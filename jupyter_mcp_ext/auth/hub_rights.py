"""Under JupyterHub, an agent holds what its person chose and what the Hub lets the person do now.

A credential keeps the permissions its person had when they allowed it; the Hub may take rights away
later (a share removed, a role changed). So each agent request is also judged by the server's own
authorizer against the person's Hub model as the Hub gives it now: the single-user server asks the
Hub (``HubAuth.user_for_token``) with the person's Hub login on this server, the token their browser
held when they allowed an agent or minted one here. The answer is kept ``recheck_seconds`` (the
bound on how long a removed right can outlive its removal), one question per person at a time.

When the Hub says the person may no longer use this server at all, or no longer knows that login
(logged out, expired), every credential the person allowed here through the Hub is revoked: its
host is told to sign in again, and refreshing it gets nothing. Off a Hub nothing here runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir
from jupyter_core.utils import ensure_async
from tornado.web import HTTPError
from traitlets import Float
from traitlets.config import LoggingConfigurable

from ..errors import ToolError

SETTINGS_KEY = "jupyter_mcp_ext.hub_rights"


class AccessEnded(ToolError):
    """The Hub no longer lets this agent's person use this server: what the agent is told."""


class HubAgentRights(LoggingConfigurable):  # type: ignore[misc]
    """The people's Hub logins on this server and the Hub's latest answers about them."""

    recheck_seconds = Float(
        60.0,
        config=True,
        help="Under JupyterHub, how long (seconds) the Hub's answer about an agent's person is trusted "
        "before the Hub is asked again: a share or role removed at the Hub ends the agent's rights "
        "within this time.",
    )

    def __init__(self, hub_auth: Any, authorizer: Any, path: Path, **kwargs: Any):
        super().__init__(**kwargs)
        self.hub_auth = hub_auth
        self.authorizer = authorizer  # the server's own (the Hub's scopes, ScopedHubAuthorizer's)
        self.path = path
        self.logins: dict[str, str] = self._load()  # person -> their latest Hub token on this server
        self._answers: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self._asking: dict[str, asyncio.Future[dict[str, Any] | None]] = {}

    @classmethod
    def of(cls, handler: Any) -> HubAgentRights | None:
        """This server's instance, made on first use; None off a Hub."""
        settings = handler.settings
        if SETTINGS_KEY not in settings:
            hub_auth = getattr(settings.get("identity_provider"), "hub_auth", None)
            found = None
            if hub_auth is not None:
                client = getattr(hub_auth, "oauth_client_id", "") or os.environ.get(
                    "JUPYTERHUB_CLIENT_ID", ""
                )
                name = f"hub-logins-{hashlib.sha256(client.encode()).hexdigest()[:12]}.json"
                found = cls(
                    hub_auth,
                    settings["authorizer"],
                    Path(jupyter_data_dir()) / "jupyter_mcp_ext" / name,
                    parent=settings.get("serverapp"),
                )
            settings[SETTINGS_KEY] = found
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
        if not token or self.logins.get(person) == token:
            return
        self.logins[person] = token
        self._answers.pop(person, None)
        self._save()

    # -- judging an agent's request -------------------------------------------------------------

    async def allows(self, handler: Any, credential: Any, action: str, resource: str) -> bool:
        """Whether the person may still do this, by the Hub now; raises ``AccessEnded`` if they may
        not use this server at all any more (their credentials here are revoked first)."""
        from jupyterhub.singleuser.extension import JupyterHubUser

        person = credential.user
        try:
            model = await self._model(person)
        except HTTPError as err:
            raise ToolError(
                f"This server could not confirm with JupyterHub what {person} may do here "
                f"({err.log_message or err.status_code}); try again in a moment."
            ) from None
        if model is None:
            known = person in self.logins
            self._end(handler, person)
            raise AccessEnded(
                f"JupyterHub no longer knows the login {person} allowed this agent from (logged out, or it "
                "expired), so this agent's access ended. Sign in again from this server's MCP URL."
                if known
                else f"This server keeps no JupyterHub login of {person}'s to check this agent's rights "
                "with, so its access ended. Sign in again from this server's MCP URL, or mint the token "
                "in JupyterLab's MCP panel."
            )
        if not self.hub_auth.check_scopes(self.hub_auth.access_scopes, model):
            self._end(handler, person)
            raise AccessEnded(
                f"JupyterHub no longer lets {person} use this server (a share or role was removed), so "
                "this agent's access ended. Once the server is shared again, sign in again."
            )
        user = JupyterHubUser(model)
        return bool(await ensure_async(self.authorizer.is_authorized(handler, user, action, resource)))

    async def _model(self, person: str) -> dict[str, Any] | None:
        """The person's Hub model (its scopes) no older than ``recheck_seconds``; None if the Hub says
        the login is not (or no longer) theirs. Raises HTTPError if the Hub could not be asked."""
        answered = self._answers.get(person)
        if answered is not None and time.monotonic() - answered[0] < self.recheck_seconds:
            return answered[1]
        asking = self._asking.get(person)
        if asking is None:
            asking = self._asking[person] = asyncio.ensure_future(self._ask(person))
            asking.add_done_callback(lambda _: self._asking.pop(person, None))
        return await asyncio.shield(asking)

    async def _ask(self, person: str) -> dict[str, Any] | None:
        token = self.logins.get(person)
        model = None
        if token is not None:
            model = await self.hub_auth.user_for_token(token, use_cache=False, sync=False)
        if model is not None and model.get("name") != person:
            model = None
        self._answers[person] = (time.monotonic(), model)
        return model

    def _end(self, handler: Any, person: str) -> None:
        """Revoke every credential ``person`` allowed here through the Hub; forget the login."""
        store = getattr(handler, "tokens", None)
        ended = (
            [c.id for c in store.mine() if c.user == person and c.permissions is not None] if store else []
        )
        for credential_id in ended:
            store.revoke(credential_id)
        if self.logins.pop(person, None) is not None:
            self._save()
        self._answers.pop(person, None)
        self.log.warning(
            "JupyterHub ended %s's rights on this server: %d agent(s) revoked", person, len(ended)
        )

    # -- keeping -------------------------------------------------------------------------------

    def _load(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as err:
            self.log.error(
                "Ignoring unreadable %s (%s): agents' people must sign them in again", self.path, err
            )
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _save(self) -> None:
        """Atomically, readable by the owner alone (the server's owner can read any request anyway)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.logins, f)
            os.replace(tmp, self.path)
        except OSError as err:
            self.log.error("Could not keep the Hub logins of agents' people in %s (%s)", self.path, err)
