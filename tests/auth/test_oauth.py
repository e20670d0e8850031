"""OAuth 2.1 for agents (MCP's authorization spec): discovery under the server's base_url, dynamic
registration, consent in Jupyter behind its login, code + PKCE S256, refresh with rotation, revocation;
and every bad input refused without a usable code or token, a redirect to an unregistered place, or a 500."""

from __future__ import annotations

import asyncio
import json
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
from jupyter_server.auth import Authorizer
from traitlets.config import Config

import jupyter_mcp_ext.auth.provider as provider

from ..support.mcp_client import RAW_HEADERS, RAW_INITIALIZE, connect, fails, ok
from ..support.oauth_flow import REDIRECT, pkce, query, refusal

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


class NoExecute(Authorizer):
    """A person who may read and edit but not run code (a Hub share's scopes amount to this)."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return (resource, action) != ("kernels", "execute")


@pytest.fixture
def authorizer_class():
    return None


@pytest.fixture
def oauth() -> bool:
    return True


@pytest.fixture
def jp_server_config(jp_server_config: Config, authorizer_class, oauth) -> Config:
    if authorizer_class is not None:
        jp_server_config.ServerApp.authorizer_class = authorizer_class
    jp_server_config.MCPExtensionApp.oauth = oauth
    return jp_server_config


ACCEPT = {"Accept": "application/json, text/event-stream"}


async def test_discovery_from_the_401_works_under_the_base_url(server_url, jp_http_port):
    origin = f"http://127.0.0.1:{jp_http_port}"
    async with httpx.AsyncClient() as http:
        refused = await http.post(f"{server_url}mcp", json=PING, headers=ACCEPT)
        assert refused.status_code == 401
        prm_url = refused.headers["WWW-Authenticate"].split('resource_metadata="')[1].rstrip('"')
        assert prm_url.startswith(server_url)  # inside the server's prefix: what a Hub's proxy passes on
        prm = (await http.get(prm_url)).json()
        assert prm["resource"] == f"{server_url}mcp" and prm["authorization_servers"] == [
            f"{server_url}oauth"
        ]
        issuer = prm["authorization_servers"][0]
        path = issuer.removeprefix(origin)
        for url in (  # the three an MCP client tries for an issuer with a path
            f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}/.well-known/openid-configuration{path}",
            f"{issuer}/.well-known/openid-configuration",
        ):
            meta = (await http.get(url)).json()
            assert meta["issuer"] == issuer, url
            assert meta["code_challenge_methods_supported"] == ["S256"]
            assert meta["authorization_endpoint"] == f"{issuer}/authorize"
            assert {"registration_endpoint", "revocation_endpoint", "token_endpoint"} <= set(meta)
            # What OpenID discovery requires (the TypeScript SDK checks it; behind a Hub the last
            # of the three is the only one that reaches the server).
            assert meta["subject_types_supported"] and meta["id_token_signing_alg_values_supported"]
            assert "none" in meta["revocation_endpoint_auth_methods_supported"]  # public clients revoke too
            assert (await http.get(meta["jwks_uri"])).json() == {"keys": []}
        rfc = await http.get(f"{origin}/.well-known/oauth-protected-resource{path.removesuffix('oauth')}mcp")
        assert rfc.json() == prm


async def test_the_whole_flow_by_hand_then_refresh_rotation_and_revocation(server_url, flow, person, panel):
    client = await flow.register()
    got = await flow.tokens(person, client, policy="read-only")
    assert got["token_type"] == "Bearer" and got["expires_in"] == 3600 and got["refresh_token"]
    bearer = {"Authorization": f"Bearer {got['access_token']}"}
    async with connect(server_url, bearer) as agent:
        await ok(agent, "list_files")
        assert "read-only" in await fails(agent, "write_file", path="x.txt", content="x")
        (session,) = (await panel.get("sessions"))["sessions"]
        # The registered name the person allowed; the SDK's default clientInfo ("mcp") only in brackets.
        assert session["display_name"] == "Test Agent (mcp) (agent)"
    (listed,) = (await panel.get("agents"))["agents"]
    assert listed["client"] == "Test Agent" and listed["policy"] == "read-only"

    # Refresh rotates: the new pair works, the old refresh token is spent; reusing it ends the grant.
    first_refresh = got["refresh_token"]
    again = await flow.token(client, grant_type="refresh_token", refresh_token=first_refresh)
    assert again.status_code == 200, again.text
    newer = again.json()
    assert newer["refresh_token"] != first_refresh
    async with connect(server_url, {"Authorization": f"Bearer {newer['access_token']}"}) as agent:
        await ok(agent, "list_files")
    reused = await flow.token(client, grant_type="refresh_token", refresh_token=first_refresh)
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    gone = await flow.token(client, grant_type="refresh_token", refresh_token=newer["refresh_token"])
    assert gone.status_code == 400  # the whole family went with the reuse
    refused = await flow.agent.post(
        f"{server_url}mcp", json=PING, headers={**ACCEPT, "Authorization": f"Bearer {newer['access_token']}"}
    )
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["WWW-Authenticate"]

    # RFC 7009: a revoked access token stops at once.
    fresh = await flow.tokens(person, client, policy="ask")
    (relisted,) = (await panel.get("agents"))["agents"]  # asked again: the same agent, as chosen now
    assert relisted["id"] == listed["id"] and relisted["policy"] == "ask"
    revoked = await flow.agent.post(
        flow.meta["revocation_endpoint"],
        data={"client_id": client["client_id"], "token": fresh["access_token"]},
    )
    assert revoked.status_code == 200, revoked.text
    refused = await flow.agent.post(
        f"{server_url}mcp", json=PING, headers={**ACCEPT, "Authorization": f"Bearer {fresh['access_token']}"}
    )
    assert refused.status_code == 401


async def test_a_refresh_retires_the_access_token_it_replaces(server_url, flow, person):
    """An agent refreshing in a loop holds one working access token, the newest, not one per refresh."""
    client = await flow.register()
    got = await flow.tokens(person, client)
    accesses, refresh = [got["access_token"]], got["refresh_token"]
    for _ in range(5):
        answer = await flow.token(client, grant_type="refresh_token", refresh_token=refresh)
        assert answer.status_code == 200, answer.text
        accesses.append(answer.json()["access_token"])
        refresh = answer.json()["refresh_token"]

    async def opens(token: str) -> int:
        headers = {**RAW_HEADERS, "Authorization": f"Bearer {token}"}
        return (await flow.agent.post(f"{server_url}mcp", json=RAW_INITIALIZE, headers=headers)).status_code

    assert [await opens(t) for t in accesses] == [401] * 5 + [200]


async def test_the_consent_page_names_the_client_and_cannot_be_framed(server_url, flow, person):
    client = await flow.register(
        client_name="<b>Evil</b> Co", redirect_uris=["https://agents.example.com/cb"]
    )
    _, challenge = pkce()
    started = await flow.authorize(client, challenge, redirect_uri="https://agents.example.com/cb")
    page = await person.get(urljoin(server_url, started.headers["location"]))
    assert page.status_code == 200
    assert "&lt;b&gt;Evil&lt;/b&gt; Co" in page.text and "<b>Evil</b>" not in page.text
    assert "agents.example.com" in page.text and "not on this computer" in page.text
    assert page.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    loopback = await flow.register()
    started = await flow.authorize(loopback, challenge)
    page = await person.get(urljoin(server_url, started.headers["location"]))
    assert "not on this computer" not in page.text and "Test Agent" in page.text


async def test_deny_sends_an_error_and_no_code(server_url, flow, person):
    client = await flow.register()
    _, challenge = pkce()
    started = await flow.authorize(client, challenge)
    back = await flow.consent(person, urljoin(server_url, started.headers["location"]), decision="deny")
    answer = query(back.headers["location"])
    assert back.headers["location"].startswith(REDIRECT)
    assert answer["error"] == "access_denied" and "code" not in answer and answer["state"] == "st4te"


# --- bad input ---------------------------------------------------------------------------------


async def test_an_unregistered_or_changed_redirect_uri_gets_nothing(flow, person, server_url):
    client = await flow.register()
    _, challenge = pkce()
    elsewhere = await flow.authorize(client, challenge, redirect_uri="http://127.0.0.1:9/steal")
    assert elsewhere.status_code == 400 and "location" not in elsewhere.headers
    page = refusal(elsewhere)  # a person's browser: a page that says why, and nothing sent anywhere
    assert page["kind"] == "redirect" and "not registered" in page["message"]
    verifier, challenge = pkce()
    code = await flow.code(person, client, challenge)
    changed = await flow.token(
        client,
        grant_type="authorization_code",
        code=code,
        code_verifier=verifier,
        redirect_uri=REDIRECT + "x",
    )
    assert changed.status_code == 400
    # The code was burnt by the failed attempt: the right redirect_uri does not revive it.
    retry = await flow.token(
        client, grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=REDIRECT
    )
    assert retry.status_code == 400 and "access_token" not in retry.text


async def test_missing_or_plain_pkce_gets_no_code(flow):
    client = await flow.register()
    for extra in ({}, {"code_challenge": "abc", "code_challenge_method": "plain"}):
        response = await flow.authorize(client, None, **extra)
        assert response.status_code == 302
        answer = query(response.headers["location"])
        assert response.headers["location"].startswith(REDIRECT)  # registered: the client hears why
        assert answer["error"] == "invalid_request" and "code" not in answer


async def test_a_wrong_verifier_a_replayed_code_and_an_expired_code_get_no_token(
    flow, person, monkeypatch, server_url, panel
):
    client = await flow.register()
    verifier, challenge = pkce()
    code = await flow.code(person, client, challenge)
    wrong = await flow.token(
        client, grant_type="authorization_code", code=code, code_verifier=pkce()[0], redirect_uri=REDIRECT
    )
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    burnt = await flow.token(
        client, grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=REDIRECT
    )
    assert burnt.status_code == 400  # the code does not survive a wrong verifier

    verifier, challenge = pkce()
    code = await flow.code(person, client, challenge)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": REDIRECT,
    }
    first = await flow.token(client, **form)
    assert first.status_code == 200
    replay = await flow.token(client, **form)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    refused = await flow.agent.post(
        f"{server_url}mcp",
        json=PING,
        headers={**ACCEPT, "Authorization": f"Bearer {first.json()['access_token']}"},
    )
    assert refused.status_code == 401  # a replay revokes what the code made
    assert (await panel.get("agents"))["agents"] == []

    monkeypatch.setattr(provider, "CODE_LIFETIME", 0.2)
    verifier, challenge = pkce()
    code = await flow.code(person, client, challenge)
    await asyncio.sleep(0.5)
    expired = await flow.token(
        client, grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=REDIRECT
    )
    assert expired.status_code == 400 and "expired" in expired.json()["error_description"]


async def test_a_token_for_another_resource_is_not_issued(flow, server_url):
    """Another server's MCP URL is refused by its whole URL, not by its path: the client is told which
    resource this server answers for."""
    client = await flow.register()
    _, challenge = pkce()
    for other in ("http://127.0.0.1:1/other/mcp", "https://evil.example" + urlsplit(server_url).path + "mcp"):
        response = await flow.authorize(client, challenge, resource=other)
        answer = query(response.headers["location"])
        assert answer["error"] == "invalid_target" and "code" not in answer, answer
        assert f"{server_url}mcp" in answer["error_description"], answer
    same = await flow.authorize(
        client, challenge, resource=f"{server_url}mcp/"
    )  # a trailing slash is the same
    assert "/oauth/consent?request=" in same.headers["location"], same.headers


async def test_token_and_refresh_requests_naming_another_resource_get_no_token(flow, person, server_url):
    client = await flow.register()
    verifier, challenge = pkce()
    code = await flow.code(person, client, challenge)
    elsewhere = await flow.token(
        client,
        grant_type="authorization_code",
        code=code,
        code_verifier=verifier,
        redirect_uri=REDIRECT,
        resource="https://evil.example/somewhere",
    )
    assert elsewhere.status_code == 400 and elsewhere.json()["error"] == "invalid_target", elsewhere.text
    assert f"{server_url}mcp" in elsewhere.json()["error_description"]

    got = await flow.tokens(person, client)
    refresh = {"grant_type": "refresh_token", "refresh_token": got["refresh_token"]}
    refused = await flow.token(client, **refresh, resource="https://evil.example/mcp")
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_target", refused.text
    here = await flow.token(client, **refresh, resource=f"{server_url}mcp")  # not spent by the refusal
    assert here.status_code == 200, here.text


async def test_registration_is_bounded(flow):
    too_big = {"client_name": "x", "redirect_uris": [REDIRECT], "software_statement": "y" * 20_000}
    response = await flow.agent.post(flow.meta["registration_endpoint"], json=too_big)
    assert response.status_code == 413
    for bad in (
        b"{not json",
        json.dumps({"redirect_uris": ["javascript:alert(1)"]}).encode(),
        json.dumps({"redirect_uris": ["http://attacker.example/cb"]}).encode(),
        json.dumps({"redirect_uris": [REDIRECT] * 11}).encode(),
        json.dumps({"client_name": "n" * 101, "redirect_uris": [REDIRECT]}).encode(),
        json.dumps({"redirect_uris": []}).encode(),
    ):
        response = await flow.agent.post(
            flow.meta["registration_endpoint"], content=bad, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 400, (bad, response.status_code)
        assert "client_id" not in response.json()
    statuses = [
        (
            await flow.agent.post(flow.meta["registration_endpoint"], json={"redirect_uris": [REDIRECT]})
        ).status_code
        for _ in range(provider.REGISTRATIONS_PER_MINUTE + 5)
    ]
    assert statuses.count(201) <= provider.REGISTRATIONS_PER_MINUTE and statuses[-1] == 400


async def test_consent_without_xsrf_or_login_makes_no_code(server_url, flow, person):
    client = await flow.register()
    _, challenge = pkce()
    started = await flow.authorize(client, challenge)
    consent_url = urljoin(server_url, started.headers["location"])
    request_id = query(consent_url)["request"]
    forged = await person.post(
        consent_url.split("?")[0], data={"request": request_id, "decision": "allow", "policy": "full"}
    )
    assert forged.status_code == 403 and "location" not in forged.headers
    async with httpx.AsyncClient(follow_redirects=False) as stranger:
        page = await stranger.get(consent_url)
        assert page.status_code == 302 and "/login" in page.headers["location"]
        posted = await stranger.post(
            consent_url.split("?")[0], data={"request": request_id, "decision": "allow"}
        )
        assert posted.status_code == 403 and "code=" not in posted.headers.get("location", "")
    back = await flow.consent(person, consent_url)  # the person can still answer it
    assert "code" in query(back.headers["location"])


@pytest.mark.parametrize("authorizer_class", [NoExecute])
async def test_an_agent_never_gets_more_than_its_person(server_url, flow, person, make_notebook):
    path = make_notebook("n.ipynb", cells=["x = 1"])
    client = await flow.register()
    got = await flow.tokens(person, client, policy="full")  # "full", but its person may not run code
    async with connect(server_url, {"Authorization": f"Bearer {got['access_token']}"}) as agent:
        await ok(agent, "insert_cells", path=path, cells=[{"source": "y = 2"}])
        assert "execute" in await fails(agent, "execute_code", path=path, code="print(1)")


@pytest.mark.parametrize("oauth", [False])
async def test_with_oauth_off_the_server_answers_as_before(server_url, panel):
    async with httpx.AsyncClient() as http:
        refused = await http.post(f"{server_url}mcp", json=PING, headers=ACCEPT)
        message = refused.json()["error"]["message"]
        assert refused.status_code == 403 and "needs an agent token" in message
        assert "jupyter mcp token create" in message and "Authorization: token" not in message
        assert "WWW-Authenticate" not in refused.headers
        for path in (".well-known/oauth-protected-resource/mcp", "oauth/.well-known/openid-configuration"):
            answer = await http.get(server_url + path)  # no route: Jupyter's own 403/404 for strangers
            assert answer.status_code in (403, 404) and "authorization_servers" not in answer.text, path
        registered = await http.post(f"{server_url}oauth/register", json={"redirect_uris": [REDIRECT]})
        assert registered.status_code in (403, 404) and "client_id" not in registered.text
    made = await panel.post("agents", {"name": "script", "policy": "ask"}, status=201)  # tokens still work
    async with connect(server_url, {"Authorization": f"Bearer {made['token']}"}) as agent:
        await ok(agent, "list_files")
