"""Every user of a JupyterHub gets an agent endpoint at /user/<name>/mcp, and its tokens' scopes hold.

One real Hub for the module (DummyAuthenticator, SimpleLocalProcessSpawner, configurable-http-proxy),
alice's server spawned with this extension and ``ScopedHubAuthorizer``; every request goes through
the Hub's proxy with a Hub API token, as an agent's would.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urljoin

import anyio
import httpx
import nbformat
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation

from jupyter_mcp_ext.agents.directory import AgentDirectory, person_of

from ..support.mcp_client import STATELESS, call, connect, fails, ok, text
from ..support.oauth_flow import REDIRECT, Flow, pkce, query
from ..support.yclient import YPeer
from .harness import Hub, find_proxy

pytest.importorskip("jupyterhub", reason="the test extra installs JupyterHub")

from ..support.mcp_client import RAW_HEADERS, RAW_INITIALIZE

pytestmark = pytest.mark.timeout(300)

ACCESS = "access:servers!server=alice/"
READ, WRITE, EXECUTE = (
    f"custom:jupyter_server:{action}:*!server=alice/" for action in ("read", "write", "execute")
)
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
INITIALIZE = RAW_INITIALIZE
HEADERS = RAW_HEADERS


@dataclass
class Site:
    """alice's server as seen through the proxy, and the tokens handed out for it."""

    hub: Hub
    url: str  # http://127.0.0.1:<proxy>/user/alice/
    home: Path
    tokens: dict[str, str]

    def auth(self, who: str, scheme: str = "token") -> dict[str, str]:
        return {"Authorization": f"{scheme} {self.tokens[who]}"}


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    proxy, why = find_proxy()
    if proxy is None:
        pytest.skip(why)
    hub = Hub(tmp_path_factory.mktemp("hub"), proxy)
    try:
        hub.start()
        yield hub
    finally:
        hub.stop()


@pytest.fixture(scope="module")
def site(hub: Hub) -> Site:
    for name in ("alice", "bob", "carol", "dave"):
        hub.add_user(name)
    home = hub.home("alice")
    home.mkdir(parents=True, exist_ok=True)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 21")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, home / "shared.ipynb")
    (home / "notes.txt").write_text("agents read this\n")
    url = hub.start_server("alice")
    tokens = {
        "full": hub.token("alice"),  # what the token page or `POST .../tokens` gives by default
        "read": hub.token("alice", [ACCESS, READ], note="read-only agent"),
        "write": hub.token("alice", [ACCESS, WRITE], note="write, no execute"),
        "carol": hub.token("carol"),
        "access-only": hub.token("alice", [ACCESS], note="no custom scope"),
    }
    # alice shares her server with bob (JupyterHub 5 shares), allowing read and write but not execute.
    # Each scope is listed: the Hub does not expand a share's subscopes for bob's tokens (6.1).
    share = hub.api(
        "POST",
        "shares/alice/",
        token=tokens["full"],
        json={
            "user": "bob",
            "scopes": ["access:servers", *(f"custom:jupyter_server:{a}:*" for a in ("read", "write"))],
        },
    )
    assert share.status_code == 200, share.text
    tokens["share"] = hub.token("bob", [ACCESS, READ, WRITE], note="bob's agent on alice's server")
    return Site(hub, url, home, tokens)


# What each token may do: read, write (contents), execute (kernels).
ALLOWED = {
    "full": {"read", "write", "execute"},
    "read": {"read"},
    "write": {"read", "write"},
    "share": {"read", "write"},
}
USER = {"full": "alice", "read": "alice", "write": "alice", "share": "bob"}


@pytest.mark.parametrize(("who", "status"), [("", 401), ("carol", 403)])
async def test_a_request_without_a_token_for_this_server_is_refused_not_redirected(
    site: Site, who: str, status: int
):
    headers = {**HEADERS, **(site.auth(who) if who else {})}
    async with httpx.AsyncClient(follow_redirects=False) as http:
        for method in ("POST", "GET"):
            response = await http.request(method, f"{site.url}mcp", headers=headers, json=PING)
            assert response.status_code == status, (method, response.status_code, response.text)
            assert "location" not in response.headers
    assert site.url.endswith("/user/alice/")  # the route sits under the server's base URL


