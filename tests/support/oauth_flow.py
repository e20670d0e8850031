"""OAuth 2.1 for agents as a test drives it by hand: discover, register, authorize, consent, exchange.

``person`` is an httpx client logged in to Jupyter (its cookie, as a browser holds it); ``agent`` an
httpx client with no Jupyter credential at all, as an agent host is.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

REDIRECT = "http://127.0.0.1:33418/callback"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def query(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def refusal(response: httpx.Response) -> dict[str, str]:
    """What a refusal page a person's browser gets says: its kind, title and the server's message."""
    assert response.headers["Content-Type"].startswith("text/html"), response.text
    kind = re.search(r'data-kind="([a-z-]+)">([^<]*)</h1>', response.text)
    said = re.search(r'<pre id="error-message">(.*?)</pre>', response.text, re.S)
    assert kind is not None, response.text
    return {
        "kind": kind.group(1),
        "title": html.unescape(kind.group(2)),
        "message": html.unescape(re.sub(r"<[^>]+>", "", said.group(1))) if said else "",
    }


@asynccontextmanager
async def person_logged_in(server_url: str, token: str):
    async with httpx.AsyncClient(follow_redirects=False, timeout=30) as http:
        assert (await http.get(f"{server_url}api/status", params={"token": token})).status_code == 200
        yield http


class Flow:
    def __init__(self, server_url: str, agent: httpx.AsyncClient):
        self.server_url = server_url
        self.agent = agent
        self.meta: dict[str, Any] = {}

    async def discover(self) -> dict[str, Any]:
        self.meta = (await self.agent.get(f"{self.server_url}oauth/.well-known/openid-configuration")).json()
        return self.meta

    async def register(self, **metadata: Any) -> dict[str, Any]:
        body = {
            "client_name": "Test Agent",
            "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none",
        }
        response = await self.agent.post(self.meta["registration_endpoint"], json={**body, **metadata})
        assert response.status_code == 201, response.text
        return response.json()

    async def authorize(self, client: dict[str, Any], challenge: str | None, **extra: str) -> httpx.Response:
        params = {
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": REDIRECT,
            "state": "st4te",
            "resource": f"{self.server_url}mcp",
            **({"code_challenge": challenge, "code_challenge_method": "S256"} if challenge else {}),
            **extra,
        }
        return await self.agent.get(self.meta["authorization_endpoint"], params=params)

    async def consent(
        self, person: httpx.AsyncClient, consent_url: str, decision: str = "allow", policy: str = "full"
    ) -> httpx.Response:
        page = await person.get(consent_url)
        assert page.status_code == 200, page.text
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text).group(1)
        request_id = query(consent_url)["request"]
        form = {"_xsrf": xsrf, "request": request_id, "decision": decision, "policy": policy}
        return await person.post(urljoin(self.server_url, urlsplit(consent_url).path), data=form)

    async def token(self, client: dict[str, Any], **form: str) -> httpx.Response:
        return await self.agent.post(
            self.meta["token_endpoint"], data={"client_id": client["client_id"], **form}
        )

    async def code(
        self, person: httpx.AsyncClient, client: dict[str, Any], challenge: str, policy: str = "full"
    ) -> str:
        started = await self.authorize(client, challenge)
        assert started.status_code == 302, started.text
        back = await self.consent(
            person, urljoin(self.server_url, started.headers["location"]), policy=policy
        )
        assert back.status_code == 302 and back.headers["location"].startswith(REDIRECT), back.text
        answer = query(back.headers["location"])
        assert answer["state"] == "st4te"
        return answer["code"]

    async def tokens(
        self, person: httpx.AsyncClient, client: dict[str, Any], policy: str = "full"
    ) -> dict[str, Any]:
        verifier, challenge = pkce()
        code = await self.code(person, client, challenge, policy)
        response = await self.token(
            client, grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=REDIRECT
        )
        assert response.status_code == 200, response.text
        return response.json()


@asynccontextmanager
async def agent_at(server_url: str, address: str | None = None) -> AsyncIterator[Flow]:
    """An agent host with no Jupyter credential, its metadata discovered, connecting from ``address``."""
    transport = httpx.AsyncHTTPTransport(local_address=address) if address else None
    async with httpx.AsyncClient(follow_redirects=False, timeout=30, transport=transport) as http:
        flow = Flow(server_url, http)
        await flow.discover()
        yield flow


class MemoryStorage:
    """What an agent host keeps (the SDK's ``TokenStorage``): its registration and its tokens."""

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
