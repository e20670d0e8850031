"""Client ID metadata documents (SEP-991): a client whose client_id is the URL of its description.

The documents are served by a real web server of the test's own on loopback (the server is set to
``https+loopback``, as only a test may be); a bad document, or one the address rules refuse, leaves
no code and no consent page, and the client is told what was wrong.
"""

from __future__ import annotations

import json
from urllib.parse import urljoin

import pytest
from tornado import web
from traitlets.config import Config

from jupyter_mcp_ext.auth.client_documents import MAX_BYTES, ClientDocumentError, ClientDocuments, _allowed

from ..hub.harness import free_port
from ..support.mcp_client import connect, ok
from ..support.oauth_flow import REDIRECT, person_logged_in, pkce, refusal


@pytest.fixture
def documents_mode() -> str:
    return "https+loopback"


@pytest.fixture
def jp_server_config(jp_server_config: Config, documents_mode: str) -> Config:
    jp_server_config.MCPExtensionApp.oauth_client_documents = documents_mode
    return jp_server_config


class Documents(web.RequestHandler):
    """What a client publishes; each path a different document, good or bad."""

    def initialize(self, hits: dict[str, int]) -> None:
        self.hits = hits

    def get(self, name: str) -> None:
        self.hits[name] = self.hits.get(name, 0) + 1
        me = self.request.full_url()
        good = {"client_id": me, "client_name": "Published Host", "redirect_uris": [REDIRECT]}
        self.set_header("Content-Type", "application/json")
        if name == "good":
            self.finish(json.dumps(good))
        elif name == "wrong-id":
            self.finish(json.dumps({**good, "client_id": "https://elsewhere.example/client.json"}))
        elif name == "oversized":
            self.finish(json.dumps({**good, "padding": "x" * (MAX_BYTES + 10)}))
        elif name == "not-json":
            self.finish("<html>a web page</html>")
        elif name == "secret":
            self.finish(json.dumps({**good, "token_endpoint_auth_method": "client_secret_basic"}))
        elif name == "remote-http-redirect":
            self.finish(json.dumps({**good, "redirect_uris": ["http://evil.example/cb"]}))
        elif name == "moved":
            self.redirect("http://10.0.0.1/client.json")
        else:
            raise web.HTTPError(404)


@pytest.fixture
async def publisher():
    hits: dict[str, int] = {}
    port = free_port()
    server = web.Application([(r"/clients/([a-z-]+)\.json", Documents, {"hits": hits})]).listen(
        port, "127.0.0.1"
    )
    try:
        yield f"http://127.0.0.1:{port}/clients/", hits
    finally:
        server.stop()


async def test_a_published_client_is_fetched_once_named_with_its_host_and_gets_a_token(
    server_url, jp_auth_header, flow, publisher
):
    base, hits = publisher
    assert flow.meta["client_id_metadata_document_supported"] is True
    client = {"client_id": f"{base}good.json"}
    verifier, challenge = pkce()
    async with person_logged_in(server_url, jp_auth_header["Authorization"].split()[-1]) as person:
        started = await flow.authorize(client, challenge)
        assert started.status_code == 302, started.text
        consent_url = urljoin(server_url, started.headers["location"])
        page = (await person.get(consent_url)).text
        assert 'id="client-name">Published Host<' in page
        assert f'id="client-host">{base.split("/")[2]}<' in page
        code = await flow.code(person, client, challenge)
    got = await flow.token(
        client, grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=REDIRECT
    )
    assert got.status_code == 200, got.text
    assert hits == {"good": 1}  # authorize twice and the token exchange: one fetch, then the cache
    async with connect(server_url, {"Authorization": f"Bearer {got.json()['access_token']}"}) as mcp:
        await ok(mcp, "list_files")


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("wrong-id", "client_id must be its own URL"),
        ("oversized", f"larger than {MAX_BYTES} bytes"),
        ("not-json", "is not JSON"),
        ("secret", "has no secret"),
        ("remote-http-redirect", "use https, http to 127.0.0.1"),
        ("moved", "redirects are not followed"),
        ("missing", "answered 404"),
    ],
)
async def test_a_bad_document_gets_no_consent_page_and_says_why(flow, publisher, name, why):
    base, _ = publisher
    _, challenge = pkce()
    refused = await flow.authorize({"client_id": f"{base}{name}.json"}, challenge)
    assert refused.status_code == 400 and "location" not in refused.headers
    page = refusal(refused)
    assert page["kind"] == "document" and why in page["message"]


async def test_a_redirect_uri_the_document_does_not_list_gets_nothing(flow, publisher):
    base, _ = publisher
    _, challenge = pkce()
    refused = await flow.authorize(
        {"client_id": f"{base}good.json"}, challenge, redirect_uri="http://127.0.0.1:9/elsewhere"
    )
    assert refused.status_code == 400 and "location" not in refused.headers
    page = refusal(refused)
    assert page["kind"] == "redirect" and "not registered for client" in page["message"]


async def test_the_token_endpoint_knows_no_client_whose_document_is_bad(flow, publisher):
    base, _ = publisher
    got = await flow.token({"client_id": f"{base}wrong-id.json"}, grant_type="authorization_code", code="x")
    assert got.status_code == 401 and "access_token" not in got.text


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://example.com/client.json", "must be https"),
        ("http://127.0.0.1:9/client.json", "must be https"),  # loopback http only where the setting says
        ("https://example.com/", "must have a path"),
        ("https://example.com/c.json#x", "no fragment"),
        ("https://user@example.com/c.json", "no fragment or user name"),
        ("https://127.0.0.1:9/client.json", "not a public address"),
        ("https://localhost:9/client.json", "not a public address"),
        ("https://[::ffff:10.0.0.1]:9/client.json", "not a public address"),
    ],
)
async def test_the_server_never_fetches_from_a_private_address_or_without_tls(url, why):
    """An outsider names the URL: what the server refuses before any request leaves it."""
    with pytest.raises(ClientDocumentError, match=why):
        await ClientDocuments("https").get(url)


def test_which_addresses_count_as_public():
    assert _allowed("93.184.215.14", False) and _allowed("2606:4700::1111", False)
    for private in (
        *("10.1.2.3", "192.168.0.1", "169.254.169.254", "100.64.0.1", "::1", "fe80::1%eth0", "0.0.0.0"),
        *("::ffff:10.0.0.1", "64:ff9b::a00:1", "2002:a00:1::1", "::10.0.0.1", "ff02::1", "224.0.0.1"),
    ):
        assert not _allowed(private, False), private
    assert _allowed("127.0.0.1", True) and not _allowed("10.1.2.3", True)


@pytest.mark.parametrize("documents_mode", ["off"])
async def test_with_documents_off_none_is_fetched(flow, publisher):
    base, hits = publisher
    assert "client_id_metadata_document_supported" not in flow.meta
    _, challenge = pkce()
    refused = await flow.authorize({"client_id": f"{base}good.json"}, challenge)
    assert refused.status_code == 400 and "does not accept client ID metadata documents" in refused.text
    assert hits == {}
