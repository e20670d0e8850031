"""What a person's browser shows during an agent's sign-in: Jupyter pages, never raw JSON.

Every refusal a browser can land on (an unknown client, a return address the agent never registered,
an expired or replayed request, no login, a forged form) is a page of this server that says what
happened and what to do next, and cannot be framed; the endpoints programs read still answer JSON.
The consent page says how the agent's name is known, shows invisible characters in it, and when the
agent asks again, says what it holds and preselects that.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode, urljoin

import httpx
import pytest
from playwright.async_api import Page, async_playwright, expect
from tornado import web
from traitlets.config import Config

from ..auth.test_oauth_client_documents import Documents
from ..hub.harness import free_port
from ..support.browser import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS
from ..support.oauth_flow import REDIRECT, Flow, pkce, query, refusal
from ..support.shots import place


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    jp_server_config.MCPExtensionApp.oauth = True
    jp_server_config.MCPExtensionApp.oauth_client_documents = "https+loopback"  # the test's publisher
    return jp_server_config


@pytest.fixture
async def publisher():
    """A client's own site, on loopback, publishing its description (``good.json``)."""
    port = free_port()
    server = web.Application([(r"/clients/([a-z-]+)\.json", Documents, {"hits": {}})]).listen(
        port, "127.0.0.1"
    )
    try:
        yield f"http://127.0.0.1:{port}/clients/"
    finally:
        server.stop()


# A client ID URL under a name that never resolves: its description cannot be fetched, anywhere.
UNREACHABLE = "https://host.invalid/agent/client.json"


def checked(page: str) -> str:
    """The policy the consent page has chosen before the person touches it."""
    (value,) = re.findall(r'<input type="radio"[^>]*value="([^"]+)" checked', page)
    return value


def assert_framing_refused(response: httpx.Response) -> None:
    assert response.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["Cache-Control"] == "no-store"
    assert "Access-Control-Allow-Origin" not in response.headers


async def started(flow: Flow, client: dict[str, Any], **extra: str) -> str:
    _, challenge = pkce()
    response = await flow.authorize(client, challenge, **extra)
    assert response.status_code == 302, response.text
    return urljoin(flow.server_url, response.headers["location"])


async def test_every_refusal_a_browser_sees_is_a_jupyter_page_that_says_what_to_do(server_url, flow, person):
    _, challenge = pkce()
    unknown = await flow.authorize({"client_id": "not-registered-here"}, challenge)
    page = refusal(unknown)
    assert unknown.status_code == 400 and page["kind"] == "unknown-client"
    assert page["title"] == "This agent is not known to this server"
    assert "jupyter mcp token create --name" in unknown.text  # the way in that needs no sign-in
    assert "static/logo/logo.png" in unknown.text  # Jupyter Server's own page, logo and all
    assert_framing_refused(unknown)

    client = await flow.register()
    elsewhere = await flow.authorize(client, challenge, redirect_uri="http://127.0.0.1:9/steal")
    assert elsewhere.status_code == 400 and "location" not in elsewhere.headers
    assert refusal(elsewhere)["kind"] == "redirect" and "close this tab" in elsewhere.text

    incomplete = await flow.agent.get(flow.meta["authorization_endpoint"], params={"response_type": "code"})
    assert incomplete.status_code == 400 and refusal(incomplete)["kind"] == "request"

    consent_url = await started(flow, client)
    gone = await person.get(consent_url.split("?")[0] + "?request=no-such-request")
    assert gone.status_code == 400 and refusal(gone)["kind"] == "expired"
    assert_framing_refused(gone)

    forged = await person.post(consent_url.split("?")[0], data={"request": query(consent_url)["request"]})
    assert forged.status_code == 403 and refusal(forged)["kind"] == "xsrf"
    async with httpx.AsyncClient(follow_redirects=False) as stranger:
        await stranger.get(f"{server_url}login")  # Jupyter's XSRF cookie, as a browser would hold
        xsrf = stranger.cookies["_xsrf"]
        not_logged_in = await stranger.post(
            consent_url.split("?")[0],
            data={"_xsrf": xsrf, "request": query(consent_url)["request"], "decision": "allow"},
        )
    assert not_logged_in.status_code == 403 and refusal(not_logged_in)["kind"] == "login"
    assert "Log in to JupyterLab" in not_logged_in.text

    answered = await flow.consent(person, consent_url)
    assert answered.status_code == 302
    form = {"_xsrf": person.cookies["_xsrf"], "request": query(consent_url)["request"], "decision": "allow"}
    replayed = await person.post(consent_url.split("?")[0], data=form)
    assert replayed.status_code == 400 and refusal(replayed)["kind"] == "expired"

    # What programs read stays JSON.
    bad_token = await flow.token(client, grant_type="authorization_code", code="nope", code_verifier="x" * 43)
    assert bad_token.status_code == 400 and bad_token.json()["error"] == "invalid_grant"
    bad_registration = await flow.agent.post(flow.meta["registration_endpoint"], json={"redirect_uris": []})
    assert bad_registration.status_code == 400 and "error" in bad_registration.json()