async def test_the_endpoint_is_under_the_servers_base_url_only(site: Site):
    async with httpx.AsyncClient(headers={**HEADERS, **site.auth("full")}) as http:
        at_root = await http.post(f"{site.hub.url}/mcp", json=PING)
        under_prefix = await http.post(f"{site.url}mcp", json=INITIALIZE)
    assert at_root.status_code >= 400  # the Hub answers there (no MCP), not a single-user server
    assert under_prefix.status_code == 200 and "jupyter-mcp-ext" in under_prefix.text


async def _whole_notebook(path: Path) -> dict:
    """The notebook on disk, once whole: Jupyter saves in place, so a read mid-save sees part of it."""
    for _ in range(100):
        try:
            return json.loads(path.read_text())
        except ValueError:
            await asyncio.sleep(0.1)
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    ("who", "scheme"), [("full", "token"), ("read", "Bearer"), ("write", "token"), ("share", "Bearer")]
)
async def test_each_tool_family_honours_the_token(site: Site, who: str, scheme: str):
    allowed, user = ALLOWED[who], USER[who]
    new = f"by-{who}.ipynb"
    async with connect(site.url, site.auth(who, scheme)) as client:
        # read: notebooks, cells, kernels, files
        outline = await ok(client, "get_notebook", path="shared.ipynb")
        cell_id = outline["cells"][0]["id"]
        assert (
            "x = 21"
            in (await ok(client, "read_cells", path="shared.ipynb", cell_ids=[cell_id]))["cells"][0]["source"]
        )
        assert any(n["path"] == "shared.ipynb" for n in (await ok(client, "list_notebooks"))["notebooks"])
        await ok(client, "list_kernels")
        assert any(r.uri.endswith("shared.ipynb") for r in (await client.list_resources()).resources)
        assert "agents read this" in str(await ok(client, "read_file", path="notes.txt"))

        # write: a new notebook, a cell in it, a text file
        if "write" in allowed:
            await ok(client, "create_notebook", path=new)
            await ok(client, "insert_cells", path=new, cells=[{"source": f"who = {who!r}"}])
            await ok(client, "write_file", path=f"by-{who}.txt", content="written\n")
        else:
            message = await fails(client, "create_notebook", path=new)
            assert f"user '{user}' may not write contents" in message, message
            await fails(client, "write_file", path=f"by-{who}.txt", content="written\n")
            # The file's cells, not its bytes: another token's run of this notebook (an earlier
            # case) may still be saved meanwhile, with its execution count, as it should be.
            await fails(client, "update_cell", path="shared.ipynb", cell_id=cell_id, source="x = 0")
            cells = (await _whole_notebook(site.home / "shared.ipynb"))["cells"]
            assert [("".join(c["source"]), c["id"]) for c in cells] == [("x = 21", cell_id)]
        assert (site.home / new).exists() == ("write" in allowed)
        assert (site.home / f"by-{who}.txt").exists() == ("write" in allowed)

        # kernel management (kernels: write): allowed means no refusal, whether or not a run is going
        interrupt = text(await call(client, "interrupt_kernel", path="shared.ipynb"))
        assert ("Not permitted" in interrupt) == ("write" not in allowed), interrupt
        if "write" not in allowed:
            assert f"user '{user}' may not write kernels" in interrupt

        # execute: code in the notebook's kernel, and running a cell
        if "execute" in allowed:
            result = await ok(client, "execute_code", path="shared.ipynb", code="print(6 * 7)")
            assert "42" in str(result), result
            await ok(client, "execute_cells", path="shared.ipynb", cell_ids=[cell_id])
        else:
            message = await fails(client, "execute_code", path="shared.ipynb", code="print(6 * 7)")
            assert f"user '{user}' may not execute kernels" in message, message
            await fails(client, "execute_cells", path="shared.ipynb", cell_ids=[cell_id])
            await fails(client, "inspect_variables", path="shared.ipynb")


