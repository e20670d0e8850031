"""Sign-in that no stranger can block or bend: a flood of anonymous authorize requests, registrations
or junk client documents from one address leaves everyone else's sign-in working; a used code
revokes only in its own client's hands, and only soon after; and the authorize endpoint redirects
only to a verified, normalised, registered URI, never to a place a stranger chose.

A second source address is a second loopback address (127.0.0.2), as a second machine would be.
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import urljoin

import pytest
from tornado import web
from traitlets.config import Config

import jupyter_mcp_ext.auth.client_documents as client_documents
import jupyter_mcp_ext.auth.provider as provider

from ..hub.harness import free_port
from ..support.mcp_client import connect, ok
from ..support.oauth_flow import REDIRECT, agent_at, pkce, query

ELSEWHERE = "127.0.0.2"  # another machine, as far as the server can tell
ACCEPT = {"Accept": "application/json, text/event-stream"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    jp_server_config.MCPExtensionApp.oauth_client_documents = "https+loopback"
    return jp_server_config


class Published(web.RequestHandler):
    """A real client's document; any other name is a junk URL (404)."""

    def get(self, name: str) -> None:
        if name != "real":
            raise web.HTTPError(404)
        me = self.request.full_url()
        self.finish({"client_id": me, "client_name": "Real Host", "redirect_uris": [REDIRECT]})


@pytest.fixture
async def publisher():
    port = free_port()
    server = web.Application([(r"/c/([a-z0-9-]+)\.json", Published)]).listen(port, "127.0.0.1")
    try:
        yield f"http://127.0.0.1:{port}/c/"
    finally:
        server.stop()


async def works(server_url: str, tokens: dict) -> None:
    async with connect(server_url, {"Authorization": f"Bearer {tokens['access_token']}"}) as agent:
        await ok(agent, "list_files")


# --- no stranger blocks sign-in -----------------------------------------------------------------


async def test_a_hundred_anonymous_authorizes_then_a_real_sign_in_still_works(server_url, person):
    async with agent_at(server_url, ELSEWHERE) as stranger:
        junk = await stranger.register(client_name="Flood")
        for _ in range(150):
            started = await stranger.authorize(junk, pkce()[1])
            assert started.status_code == 302 and "/oauth/consent?" in started.headers["location"]
    async with agent_at(server_url) as agent:
        client = await agent.register()
        await works(server_url, await agent.tokens(person, client))


async def test_registrations_from_one_address_do_not_stop_another(server_url):
    async with agent_at(server_url, ELSEWHERE) as stranger:
        answers = [
            (
                await stranger.agent.post(
                    stranger.meta["registration_endpoint"], json={"redirect_uris": [REDIRECT]}
                )
            )
            for _ in range(provider.REGISTRATIONS_PER_MINUTE + 5)
        ]
        assert [a.status_code for a in answers].count(201) == provider.REGISTRATIONS_PER_MINUTE
        assert answers[-1].status_code == 400 and "from your address" in answers[-1].text
    async with agent_at(server_url) as agent:
        assert (await agent.register())["client_id"]


async def test_a_registration_flood_forgets_its_own_clients_not_a_waiting_one(
    server_url, person, monkeypatch
):
    """Past the bound on registered clients, the idle ones of the busiest source go first."""
    monkeypatch.setattr(provider, "MAX_CLIENTS", 5)
    async with agent_at(server_url) as agent:
        client = await agent.register()  # registered, its person not yet back to allow it
        async with agent_at(server_url, ELSEWHERE) as stranger:
            for _ in range(8):
                await stranger.register(client_name="Flood")
        await works(server_url, await agent.tokens(person, client))


async def test_thirty_junk_document_urls_do_not_stop_a_real_document_client(server_url, person, publisher):
    async with agent_at(server_url, ELSEWHERE) as stranger:
        texts = [
            (await stranger.authorize({"client_id": f"{publisher}junk-{i}.json"}, pkce()[1])).text
            for i in range(31)
        ]
    budget = client_documents.FETCHES_PER_MINUTE
    assert all("answered 404" in t for t in texts[:budget]), texts
    assert all("Too many client documents" in t for t in texts[budget:]), texts  # its own budget, spent
    async with agent_at(server_url) as agent:
        client = {"client_id": f"{publisher}real.json"}
        await works(server_url, await agent.tokens(person, client))


# --- spent codes ---------------------------------------------------------------------------------


async def test_a_used_code_in_another_clients_hands_revokes_nothing(server_url, flow, person, panel):
    client = await flow.register()
    verifier, challenge = pkce()
    code = await flow.code(person, client, challenge)
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT}
    first = await flow.token(client, **form, code_verifier=verifier)
    assert first.status_code == 200, first.text
    other = await flow.register(client_name="Someone Else")
    replay = await flow.token(other, **form, code_verifier=pkce()[0])
    assert replay.status_code == 400 and "access_token" not in replay.text
    await works(server_url, first.json())
    listed = [(a["client"], a["name_verified"]) for a in (await panel.get("agents"))["agents"]]
    assert listed == [("Test Agent", False)]  # a registered client named itself: not checked


async def test_a_used_code_replayed_long_after_revokes_nothing(server_url, flow, person, monkeypatch):
    monkeypatch.setattr(provider, "SPENT_CODE_WINDOW", 0.3)
    client = await flow.register()
    verifier, challenge = pkce()
    code = await flow.code(person, client, challenge)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": REDIRECT,
    }
    first = await flow.token(client, **form)
    assert first.status_code == 200, first.text
    await asyncio.sleep(0.6)
    assert (await flow.token(client, **form)).status_code == 400
    await works(server_url, first.json())


