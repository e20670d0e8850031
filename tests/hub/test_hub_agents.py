"""Agents signed in through a JupyterHub: hosts find the sign-in from the URL alone, and an agent's
rights follow what the Hub lets its person do.

One real Hub for the module, set up as the README's Hub recipe for agent hosts says (the discovery
service and its proxy route) and with servers that trust the Hub's answer about a person for one
second (``HubAgentRights.recheck_seconds``), so that a removed share shows within the test.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from contextlib import closing
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import validate_metadata_issuer
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.exceptions import MCPError
from pydantic import AnyUrl

from ..mcp_client import connect, fails, ok, text
from ..oauth_flow import REDIRECT, Flow, pkce, query
from .harness import Hub, find_proxy

pytest.importorskip("jupyterhub", reason="the test extra installs JupyterHub")

pytestmark = pytest.mark.timeout(300)

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
REFUSED_WITHIN = 60  # seconds: generous, for a loaded machine; the bound itself is one second


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
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


@pytest.fixture(scope="module")
def alice(hub: Hub) -> str:
    """alice's server (its public URL), with a file for agents to read."""
    for name in ("alice", "erin", "frank", "gina"):
        hub.add_user(name)
    home = hub.home("alice")
    home.mkdir(parents=True, exist_ok=True)
    (home / "notes.txt").write_text("agents read this\n")
    return hub.start_server("alice")


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


# -- rights follow the Hub ---------------------------------------------------------------------------


async def test_a_sharees_agent_is_refused_once_the_share_is_removed_and_refreshing_does_not_revive_it(
    hub: Hub, alice: str
):
    share(hub, "erin", SHARED)
    flow, client, tokens = await signed_in_agent(hub, alice, "erin")
    async with connect(alice, bearer(tokens)) as mcp:
        assert "agents read this" in str(await ok(mcp, "read_file", path="notes.txt"))

    unshare(hub, "erin", SHARED)  # alice stops sharing her server with erin
    said = await until_refused(alice, tokens, "read_file", path="notes.txt")
    assert "JupyterHub no longer lets erin use this server" in said and "sign in again" in said, said

    async with httpx.AsyncClient(timeout=30) as http:
        again = await http.post(
            f"{alice}mcp", headers={**bearer(tokens), "Accept": "application/json"}, json={}
        )
    assert again.status_code == 401 and 'error="invalid_token"' in again.headers["WWW-Authenticate"]
    refreshed = await flow.token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant", refreshed.text


async def test_a_right_taken_back_at_the_hub_is_taken_from_the_agent_and_the_rest_stay(hub: Hub, alice: str):
    share(hub, "frank", SHARED)
    _flow, _client, tokens = await signed_in_agent(hub, alice, "frank")
    async with connect(alice, bearer(tokens)) as mcp:
        await ok(mcp, "write_file", path="by-frank.txt", content="one\n")

    # The Hub takes write from frank (out of the writers' group); read stays.
    left = hub.api("DELETE", "groups/alice-writers/users", json={"users": ["frank"]})
    assert left.status_code == 200, left.text
    said = await until_refused(alice, tokens, "write_file", path="by-frank.txt", content="two\n")
    assert "may not write contents" in said, said
    async with connect(alice, bearer(tokens)) as mcp:
        assert "agents read this" in str(await ok(mcp, "read_file", path="notes.txt"))
        assert "may not write contents" in await fails(mcp, "write_file", path="after.txt", content="x\n")
    assert not (hub.home("alice") / "after.txt").exists()


async def test_the_agent_ends_with_the_hub_login_it_was_allowed_from(hub: Hub, alice: str):
    """Logging out of the Hub ends the browser's login on the server, which the agent's rights hung on."""
    share(hub, "gina", SHARED)
    with closing(await asyncio.to_thread(hub.browser, "gina", alice)) as browser:
        _flow, _client, tokens = await signed_in_agent(hub, alice, "gina", browser)
        async with connect(alice, bearer(tokens)) as mcp:
            await ok(mcp, "read_file", path="notes.txt")
        assert (await asyncio.to_thread(browser.get, f"{hub.url}/hub/logout")).status_code == 200
    said = await until_refused(alice, tokens, "read_file", path="notes.txt")
    assert "JupyterHub no longer vouches for the login gina allowed this agent from" in said, said


async def test_the_owners_agent_outlives_a_sharees_share_and_the_owners_own_logout(hub: Hub, alice: str):
    """The server's owner is vouched for by the server's own Hub token once their browser login is gone:
    their agents keep the rights they chose while the Hub lets them reach their server."""
    share(hub, "erin", SHARED)
    with closing(await asyncio.to_thread(hub.browser, "alice", alice)) as browser:
        _flow, _client, tokens = await signed_in_agent(hub, alice, "alice", browser)
        unshare(hub, "erin", SHARED)
        assert (await asyncio.to_thread(browser.get, f"{hub.url}/hub/logout")).status_code == 200
    await asyncio.sleep(1.5)  # past the bound: the Hub is asked about alice anew
    async with connect(alice, bearer(tokens)) as mcp:
        assert "agents read this" in str(await ok(mcp, "read_file", path="notes.txt"))
        await ok(mcp, "write_file", path="by-alice.txt", content="mine\n")


# -- discovery from the host root ------------------------------------------------------------------


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