@pytest.mark.parametrize("who", ["full", "read", "write", "share"])
async def test_tools_list_marks_what_the_token_may_not_use(site: Site, who: str):
    allowed = ALLOWED[who]
    async with connect(site.url, site.auth(who), mode=STATELESS if who == "full" else "legacy") as client:
        tools = {t.name: t.description for t in (await client.list_tools()).tools}
    marked = {name for name, description in tools.items() if description.startswith("NOT PERMITTED")}
    assert len(tools) > 20  # marked, not left out (that is a setting)
    assert ("get_notebook" in marked, "read_file" in marked) == (False, False)
    assert ("update_cell" in marked) == ("write" not in allowed)
    assert ("execute_code" in marked) == ("execute" not in allowed)
    if "write" not in allowed:
        assert "needs write contents" in tools["update_cell"]
    if "execute" not in allowed:
        assert "needs execute kernels" in tools["execute_code"]


async def test_an_edit_through_the_proxy_is_seen_live_by_a_yjs_client_in_the_room(site: Site):
    async with connect(site.url, site.auth("full")) as client:
        await ok(client, "create_notebook", path="live.ipynb")
        async with YPeer(site.url, site.auth("full"), "live.ipynb", timeout=30) as peer:
            (cell_id,) = (await ok(client, "insert_cells", path="live.ipynb", cells=[{"source": "a = 1"}]))[
                "cell_ids"
            ]
            # A new notebook opened in a room has one empty cell: the agent's lands beside it.
            index = await peer.wait_for(
                lambda nb: peer.sources().index("a = 1") + 1 if "a = 1" in peer.sources() else 0
            )
            # ...and what the person types there, the agent reads.
            peer.insert_text(index - 1, 5, "  # from the tab")
            await peer.flush()
            cells = (await ok(client, "read_cells", path="live.ipynb", cell_ids=[cell_id]))["cells"]
            assert cells[0]["source"] == "a = 1  # from the tab"


async def test_a_read_only_token_cannot_join_the_room_to_edit_either(site: Site):
    """The Yjs websocket is Jupyter's: the same authorizer guards it, so a read-only agent cannot
    route around the tools by editing the shared document directly."""
    async with httpx.AsyncClient(headers=site.auth("read")) as http:
        response = await http.put(
            f"{site.url}api/collaboration/session/shared.ipynb", json={"format": "json", "type": "notebook"}
        )
    assert response.status_code == 403, response.text


async def test_a_token_with_access_but_no_custom_scope_may_do_nothing(site: Site):
    """Under the authorizer, reaching the server is not permission to use it: fail closed."""
    async with connect(site.url, site.auth("access-only")) as client:
        tools = (await client.list_tools()).tools
        message = await fails(client, "list_notebooks")
        with pytest.raises(MCPError, match="read"):
            await client.list_resources()
    assert all(t.description.startswith("NOT PERMITTED") for t in tools)
    assert "user 'alice' may not read contents" in message


PERMISSIONS = json.dumps({"contents": ["read", "write"], "kernels": ["read", "execute"]})


@pytest.mark.parametrize(
    ("user", "contents", "kernels"),
    [("alice", ["read", "write"], ["execute", "read"]), ("dave", ["read", "write"], ["read"])],
)
def test_a_browser_session_is_its_user_with_the_scopes_the_hub_gives_it(site: Site, user, contents, kernels):
    """JupyterLab's own identity and permissions (GET api/me), for the owner and for a collaborator
    given alice's server by a role: the browser follows the same scopes as agents."""
    with closing(site.hub.browser(user, site.url)) as browser:
        me = browser.get(f"{site.url}api/me", params={"permissions": PERMISSIONS}).json()
    assert me["identity"]["username"] == user
    assert sorted(me["permissions"]["contents"]) == contents
    assert sorted(me["permissions"]["kernels"]) == kernels


