"""Agent hosts find the sign-in through a JupyterHub from the URL alone: every discovery path they
ask answers JSON for the user's server (the host-root ones through the Hub's discovery service), and
the Python SDK's OAuth client signs in whether or not it reads the 401's resource metadata.
"""

from __future__ import annotations

import asyncio
from contextlib import closing
from urllib.parse import urljoin

import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import validate_metadata_issuer
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientMetadata,
    OAuthMetadata,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl

from ..support.mcp_client import text
from ..support.oauth_flow import REDIRECT, MemoryStorage, query
from .agents import allow, origin
from .harness import Hub

pytest.importorskip("jupyterhub", reason="the test extra installs JupyterHub")

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def hub(agents_hub: Hub) -> Hub:
    return agents_hub


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


def test_the_rest_of_well_known_stays_the_hubs(hub: Hub, alice: str):
    """Only the three OAuth documents are routed to the service (an ACME challenge, say, is not)."""
    got = httpx.get(f"{origin(alice)}/.well-known/acme-challenge/x", follow_redirects=False, timeout=30)
    assert got.status_code == 302 and got.headers["location"].startswith("/hub/"), got.headers


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

    storage = MemoryStorage()
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
