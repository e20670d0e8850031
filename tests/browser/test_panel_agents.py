"""The person's side of agent credentials, in a real JupyterLab (headless Chromium): Connect mints a
named agent token and shows it once; the agent that connects with it is listed under Agents with its
session under its name; the person narrows its policy and revokes it there, and the server holds the
agent to both. Each step leaves a screenshot of the panel in the test's tmp dir."""

from __future__ import annotations

import re
import time

import httpx
import pytest
from mcp_types import Implementation
from playwright.async_api import expect
from traitlets.config import Config

from ..support.browser import CHROMIUM, lab_tab, with_lab
from ..support.mcp_client import RAW_HEADERS, connect, fails, ok
from ..support.panel import PanelAPI
from .test_panel import open_panel, screenshot

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"
)

# A zero-width space: the agent's name is the person's text here, but an OAuth client names itself.
NAME = "Nightly report\u200b"
SHOWN = "Nightly report⟨U+200B⟩"


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path) -> Config:
    return with_lab(jp_server_config, tmp_path / "lab-settings", starts_kernel=False)  # it runs no code


@pytest.fixture
def token(jp_auth_header) -> str:
    return jp_auth_header["Authorization"].split()[-1]


async def ping_status(server_url: str, bearer: dict[str, str]) -> int:
    async with httpx.AsyncClient(headers={**bearer, **RAW_HEADERS}) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        return (await http.post(f"{server_url}mcp", json=body)).status_code


async def test_a_person_mints_a_token_once_sees_its_agent_narrows_it_and_revokes_it(
    server_url, jp_auth_header, token, make_notebook, tmp_path
):
    path = make_notebook("agents.ipynb", cells=["a = 1"])
    url = f"{server_url}mcp"
    async with lab_tab(server_url, token, path) as tab, PanelAPI(server_url, jp_auth_header) as api:
        panel = await open_panel(tab)
        # The set-ups lead with the URL alone: the host signs in. No token on screen, none copied.
        claude = panel.locator('.jp-mcp-Snippet[data-setup="claude"] pre')
        await expect(claude).to_have_text(f"claude mcp add --transport http jupyter {url}")
        await panel.get_by_role("tab", name="VS Code").click()
        vscode = panel.locator('.jp-mcp-Snippet[data-setup="vscode"] pre')
        await expect(vscode).to_contain_text(f'"url": "{url}"')
        await expect(vscode).not_to_contain_text("Authorization")
        await expect(panel.get_by_role("button", name="Show token")).to_have_count(0)

        # Mint: the token is shown once, and the file-based set-ups carry it while it is on screen.
        await panel.get_by_label("Agent name").fill(NAME)
        await panel.get_by_label("What the new agent may do").select_option("full")
        await panel.get_by_role("button", name="Mint", exact=True).click()
        shown = panel.locator(".jp-mcp-MintedToken")
        await expect(shown).to_have_text(re.compile(r"^jmcp_\S+$"))
        minted = await shown.inner_text()
        await expect(vscode).to_contain_text(f'"Authorization": "Bearer {minted}"')
        await expect(panel.locator(".jp-mcp-Minted")).to_contain_text(SHOWN)
        await panel.get_by_role("tab", name="Claude Code").click()
        await expect(claude).to_have_text(f"claude mcp add --transport http jupyter {url}")
        await expect(panel.locator(".jp-mcp-Connect .jp-mcp-Note").first).to_contain_text(
            "never carries a token"
        )
        assert token not in await panel.inner_text()  # the person's own token is nowhere in the panel
        await screenshot(tab, tmp_path, "minted")
        await panel.get_by_role("button", name="Done (hide it)").click()
        await expect(shown).to_have_count(0)
        await panel.get_by_role("tab", name="VS Code").click()
        await expect(vscode).not_to_contain_text(minted)
        (record,) = (await api.get("agents"))["agents"]
        assert minted not in str(record) and record["name"] == NAME and record["policy"] == "full"

        card = panel.locator(f'.jp-mcp-Agent[data-credential="{record["id"]}"]')
        await expect(card.locator(".jp-mcp-CredentialName")).to_have_text(SHOWN)
        await expect(card.locator(".jp-mcp-AgentMeta")).to_contain_text("minted token")
        await expect(card.locator(".jp-mcp-LastUsed")).to_have_text("never used")

        bearer = {"Authorization": f"Bearer {minted}"}
        client = Implementation(name="nightly-client", version="2.1")
        async with connect(server_url, bearer, client_info=client) as agent:
            await ok(agent, "get_notebook", path=path)
            (session,) = (await api.get("sessions"))["sessions"]
            # Its live session is under it, by name (escaped), never by its 32-hex id.
            row = card.locator(f'.jp-mcp-Session[data-agent="{session["id"]}"]')
            # The name the person gave it, then what its client calls itself.
            await expect(row.locator(".jp-mcp-AgentName")).to_have_text(f"{SHOWN} (nightly-client) (agent)")
            await expect(row.locator(".jp-mcp-AgentName .jp-mcp-Hidden")).to_have_text("⟨U+200B⟩")
            await expect(row).to_contain_text("nightly-client 2.1")
            await expect(card.locator(".jp-mcp-LastUsed")).to_contain_text("last used")
            assert session["id"] not in await panel.inner_text()
            await screenshot(tab, tmp_path, "agents")

            # The person narrows it to read-only: its next write is refused.
            await card.get_by_label("What this agent may do").select_option("read-only")
            await api.until(lambda: _policy_is(api, record["id"], "read-only"))
            message = await fails(agent, "insert_cells", path=path, cells=[{"source": "b = 2"}])
            assert "read-only" in message and "this agent" in message
            await expect(card.get_by_label("What this agent may do")).to_have_value("read-only")

            # Revoke: its token is refused (401) within a second of the click, its session ended.
            await card.get_by_role("button", name="Revoke").click()
            clicked = time.monotonic()
            while (status := await ping_status(server_url, bearer)) != 401 and time.monotonic() - clicked < 5:
                pass
            refused_after = time.monotonic() - clicked
            print(f"agent token refused {refused_after * 1000:.0f} ms after the Revoke click")
            assert status == 401 and refused_after < 1.0
            await expect(card).to_have_count(0)
            await expect(panel.locator(".jp-mcp-Message")).to_contain_text("1 session(s) ended")
            assert (await api.get("agents"))["agents"] == []
            await screenshot(tab, tmp_path, "revoked")

        # A set-up made before, with the person's own Jupyter token, is shown as what it is.
        async with connect(
            server_url, jp_auth_header, client_info=Implementation(name="old-setup", version="1")
        ) as old:
            await ok(old, "list_files")
            group = panel.locator('.jp-mcp-Agent[data-credential="jupyter"]')
            await expect(group.locator(".jp-mcp-CredentialName")).to_have_text(
                "your Jupyter token: full access"
            )
            await expect(group.locator(".jp-mcp-Session .jp-mcp-AgentName")).to_contain_text("old-setup")
            await screenshot(tab, tmp_path, "jupyter-token")


async def _policy_is(api: PanelAPI, credential_id: str, policy: str) -> bool:
    return any(
        a["id"] == credential_id and a["policy"] == policy for a in (await api.get("agents"))["agents"]
    )