def test_a_sharee_opening_the_shared_server_in_a_browser_is_themselves(site: Site):
    with closing(site.hub.browser("bob", site.url)) as browser:
        me = browser.get(f"{site.url}api/me").json()
    assert me["identity"]["username"] == "bob"


@pytest.mark.parametrize(("who", "user"), [("full", "alice"), ("read", "alice"), ("share", "bob")])
def test_each_token_acts_as_its_hub_user_and_its_agent_is_named_for_them(site: Site, who: str, user: str):
    """A sharee's agent on alice's server is bob's, not alice's: in Jupyter's identity for the
    request, and in the name people see the agent by (from the Hub's user model)."""
    # Imported here, not with the module: every pytest-xdist worker collects this file, and the Hub's
    # single-user module (SQLAlchemy, Alembic) is most of a CPU-second to import.
    from jupyterhub.singleuser.extension import JupyterHubUser

    me = httpx.get(f"{site.url}api/me", headers=site.auth(who), timeout=30).json()
    assert me["identity"]["username"] == user
    # The Hub's model of this token, as the single-user server receives it for each request.
    model = site.hub.api("GET", "user", token=site.tokens[who]).json()
    handler = SimpleNamespace(current_user=JupyterHubUser(model))
    assert person_of(handler) == {"name": user, "display_name": user, "color": None, "hub": True}
    agent = AgentDirectory()._new_agent(
        "0badcafe", "k", None, {"name": "claude-code", "title": "Claude Code"}, handler
    )
    assert (agent.display_name, agent.user) == (f"Claude Code ({user}'s agent)", user)


async def test_agent_use_is_activity_the_hub_sees_so_the_server_is_not_culled(site: Site):
    def last_activity() -> datetime:
        stamp = site.hub.api("GET", "users/alice").json()["servers"][""]["last_activity"]
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    await asyncio.sleep(1.5)  # past any earlier request's report
    before = last_activity()
    async with connect(site.url, site.auth("read")) as client:
        await ok(client, "list_notebooks")
    with anyio.fail_after(20):
        while last_activity() <= before:
            await asyncio.sleep(0.5)


async def test_a_token_printed_by_jupyterhub_token_is_a_full_agent_token(site: Site):
    token = site.hub.token_from_command_line("alice")
    async with connect(site.url, {"Authorization": f"Bearer {token}"}) as client:
        assert not [t.name for t in (await client.list_tools()).tools if "NOT PERMITTED" in t.description]
        result = await ok(client, "execute_code", path="shared.ipynb", code="print(2 + 3)")
    assert "5" in str(result)


async def test_the_owners_and_the_sharees_agents_are_two_collaborators_in_the_room(site: Site):
    """alice has the notebook open; her agent and bob's (through the share) edit it: she sees two
    collaborators, each named for the Hub user it acts for, each with a username of its own."""
    claude = Implementation(name="claude-code", version="2.1.0", title="Claude Code")
    async with connect(site.url, site.auth("full"), client_info=claude) as mine:
        await ok(mine, "create_notebook", path="team.ipynb")
        async with (
            YPeer(site.url, site.auth("full"), "team.ipynb", timeout=30) as alice,
            connect(site.url, site.auth("share", "Bearer"), client_info=claude) as bobs,
        ):
            await ok(mine, "insert_cells", path="team.ipynb", cells=[{"source": "a = 1"}])
            await ok(bobs, "insert_cells", path="team.ipynb", cells=[{"source": "b = 2"}])

            def agents(_nb: object) -> dict[str, dict[str, str]] | None:
                users = [
                    s["user"] for s in alice.remote_states().values() if s and s.get("user", {}).get("bot")
                ]
                named = {u["display_name"]: u for u in users}
                return named if len(named) == 2 else None

            seen = await alice.wait_for(agents)
    assert set(seen) == {"Claude Code (alice's agent)", "Claude Code (bob's agent)"}
    assert len({u["username"] for u in seen.values()} | {alice.user["username"]}) == 3