async def test_a_name_with_bidi_or_invisible_characters_is_escaped_and_shown(server_url, flow, person):
    client = await flow.register(client_name="<img src=x>\u202eevil\u200bbot")
    page = (await person.get(await started(flow, client))).text
    name = re.search(r'id="client-name">(.*?)</span>\s*asks', page, re.S).group(1)
    assert name.startswith("&lt;img src=x&gt;") and "<img src=x>" not in page
    assert "⟨U+202E⟩" in name and "⟨U+200B⟩" in name and "evil" in name
    assert "\u202e" not in page and "\u200b" not in page  # nothing reaches the page to reverse its text
    assert 'id="hidden-characters"' in page  # and the person is told what the marks mean


async def test_asking_again_preselects_what_the_agent_holds_and_marks_wider_choices(
    server_url, flow, person, panel
):
    client = await flow.register()
    first = await person.get(await started(flow, client))
    assert checked(first.text) == "ask" and 'id="held"' not in first.text  # new: the default

    await flow.tokens(person, client, policy="read-only")
    again = await person.get(await started(flow, client))
    assert checked(again.text) == "read-only"
    assert re.search(r'id="held-policy">Read only<', again.text)
    widening = re.findall(
        r'id="policy-([a-z-]+)"[^<]*<b>[^<]*</b>[^<]*<span class="mcp-tag widens">', again.text
    )
    assert widening == ["ask", "full"]

    # The person clicks Allow without touching the choice: the form sends what the page chose.
    verifier, challenge = pkce()
    consent_url = urljoin(server_url, (await flow.authorize(client, challenge)).headers["location"])
    page = await person.get(consent_url)
    form = {
        "_xsrf": re.search(r'name="_xsrf" value="([^"]+)"', page.text).group(1),
        "request": query(consent_url)["request"],
        "decision": "allow",
        "policy": checked(page.text),
    }
    allowed = await person.post(consent_url.split("?")[0], data=form)
    code = query(allowed.headers["location"])["code"]
    exchanged = await flow.token(
        client, grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=REDIRECT
    )
    assert exchanged.status_code == 200, exchanged.text
    (agent,) = (await panel.get("agents"))["agents"]
    assert agent["policy"] == "read-only"  # not widened by asking again


async def test_the_page_says_how_the_agents_name_is_known(server_url, jp_serverapp, flow, person, publisher):
    registered = (await person.get(await started(flow, await flow.register()))).text
    assert 'data-status="registered"' in registered and "registered" in registered
    assert 'id="client-host"' not in registered

    verified = (await person.get(await started(flow, {"client_id": f"{publisher}good.json"}))).text
    assert 'data-status="verified"' in verified
    assert re.search(r'id="client-host">127\.0\.0\.1:\d+<', verified)

    # A client whose description cannot be fetched (no such host), its answer going to this computer.
    unverified = (await person.get(await started(flow, {"client_id": UNREACHABLE}))).text
    assert 'data-status="unverified"' in unverified and "could not be checked" in unverified
    assert 'id="client-host"' not in unverified and "describes itself at" not in unverified


def brightness(css_color: str) -> int:
    """The sum of a computed ``rgb(...)`` colour's channels: 0 black, 765 white."""
    return sum(int(c) for c in re.findall(r"\d+", css_color)[:3])


async def snapshot(page: Page, scheme: str, name: str) -> str:
    """Check the page is in ``scheme``'s colours with Jupyter's logo, and keep a screenshot of it."""
    body = await page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert (brightness(body) < 150) if scheme == "dark" else (brightness(body) > 600), body
    await expect(page.locator("#jupyter_server img")).to_be_visible()  # Jupyter Server's own header
    path = place(f"{name}-{scheme}")
    await page.screenshot(path=str(path), full_page=True)
    print("screenshot:", path)
    return str(path)