# --- redirect URIs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "uri",
    [
        "https://localhost:8888@evil.example/phish",
        "http://evil.example\\@127.0.0.1/cb",
        "http://evil.example/cb",
        "intent://x.example/#Intent;scheme=https;end",
        "intent://x.example/cb",
        "view-source:https://x.example/cb",
        "javascript:alert(1)",
        "cursor-like:/cb",
        "https://agents.example.com/cb#fragment",
        "http://127.0.0.1.evil.example/cb",
    ],
)
async def test_registration_refuses_redirect_uris_outside_the_allow_list(flow, uri):
    answer = await flow.agent.post(flow.meta["registration_endpoint"], json={"redirect_uris": [uri]})
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_redirect_uri", answer.text
    assert "client_id" not in answer.json()


@pytest.mark.parametrize(
    "uri",
    ["https://agents.example.com/cb", "http://localhost/cb", "http://[::1]:5/cb", "com.example.app:/cb"],
)
async def test_registration_takes_https_loopback_and_reverse_domain_schemes(flow, uri):
    assert (await flow.register(redirect_uris=[uri]))["client_id"]


async def test_no_authorize_error_becomes_a_redirect_to_a_registered_web_site(flow):
    """No person is involved: a 302 to the registered site would be this server sending a browser
    wherever whoever registered chose (without code_challenge, before any login)."""
    client = await flow.register(redirect_uris=["https://agents.example.com/cb"])
    answer = await flow.authorize(client, None, redirect_uri="https://agents.example.com/cb")
    assert answer.status_code == 400 and "location" not in answer.headers
    assert "code_challenge" in answer.text


@pytest.mark.parametrize(
    ("client_id", "redirect_uri", "why"),
    [
        ("unknown-client", REDIRECT, "start the sign-in again"),
        (None, "http://evil.example\\@127.0.0.1:33418/callback", "backslash"),
        (None, "http://127.0.0.1:33418/other", "not registered"),
        (None, "https://localhost:33418@evil.example/callback", "user name"),
    ],
)
async def test_an_unknown_client_or_bad_redirect_uri_gets_a_page_never_a_redirect(
    flow, client_id, redirect_uri, why
):
    client = {"client_id": client_id} if client_id else await flow.register()
    for challenge in (pkce()[1], None):
        answer = await flow.authorize(client, challenge, redirect_uri=redirect_uri)
        assert answer.status_code == 400 and "location" not in answer.headers, answer.text
        assert why in answer.text


async def test_a_loopback_redirect_uri_is_the_same_on_any_port(server_url, flow, person):
    """RFC 8252: a native app picks its port when it listens; host, path and query must match."""
    client = await flow.register(redirect_uris=["http://127.0.0.1/callback"])
    verifier, challenge = pkce()
    at_port = "http://127.0.0.1:41234/callback"
    started = await flow.authorize(client, challenge, redirect_uri=at_port)
    back = await flow.consent(person, urljoin(server_url, started.headers["location"]))
    assert back.headers["location"].startswith(at_port + "?")
    got = await flow.token(
        client,
        grant_type="authorization_code",
        code=query(back.headers["location"])["code"],
        code_verifier=verifier,
        redirect_uri=at_port,
    )
    assert got.status_code == 200, got.text
    for other in ("http://localhost:41234/callback", "http://127.0.0.1:41234/callback/x"):
        refused = await flow.authorize(client, challenge, redirect_uri=other)
        assert refused.status_code == 400 and "location" not in refused.headers


async def test_a_document_redirect_uri_is_judged_as_a_browser_reads_it(flow, person, server_url):
    """``http://evil.example\\@127.0.0.1/cb`` looks like loopback to a naive parser; a browser goes to
    evil.example. The document is refused, and no consent page sends a code there."""
    port = free_port()

    class Sneaky(web.RequestHandler):
        def get(self) -> None:
            me = self.request.full_url()
            self.finish(
                json.dumps({"client_id": me, "redirect_uris": ["http://evil.example\\@127.0.0.1/cb"]})
            )

    server = web.Application([(r"/sneaky\.json", Sneaky)]).listen(port, "127.0.0.1")
    try:
        client = {"client_id": f"http://127.0.0.1:{port}/sneaky.json"}
        for uri in ("http://evil.example\\@127.0.0.1/cb", "http://evil.example/@127.0.0.1/cb"):
            refused = await flow.authorize(client, pkce()[1], redirect_uri=uri)
            assert refused.status_code == 400 and "location" not in refused.headers, refused.text
    finally:
        server.stop()


async def test_a_repeated_parameter_gets_a_page_never_a_redirect(flow):
    """The SDK reads a repeated parameter's last value: the check must see the one that is used."""
    client = await flow.register()
    params = [
        ("response_type", "code"),
        ("client_id", client["client_id"]),
        ("redirect_uri", REDIRECT),
        ("redirect_uri", "https://evil.example/cb"),
    ]
    answer = await flow.agent.get(flow.meta["authorization_endpoint"], params=params)
    assert answer.status_code == 400 and "location" not in answer.headers
    assert "repeated: redirect_uri" in answer.text


async def test_a_client_id_url_with_invisible_characters_is_refused(flow):
    refused = await flow.authorize({"client_id": "https://host.invalid/\u202eevil.json"}, pkce()[1])
    assert refused.status_code == 400 and "location" not in refused.headers
    assert "plain ASCII" in refused.text


async def test_an_overlong_state_is_refused_before_any_consent_page(flow):
    client = await flow.register()
    answer = await flow.authorize(client, pkce()[1], state="s" * 5000)
    assert answer.status_code == 302 and answer.headers["location"].startswith(REDIRECT)  # loopback: told
    assert "state is longer" in query(answer.headers["location"])["error_description"]
