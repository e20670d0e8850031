"""Every request passes Jupyter's identity provider, and every tool asks Jupyter's authorizer."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from jupyter_server.auth import Authorizer
from traitlets.config import Config

from ..support.mcp_client import connect, fails, ok

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class ReadOnlyAuthorizer(Authorizer):
    """What a JupyterHub deployment with a read-only scope amounts to: reading yes, writing no."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return action == "read"


@pytest.mark.parametrize("auth", [{}, {"Authorization": "token wrong"}, {"Authorization": "Bearer wrong"}])
async def test_requests_without_valid_credentials_are_refused_not_redirected(server_url, auth):
    async with httpx.AsyncClient(follow_redirects=False) as http:
        for method in ("POST", "GET", "DELETE"):
            response = await http.request(method, f"{server_url}mcp", headers={**HEADERS, **auth}, json=PING)
            assert response.status_code in (401, 403), (method, response.status_code)
            assert "location" not in response.headers


async def test_bearer_token_is_accepted_like_token(server_url, jp_auth_header, make_notebook):
    make_notebook("n.ipynb")
    token = jp_auth_header["Authorization"].split()[-1]
    async with connect(server_url, {"Authorization": f"Bearer {token}"}) as client:
        assert (await ok(client, "list_notebooks"))["notebooks"][0]["path"] == "n.ipynb"


async def test_cookie_authenticated_post_without_xsrf_is_refused(server_url, jp_auth_header):
    token = jp_auth_header["Authorization"].split()[-1]
    async with httpx.AsyncClient() as http:
        # A browser that logged in holds a cookie; a cross-site page can make it POST but cannot read _xsrf.
        login = await http.get(f"{server_url}api/status", params={"token": token})
        assert login.status_code == 200 and http.cookies
        response = await http.post(f"{server_url}mcp", headers=HEADERS, json=PING)
    assert response.status_code == 403


async def test_agent_use_counts_as_activity_for_idle_culling(server_url, jp_auth_header, jp_serverapp):
    before = jp_serverapp.web_app.settings.get("api_last_activity")
    async with connect(server_url, jp_auth_header) as client:
        await client.list_tools()
    after = jp_serverapp.web_app.settings["api_last_activity"]
    assert before is None or after > before


class TestReadOnlyUser:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Config) -> Config:
        jp_server_config.ServerApp.authorizer_class = ReadOnlyAuthorizer
        return jp_server_config

    async def test_can_read_but_not_edit(self, server_url, jp_auth_header, make_notebook, jp_root_dir: Path):
        make_notebook("shared.ipynb", cells=["x = 1"])
        before = (jp_root_dir / "shared.ipynb").read_bytes()
        async with connect(server_url, jp_auth_header) as client:
            outline = await ok(client, "get_notebook", path="shared.ipynb")
            cell_id = outline["cells"][0]["id"]
            message = await fails(client, "update_cell", path="shared.ipynb", cell_id=cell_id, source="x = 2")
            assert "Not permitted" in message and "write contents" in message
            await fails(client, "create_notebook", path="new.ipynb")
        assert (jp_root_dir / "shared.ipynb").read_bytes() == before
        assert not (jp_root_dir / "new.ipynb").exists()