async def allow_in(page: Page, flow: Flow, client: dict[str, Any], policy: str) -> None:
    """The person allows ``client`` with ``policy`` in ``page``; the agent exchanges its code."""
    verifier, challenge = pkce()
    response = await flow.authorize(client, challenge)
    answers: list[str] = []

    async def caught(route: Any) -> None:  # the agent host's loopback listener, in effect
        answers.append(route.request.url)
        await route.fulfill(status=200, body="You may close this tab.")

    await page.route(REDIRECT + "*", caught)
    await page.goto(urljoin(flow.server_url, response.headers["location"]))
    await page.locator(f"#policy-{policy}").check()
    await page.locator("#allow").click()
    await expect(page.locator("body")).to_have_text("You may close this tab.")
    await page.unroute(REDIRECT + "*")
    code = query(answers[0])["code"]
    got = await flow.token(
        client, grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=REDIRECT
    )
    assert got.status_code == 200, got.text


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_the_sign_in_pages_read_well_in_light_and_dark(
    server_url, jp_serverapp, jp_auth_header, flow, publisher, scheme
):
    """The person's Chromium in ``scheme``: the consent page for a self-registered agent (a U+202E in
    its name), a verified and an unverified one, one asking again, and a refusal; each kept as a
    screenshot (``tests/support/shots.py``)."""
    token = jp_auth_header["Authorization"].split()[-1]
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(color_scheme=scheme, viewport={"width": 960, "height": 760})
            page = await context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            await page.goto(f"{server_url}api/status?token={token}")  # logged in to Jupyter

            registered = await flow.register(client_name="Report Bot \u202eevil.exe")
            await page.goto(await started(flow, registered))
            await expect(page.locator("#client-name")).to_have_text("Report Bot ⟨U+202E⟩evil.exe")
            await expect(page.locator("#name-status")).to_contain_text("registered itself as")
            await expect(page.locator("#hidden-characters")).to_be_visible()
            await expect(page.locator("#policy-ask")).to_be_checked()
            await snapshot(page, scheme, "consent-registered")

            await page.goto(await started(flow, {"client_id": f"{publisher}good.json"}))
            await expect(page.locator("#client-name")).to_have_text("Published Host")
            await expect(page.locator("#name-status")).to_contain_text("It describes itself at 127.0.0.1:")
            await snapshot(page, scheme, "consent-verified")

            await page.goto(await started(flow, {"client_id": UNREACHABLE}))
            await expect(page.locator("#name-status")).to_contain_text(
                "Its name and site could not be checked"
            )
            await expect(page.locator("#client-host")).to_have_count(0)
            await expect(page.locator("#unverified-tag")).to_have_text("unverified")
            await snapshot(page, scheme, "consent-unverified")

            holder = await flow.register(client_name="Notebook Helper")
            await allow_in(page, flow, holder, "read-only")  # this person let it in, read only
            await page.goto(await started(flow, holder))  # and it asks again
            await expect(page.locator("#held")).to_contain_text("It already holds access here: Read only")
            await expect(page.locator("#policy-read-only")).to_be_checked()
            await expect(page.locator("label[for=policy-full] .widens")).to_have_text("widens")
            await snapshot(page, scheme, "consent-asking-again")

            forgotten = {"client_id": "forgotten", "redirect_uri": REDIRECT, "response_type": "code"}
            forgotten |= {"code_challenge": pkce()[1], "code_challenge_method": "S256"}
            await page.goto(f"{flow.meta['authorization_endpoint']}?{urlencode(forgotten)}")
            await expect(page.locator("#error-title")).to_have_text("This agent is not known to this server")
            await expect(page.locator("#error-next")).to_contain_text("jupyter mcp token create")
            await snapshot(page, scheme, "error-unknown-client")

            missing = {**forgotten, "client_id": f"{publisher}missing.json"}  # its site answers 404
            await page.goto(f"{flow.meta['authorization_endpoint']}?{urlencode(missing)}")
            await expect(page.locator("#error-title")).to_have_text(
                "This agent's description could not be used"
            )
            await expect(page.locator("#error-message")).to_contain_text("answered 404")
            await snapshot(page, scheme, "error-document")
        finally:
            await browser.close()
