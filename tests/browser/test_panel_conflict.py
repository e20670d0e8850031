"""The panel's Connect section when another extension also routes ``<base_url>/mcp``: the person sees
which one and what to do, in a real JupyterLab (headless Chromium) with this worktree's panel build."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import expect
from traitlets.config import Config

from ..integration.test_route_conflict import FIRST, OTHER
from ..support.browser import CHROMIUM, lab_tab, with_lab
from .test_panel import open_panel, screenshot

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"
)

BUILT = Path(__file__).resolve().parents[2] / "jupyter_mcp_ext" / "labextension"


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    """The suite's server with JupyterLab, the other extension loaded before ours, and the panel as
    built here (``cd ui && jlpm build``) found before the installed one, if there is a build."""
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / f"{FIRST}.py").write_text(OTHER)
    monkeypatch.syspath_prepend(str(modules))
    config = with_lab(jp_server_config, tmp_path / "lab-settings", starts_kernel=False)  # it runs no code
    config.ServerApp.jpserver_extensions = {**config.ServerApp.jpserver_extensions, FIRST: True}
    if (BUILT / "package.json").is_file():
        ours = tmp_path / "labextensions"
        ours.mkdir()
        (ours / "jupyter-mcp-ext").symlink_to(BUILT)
        config.LabApp.extra_labextensions_path = [str(ours), *config.LabApp.extra_labextensions_path]
    return config


async def test_the_connect_section_names_the_other_extension_and_the_way_out(
    server_url, jp_auth_header, make_notebook, tmp_path
):
    path = make_notebook("conflict.ipynb", cells=["a = 1"])
    token = jp_auth_header["Authorization"].split()[-1]
    async with lab_tab(server_url, token, path) as tab:
        panel = await open_panel(tab)
        warning = panel.locator(".jp-mcp-Conflict")
        await expect(warning).to_contain_text(f"{FIRST}.OtherMCPHandler (extension {FIRST})")
        await expect(warning).to_contain_text("agents reach it instead of jupyter_mcp_ext")
        await expect(warning).to_contain_text("c.MCPExtensionApp.path = 'jupyter-mcp'")
        await screenshot(tab, tmp_path, "conflict")
