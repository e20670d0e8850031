"""A client ID metadata document this server cannot fetch (a lab without internet) does not lock its
agent host out: where the answer goes to this computer, the host signs in as an unverified client,
as a dynamically registered one does, and its name is kept as unchecked; anywhere else it is refused
with a page that says why. Claude Code's and Codex's client IDs and redirect URIs are copied in shape;
their hosts are ``.invalid`` names, which never resolve, so the tests mean the same with internet.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urljoin

import httpx
import pytest
from tornado import web
from traitlets.config import Config

import jupyter_mcp_ext.auth.client_documents as client_documents
from jupyter_mcp_ext.auth.client_documents import ClientDocumentError, ClientDocuments

from ..hub.harness import free_port
from ..support.mcp_client import connect, ok
from ..support.oauth_flow import Flow, pkce, query

CLAUDE_CODE = "https://claude.invalid/oauth/claude-code-client-metadata"
CODEX = "https://chatgpt.invalid/oauth/codex/4f2a9c/client.json"


@pytest.fixture
def documents_mode() -> str:
    return "https"


@pytest.fixture
def jp_server_config(jp_server_config: Config, documents_mode: str) -> Config:
    jp_server_config.MCPExtensionApp.oauth_client_documents = documents_mode
    return jp_server_config


async def sign_in(
    server_url: str, flow: Flow, person: httpx.AsyncClient, client_id: str, redirect: str, **extra: str
) -> dict:
    """Authorize, Allow, exchange: the tokens, as the host's own listener at ``redirect`` gets them."""
    verifier, challenge = pkce()
    client = {"client_id": client_id}
    started = await flow.authorize(client, challenge, redirect_uri=redirect, **extra)
    assert started.status_code == 302 and "/oauth/consent?" in started.headers["location"], started.text
    back = await flow.consent(person, urljoin(server_url, started.headers["location"]))
    assert back.headers["location"].startswith(redirect + "?"), back.headers
    code = query(back.headers["location"])["code"]
    got = await flow.token(
        client, grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=redirect
    )
    assert got.status_code == 200, got.text
    return got.json()


@pytest.mark.parametrize(
    ("client_id", "redirect", "scope"),
    [
        (CLAUDE_CODE, "http://localhost:45871/callback", None),
        (CODEX, "http://127.0.0.1:45872/callback/4f2a9c", "openid offline_access"),  # a scope grants nothing
    ],
)
async def test_a_host_whose_document_cannot_be_fetched_signs_in_unverified_and_keeps_working(
    server_url, flow, person, panel, client_id, redirect, scope
):
    tokens = await sign_in(
        server_url, flow, person, client_id, redirect, **({"scope": scope} if scope else {})
    )
    async with connect(server_url, {"Authorization": f"Bearer {tokens['access_token']}"}) as agent:
        await ok(agent, "list_files")
    (listed,) = (await panel.get("agents"))["agents"]
    assert listed["client_id"] == client_id and listed["name_verified"] is False
    assert listed["name"] == client_id.removeprefix("https://")  # what it claims, marked unchecked
    again = await flow.token(
        {"client_id": client_id}, grant_type="refresh_token", refresh_token=tokens["refresh_token"]
    )
    assert again.status_code == 200, again.text  # the token endpoint fetches nothing: no second failure


@pytest.mark.parametrize(
    "redirect", ["https://agents.example.com/callback", "com.example.app:/callback", None]
)
async def test_an_unfetchable_document_with_an_answer_elsewhere_gets_a_page_saying_why(flow, redirect):
    extra = {"redirect_uri": redirect} if redirect else {}
    refused = await flow.agent.get(
        flow.meta["authorization_endpoint"],
        params={"response_type": "code", "client_id": CLAUDE_CODE, "code_challenge": pkce()[1], **extra},
    )
    assert refused.status_code == 400 and "location" not in refused.headers
    for told in ("could not be fetched", "on this computer", "oauth_client_documents"):
        assert told in refused.text, refused.text


@pytest.mark.parametrize("documents_mode", ["https+loopback"])
async def test_an_unverified_client_is_not_remembered_as_fetched(server_url, flow, person, panel):
    """Its document unreachable, the host signs in unverified; once the document can be fetched,
    the next sign-in reads it and the name is checked."""
    port = free_port()
    client_id = f"http://127.0.0.1:{port}/clients/host.json"
    redirect = "http://127.0.0.1:45873/callback"
    await sign_in(server_url, flow, person, client_id, redirect)
    assert [a["name_verified"] for a in (await panel.get("agents"))["agents"]] == [False]

    class Document(web.RequestHandler):
        def get(self) -> None:
            self.finish(
                {"client_id": client_id, "client_name": "Published Host", "redirect_uris": [redirect]}
            )

    server = web.Application([(r"/clients/host\.json", Document)]).listen(port, "127.0.0.1")
    try:
        await sign_in(server_url, flow, person, client_id, redirect)
    finally:
        server.stop()
    (listed,) = (await panel.get("agents"))["agents"]
    assert listed["name"] == "Published Host" and listed["name_verified"] is True


class Stalls(web.RequestHandler):
    """Starts its answer, then goes quiet (a server that hangs mid-way)."""

    async def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.write('{"client_id": ')
        await self.flush()
        await asyncio.sleep(3)


async def test_a_fetch_that_times_out_says_it_timed_out(monkeypatch):
    monkeypatch.setattr(client_documents, "TIMEOUT", 0.5)
    port = free_port()
    server = web.Application([(r"/slow\.json", Stalls)]).listen(port, "127.0.0.1")
    try:
        with pytest.raises(ClientDocumentError, match=r"did not arrive within 0\.5 seconds"):
            await ClientDocuments("https+loopback").get(f"http://127.0.0.1:{port}/slow.json")
    finally:
        server.stop()