async def test_oauth_discovery_and_consent_work_through_the_hubs_proxy(site: Site):
    """Only /user/alice/... reaches alice's server: discovery stays inside it, the consent page sits
    behind the Hub's login, and the agent token it yields works there and opens nothing else."""
    async with httpx.AsyncClient(follow_redirects=False, timeout=30) as agent:
        refused = await agent.post(f"{site.url}mcp", json=PING, headers=HEADERS)
        assert refused.status_code == 401
        prm_url = refused.headers["WWW-Authenticate"].split('resource_metadata="')[1].rstrip('"')
        assert prm_url.startswith(site.url)
        prm = (await agent.get(prm_url)).json()
        assert prm["resource"] == f"{site.url}mcp"
        (issuer,) = prm["authorization_servers"]
        meta = (
            await agent.get(f"{issuer}/.well-known/openid-configuration")
        ).json()  # the one that gets here
        assert meta["issuer"] == issuer and meta["code_challenge_methods_supported"] == ["S256"]
        flow = Flow(site.url, agent)
        flow.meta = meta
        client = await flow.register(client_name="Hub agent")
        verifier, challenge = pkce()
        started = await flow.authorize(client, challenge)
        assert started.status_code == 302
        consent_url = urljoin(site.url, started.headers["location"])
        stranger = await agent.get(consent_url)
        assert (
            stranger.status_code == 302 and "code=" not in stranger.headers["location"]
        )  # to the Hub's login
        browser = await asyncio.to_thread(site.hub.browser, "alice", site.url)
        with closing(browser):
            page = await asyncio.to_thread(browser.get, consent_url)
            assert page.status_code == 200 and "Hub agent" in page.text, page.text[:300]
            xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text).group(1)
            form = {
                "_xsrf": xsrf,
                "request": query(consent_url)["request"],
                "decision": "allow",
                "policy": "read-only",
            }
            back = await asyncio.to_thread(
                browser.post, consent_url.split("?")[0], data=form, follow_redirects=False
            )
        assert back.status_code == 302 and back.headers["location"].startswith(REDIRECT), back.text[:300]
        code = query(back.headers["location"])["code"]
        got = await flow.token(
            client, grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=REDIRECT
        )
        assert got.status_code == 200, got.text
        bearer = {"Authorization": f"Bearer {got.json()['access_token']}"}
        async with connect(site.url, bearer) as mcp:
            assert "agents read this" in text(await call(mcp, "read_file", path="notes.txt"))
            assert "read-only" in await fails(mcp, "write_file", path="x.txt", content="x")
        contents = await agent.get(f"{site.url}api/contents", headers=bearer)
        assert contents.status_code in (401, 403)


async def test_the_typescript_sdks_client_connects_through_the_hubs_proxy(site: Site):
    """The TypeScript SDK's host, given /user/alice/mcp alone, finds the authorization server inside
    the prefix; alice logs in to the Hub in headless Chromium and allows it; its token works there."""
    from playwright.async_api import async_playwright

    from ..support.browser import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS
    from ..support.ts_host import connect as ts_connect

    seen: dict[str, str] = {}
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = await (await browser.new_context()).new_page()
            page.set_default_timeout(TIMEOUT_MS)

            async def consent(url: str) -> None:
                assert url.startswith(f"{site.url}oauth/authorize?"), url
                await page.goto(url)  # not logged in: the Hub's login first, then back to the consent
                await page.locator("#username_input").fill("alice")
                await page.locator("#password_input").fill("any")
                await page.locator("#login_submit").click()
                seen["client"] = await page.locator("#client-name").inner_text()
                async with page.expect_navigation(url="http://127.0.0.1:*/callback?*"):
                    await page.locator("#allow").click()  # policy: "ask", the default choice

            got = await ts_connect(f"{site.url}mcp", consent, "read_file", path="notes.txt")
        finally:
            await browser.close()
    assert seen["client"] == "TS SDK Test Host"
    assert query(got["authorize"])["resource"] == f"{site.url}mcp"
    assert "agents read this" in str(got["result"]["content"]) and "execute_code" in got["tools"]