async def test_every_discovery_path_claude_code_asks_answers_json_for_the_users_server(hub: Hub, alice: str):
    """The paths in the order Claude Code asks them for <hub>/user/alice/mcp: each answers JSON, the
    documents name alice's server, and their issuer is the one the client derived from the path."""
    root, mcp, oauth = origin(alice), f"{alice}mcp", f"{alice}oauth"
    as_docs = {
        f"{root}/.well-known/oauth-authorization-server/user/alice/mcp": mcp,
        f"{root}/.well-known/openid-configuration/user/alice/mcp": mcp,
        f"{alice}mcp/.well-known/openid-configuration": mcp,
        f"{alice}mcp/.well-known/oauth-authorization-server": mcp,
        # after the resource metadata, from its authorization server:
        f"{root}/.well-known/oauth-authorization-server/user/alice/oauth": oauth,
        f"{root}/.well-known/openid-configuration/user/alice/oauth": oauth,
        f"{alice}oauth/.well-known/openid-configuration": oauth,
    }
    async with httpx.AsyncClient(follow_redirects=True, timeout=30) as http:
        for url in (
            f"{root}/.well-known/oauth-protected-resource/user/alice/mcp",
            f"{mcp}/.well-known/oauth-protected-resource",
        ):
            got = await http.get(url)
            assert got.status_code == 200, (url, got.status_code, got.text[:300])
            prm = ProtectedResourceMetadata.model_validate_json(got.content)
            assert str(prm.resource) == mcp and [str(a) for a in prm.authorization_servers] == [oauth], url
        for url, issuer in as_docs.items():
            got = await http.get(url)
            assert got.status_code == 200 and got.headers["content-type"].startswith("application/json"), url
            meta = OAuthMetadata.model_validate_json(got.content)
            validate_metadata_issuer(meta, issuer)  # the SDK's own RFC 8414 check
            assert str(meta.authorization_endpoint) == f"{oauth}/authorize", url
            assert str(meta.registration_endpoint) == f"{oauth}/register", url
        # Not a user's server: nothing to say for it, said in JSON.
        for path in ("oauth-protected-resource", "oauth-authorization-server", "openid-configuration"):
            got = await http.get(f"{root}/.well-known/{path}")
            assert got.status_code == 404 and got.json()["error"] == "not_found", (path, got.text[:300])
        # The service's own page, where the Hub routes it, says what it answers.
        about = await http.get(f"{root}/services/mcp-discovery/")
        assert about.status_code == 200 and about.json()["service"] == "mcp-discovery", about.text[:300]
        # The registration endpoint the documents name works (not the Hub's /register at the root).
        registered = await http.post(
            str(meta.registration_endpoint),
            json={
                "client_name": "Claude Code (jupyter)",
                "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none",
            },
        )
    assert registered.status_code == 201, registered.text


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource//evil.example/x",
        "/.well-known/oauth-protected-resource/user/../hub/api",
        "/.well-known/oauth-protected-resource/hub/api/users",
        "/.well-known/openid-configuration/user/",
        "/.well-known/openid-configuration/hub/user/alice/mcp",
    ],
)
def test_the_discovery_service_sends_nowhere_but_into_a_users_server(hub: Hub, alice: str, path: str):
    got = httpx.get(f"{origin(alice)}{path}", follow_redirects=False, timeout=30)
    assert got.status_code == 404 and "location" not in got.headers, got.headers


class _NoResourceMetadata(httpx2.AsyncBaseTransport):
    """A host that never reads the 401's ``resource_metadata`` (as Claude Code's ``mcp login``): it
    must find the sign-in from the URL alone, at the host root first."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.asked: list[str] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.asked.append(f"{request.method} {request.url.path}")
        response = await self.inner.handle_async_request(request)
        if response.status_code == 401:
            response.headers["WWW-Authenticate"] = "Bearer"
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Storage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.mark.parametrize("reads_the_401", [True, False])
async def test_the_python_sdks_oauth_client_signs_in_from_the_url_alone(
    hub: Hub, alice: str, reads_the_401: bool
):
    browser = await asyncio.to_thread(hub.browser, "alice", alice)
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def redirect_handler(authorization_url: str) -> None:
        assert authorization_url.startswith(f"{alice}oauth/authorize?"), authorization_url
        started = await asyncio.to_thread(browser.get, authorization_url, follow_redirects=False)
        assert started.status_code == 302, started.text[:300]
        answer.set_result(
            await asyncio.to_thread(allow, browser, urljoin(alice, started.headers["location"]))
        )

    async def callback_handler() -> AuthorizationCodeResult:
        params = query(await answer)
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"))

    storage = _Storage()
    auth = OAuthClientProvider(
        server_url=f"{alice}mcp",
        client_metadata=OAuthClientMetadata(
            client_name="SDK through the Hub",
            redirect_uris=[AnyUrl(REDIRECT)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    transport = httpx2.AsyncHTTPTransport() if reads_the_401 else _NoResourceMetadata()
    # The SDK's own HTTP client follows redirects (create_mcp_http_client): so does this one.
    http = httpx2.AsyncClient(
        auth=auth, transport=transport, follow_redirects=True, timeout=httpx2.Timeout(30, read=60)
    )
    with closing(browser):
        async with (
            http,
            Client(streamable_http_client(f"{alice}mcp", http_client=http), mode="legacy") as mcp,
        ):
            result = await mcp.call_tool("read_file", {"path": "notes.txt"})
    assert not result.is_error and "agents read this" in text(result)
    assert storage.tokens is not None and storage.tokens.access_token.startswith("jmcp_")
    if not reads_the_401:
        assert "GET /.well-known/oauth-protected-resource/user/alice/mcp" in transport.asked, transport.asked
        assert not any(a.startswith("POST /register") for a in transport.asked), transport.asked
