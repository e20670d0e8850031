"""In a real JupyterLab (headless Chromium): an agent the person allowed as "Auth Bot" whose MCP client
calls itself "Your Colleague Bob" is "Auth Bot (Your Colleague Bob)" in the cell's review mark, the
review bar and the Activity feed; the Agents list says its name is unverified (its host named itself),
and says nothing of the kind for a name the person gave. Run with ``JUPYTER_PATH=<worktree>/.jp`` to
test a build of one's own."""

from __future__ import annotations

import pytest
from mcp_types import Implementation
from playwright.async_api import expect
from traitlets.config import Config

from ..support.browser import CHROMIUM, lab_tab, with_lab
from ..support.mcp_client import connect, ok
from ..support.panel import PanelAPI
from .test_panel import open_panel, screenshot

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"
)

SHOWN = "Auth Bot (Your Colleague Bob)"


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path) -> Config:
    return with_lab(jp_server_config, tmp_path / "lab-settings", starts_kernel=False)  # it runs no code


async def test_marks_feed_and_agents_list_say_the_approved_name(
    server_url, jp_auth_header, make_notebook, jp_serverapp, tmp_path
):
    path = make_notebook("names.ipynb", cells=["a = 1"])
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    # What a sign-in records for a client that registered itself as "Auth Bot" (nobody checked it).
    signed_in = app.tokens.create(
        "Auth Bot", "tester", "full", client="Auth Bot", client_id="auth-bot", name_verified=False
    )
    bearer = {"Authorization": f"Bearer {app.tokens.issue(signed_in, 'access', 3600)}"}
    token = jp_auth_header["Authorization"].split()[-1]
    async with (
        lab_tab(server_url, token, path) as tab,
        PanelAPI(server_url, jp_auth_header) as api,
        connect(
            server_url, bearer, client_info=Implementation(name="Your Colleague Bob", version="1")
        ) as agent,
    ):
        minted = (await api.post("agents", {"name": "Named by me", "policy": "read-only"}, status=201))[
            "agent"
        ]
        await ok(agent, "insert_cells", path=path, cells=[{"source": "b = 2"}], index=1)
        await expect(tab.cell(1).locator(".jp-mcp-ReviewMark")).to_contain_text(f"added by {SHOWN}")
        await expect(tab.page.locator(".jp-NotebookPanel .jp-mcp-ReviewBar")).to_contain_text(
            f"1 cell changed by {SHOWN}"
        )
        panel = await open_panel(tab)
        entry = panel.locator('.jp-mcp-Entry[data-tool="insert_cells"] .jp-mcp-EntryAgent')
        await expect(entry).to_have_text(SHOWN)
        card = panel.locator(f'.jp-mcp-Agent[data-credential="{signed_in.id}"]')
        await expect(card.locator(".jp-mcp-CredentialName")).to_have_text("Auth Bot")
        await expect(card.locator(".jp-mcp-Unverified")).to_have_text("unverified")
        await expect(card.locator(".jp-mcp-Session .jp-mcp-AgentName")).to_have_text(f"{SHOWN} (agent)")
        mine = panel.locator(f'.jp-mcp-Agent[data-credential="{minted["id"]}"]')
        await expect(mine.locator(".jp-mcp-CredentialName")).to_have_text("Named by me")
        await expect(mine.locator(".jp-mcp-Unverified")).to_have_count(0)
        await screenshot(tab, tmp_path, "names")
