"""A lab with Jupyter's auth turned off (``--IdentityProvider.token=''``, common in containers): its
log says the MCP endpoint needs no credentials, and a command-line host gets in; a web page on
another site, which a browser sends with its ``Origin``, still runs nothing there."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.async_api import Response
from tornado import web

from ..auth.test_refusal_keeps_connection import answer
from ..hub.harness import free_port
from .hosts import SERVER, ClaudeCode, Codex, Host
from .lab import Lab, lab_on
from .person import person_in

pytestmark = pytest.mark.timeout(300)

HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "page", "version": "1"}}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO}
RUN = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "execute_code", "arguments": {"code": "open('ran.txt', 'w').write('ran')"}},
}
STREAMS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("auth-off")


@pytest.fixture(scope="module")
def lab(root: Path) -> Iterator[Lab]:
    with lab_on(root, token="") as running:
        log = next(root.glob("server-*.log")).read_text()
        assert "MCP endpoint:" in log and "no credentials needed" in log, log
        print(f"lab started in {running.started_in:.1f} s")
        yield running


@pytest.mark.parametrize("host", [ClaudeCode], indirect=True, ids=["claude"])
async def test_claude_code_connects_to_a_lab_without_auth(lab: Lab, host: Host):
    await host.add(lab.mcp)
    assert await host.status() == "Connected"


@pytest.mark.parametrize("host", [Codex], indirect=True, ids=["codex"])
async def test_codex_is_added_without_a_sign_in_nobody_needs(lab: Lab, host: Host):
    """Codex starts a sign-in when the server publishes OAuth discovery; without auth there is no
    person to ask, so none is published."""
    out = await host.run("mcp", "add", SERVER, "--url", lab.mcp)
    assert "Added" in out and "authorize" not in out.lower()
    async with httpx.AsyncClient(timeout=30) as http:
        found = await http.get(f"{lab.url}.well-known/oauth-protected-resource/mcp")
        assert found.status_code == 404


async def _post(url: str, **kwargs: object) -> httpx.Response:
    """One request on a connection of its own: a refusal made before the body is read ends its
    connection, and a pooled client could send the next request on it."""
    async with httpx.AsyncClient(timeout=30, headers=STREAMS) as http:
        return await http.post(url, **kwargs)


async def test_a_program_s_json_gets_in_and_a_page_s_origin_is_refused_saying_why(lab: Lab):
    program = await _post(lab.mcp, json=INITIALIZE)
    assert program.status_code == 200, program.text
    page = await _post(lab.mcp, json=INITIALIZE, headers={"Origin": "http://elsewhere.example"})
    assert page.status_code == 403
    message = page.json()["error"]["message"]
    assert "web page at http://elsewhere.example is refused" in message and "allow_origin" in message
    # What a page may send without asking first (text/plain) is not a program's request.
    plain = await _post(lab.mcp, content=json.dumps(INITIALIZE), headers={"Content-Type": "text/plain"})
    assert plain.status_code == 403 and "_xsrf" in plain.text


# The other site's page: a no-cors fetch and a form, each a tool call dressed as text, posted to the lab.
ATTACK = """<!doctype html><title>cat pictures</title>
<form id="form" method="post" enctype="text/plain" action="{mcp}">
<input type="hidden" name='{{"jsonrpc":"2.0","id":3,"x":"' value='","method":"initialize","params":{hello}}}'>
</form>
<script>
const send = (body) => fetch("{mcp}", {{method: "POST", mode: "no-cors",
  headers: {{"Content-Type": "text/plain", "Accept": "application/json, text/event-stream"}}, body}});
Promise.allSettled([send({initialize}), send({run})]).then(() => {{
  document.title = "sent"; document.getElementById("form").submit(); }});
</script>"""


class Attack(web.RequestHandler):
    def initialize(self, page: str) -> None:
        self.page = page

    def get(self) -> None:
        self.finish(self.page)


@pytest.fixture
async def other_site(lab: Lab) -> AsyncIterator[str]:
    page = ATTACK.format(
        mcp=lab.mcp,
        hello=json.dumps(HELLO),
        initialize=json.dumps(json.dumps(INITIALIZE)),
        run=json.dumps(json.dumps(RUN)),
    )
    port = free_port()
    server = web.Application([(r"/", Attack, {"page": page})]).listen(port, "127.0.0.1")
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.stop()


async def test_a_page_on_another_site_runs_nothing_in_the_lab(lab: Lab, root: Path, other_site: str):
    answers: list[Response] = []

    async def nobody(page) -> None:  # the person just browses; no login exists on this lab
        pass

    async with person_in(nobody) as person:
        person.page.on("response", lambda r: answers.append(r) if r.url == lab.mcp else None)
        async with person.page.expect_navigation(url=lab.mcp):  # the form's post, after both fetches
            await person.page.goto(other_site)
    assert len(answers) == 3 and {r.status for r in answers} == {403}, [
        (r.request.method, r.status) for r in answers
    ]
    async with lab.panel() as panel:
        assert (await panel.get("sessions")).json()["sessions"] == []  # not even a session was opened
    assert not list(root.glob("**/ran.txt"))


async def test_a_refused_page_s_request_leaves_its_connection_open(lab: Lab):
    """As for a request without credentials (tests/auth/test_refusal_keeps_connection.py): answered once
    its small body is read, the connection stays open for the next request."""
    where = urlsplit(lab.url)
    reader, writer = await asyncio.open_connection(where.hostname, where.port)
    try:
        body = json.dumps(INITIALIZE)
        head = f"Host: {where.netloc}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        writer.write(f"POST /mcp HTTP/1.1\r\n{head}Origin: http://elsewhere.example\r\n\r\n{body}".encode())
        assert (await answer(reader))[0] == 403
        writer.write(f"GET /api/status HTTP/1.1\r\nHost: {where.netloc}\r\n\r\n".encode())
        assert (await answer(reader))[0] == 200  # on the same connection
    finally:
        writer.close()
