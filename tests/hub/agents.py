"""Agents signing in through a JupyterHub, as the Hub tests drive them: alice's collaborators by
share and group roles, the person's consent in their browser, an agent host's sign-in by hand.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx
from mcp.shared.exceptions import MCPError

from ..support.mcp_client import connect, text
from ..support.oauth_flow import REDIRECT, Flow, pkce, query
from .harness import Hub

REFUSED_WITHIN = 60  # seconds: generous, for a loaded machine; the bound itself is one second
# A share gives access to alice's server; what its sharees may do there comes from groups' roles (the
# Hub passes a role's custom scopes to a person's browser session on the server, not a share's).
SHARED = ["access:servers"]
ROLES = [
    {
        "name": "alice-readers",
        "scopes": ["custom:jupyter_server:read:*!user=alice"],
        "groups": ["alice-readers"],
    },
    {
        "name": "alice-writers",
        "scopes": ["custom:jupyter_server:write:*!user=alice"],
        "groups": ["alice-writers"],
    },
]
GROUPS = {name: {"users": ["erin", "frank", "gina"]} for name in ("alice-readers", "alice-writers")}


def share(hub: Hub, user: str, scopes: list[str]) -> None:
    response = hub.api(
        "POST", "shares/alice/", token=hub.token("alice"), json={"user": user, "scopes": scopes}
    )
    assert response.status_code == 200, response.text


def unshare(hub: Hub, user: str, scopes: list[str]) -> None:
    """``PATCH /hub/api/shares/alice/``: alice takes these scopes back from ``user`` (all: the share ends)."""
    scopes = [f"{scope}!server=alice/" for scope in scopes]  # as the Hub keeps them
    response = hub.api(
        "PATCH", "shares/alice/", token=hub.token("alice"), json={"user": user, "scopes": scopes}
    )
    assert response.status_code == 200, response.text
    left = hub.api("GET", "shares/alice/", token=hub.token("alice")).json()["items"]
    assert not [s for s in left if s["user"] and s["user"]["name"] == user], left


def allow(browser: httpx.Client, consent_url: str, policy: str = "full") -> str:
    """The person opens the consent page in their browser and allows: where it sends them back."""
    page = browser.get(consent_url)
    assert page.status_code == 200 and 'id="allow"' in page.text, page.text[:500]
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text).group(1)
    form = {"_xsrf": xsrf, "request": query(str(page.url))["request"], "decision": "allow", "policy": policy}
    back = browser.post(str(page.url).split("?")[0], data=form, follow_redirects=False)
    assert back.status_code == 302, back.text[:500]
    return back.headers["location"]


async def signed_in_agent(
    hub: Hub, url: str, person: str, browser: httpx.Client | None = None
) -> tuple[Flow, dict[str, Any], dict[str, Any]]:
    """An agent host signs in by hand (register, authorize, the person allows in ``browser``, logged in
    to the Hub, or a new one), then exchanges the code: its flow, its client and its tokens."""
    agent = httpx.AsyncClient(follow_redirects=False, timeout=30)
    flow = Flow(url, agent)
    await flow.discover()
    client = await flow.register(client_name=f"{person}'s agent")
    verifier, challenge = pkce()
    started = await flow.authorize(client, challenge)
    assert started.status_code == 302, started.text
    mine = browser or await asyncio.to_thread(hub.browser, person, url)
    try:
        back = await asyncio.to_thread(allow, mine, urljoin(url, started.headers["location"]))
    finally:
        if browser is None:
            mine.close()
    assert back.startswith(REDIRECT), back
    got = await flow.token(
        client,
        grant_type="authorization_code",
        code=query(back)["code"],
        code_verifier=verifier,
        redirect_uri=REDIRECT,
    )
    assert got.status_code == 200, got.text
    return flow, client, got.json()


def bearer(tokens: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens['access_token']}"}


def mcp_error(err: BaseException) -> str:
    """The words of the MCP error in ``err`` (the SDK's client raises it inside task groups)."""
    while isinstance(err, BaseExceptionGroup):
        matched = err.subgroup(MCPError)
        if matched is None:
            raise err
        err = matched.exceptions[0]
    return str(err)


async def until_refused(url: str, tokens: dict[str, Any], tool: str, **arguments: Any) -> str:
    """Call ``tool`` as the agent until it is refused (the Hub's change seen): the refusal's words,
    from the call or from the ``tools/list`` the SDK's client may send first (an MCP error then)."""
    with anyio.fail_after(REFUSED_WITHIN):
        while True:
            try:
                async with connect(url, bearer(tokens)) as client:
                    result = await client.call_tool(tool, arguments)
            except (MCPError, BaseExceptionGroup) as err:
                return mcp_error(err)
            if result.is_error:
                return text(result)
            await asyncio.sleep(0.3)


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
