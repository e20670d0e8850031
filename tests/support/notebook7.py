"""Jupyter Notebook 7 beside JupyterLab on a test's server, serving the same front-end extensions.

Notebook 7 is a Jupyter Server extension built on JupyterLab's components: a notebook opens on a page
of its own (``<base_url>/notebooks/<path>``), with no status bar, and the left sidebar hidden until the
person opens a panel from View > Left Sidebar.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
from traitlets.config import Config

from .browser import LABEXTENSIONS, OWN_BUILDS, LabTab, chromium_tab, with_lab

needs_notebook7 = pytest.mark.skipif(
    importlib.util.find_spec("notebook") is None,
    reason="Jupyter Notebook 7 is not installed (pip install notebook)",
)


def with_notebook7(config: Config, settings_dir: Path, *, starts_kernel: bool = True) -> Config:
    """``with_lab``'s server, plus Notebook 7 serving the same extensions, settings and workspaces."""
    merged = with_lab(config, settings_dir, starts_kernel=starts_kernel)
    extensions = {**merged.ServerApp.jpserver_extensions, "notebook": True}
    merged.merge(
        Config(
            {
                "ServerApp": {"jpserver_extensions": extensions},
                "JupyterNotebookApp": {
                    "extra_labextensions_path": [*map(str, OWN_BUILDS), str(LABEXTENSIONS)],
                    "app_settings_dir": str(settings_dir),
                    "workspaces_dir": str(settings_dir.parent / "lab-workspaces"),
                    "user_settings_dir": str(settings_dir.parent / "lab-user-settings"),
                },
            }
        )
    )
    return merged


@asynccontextmanager
async def notebook7_tab(server_url: str, token: str, path: str) -> AsyncIterator[LabTab]:
    """Open ``path`` in Notebook 7 as a person would (the URL with the token), in a fresh browser.
    Yields once the notebook's first cell is on screen."""
    async with chromium_tab() as tab:
        await tab.page.goto(f"{server_url}notebooks/{quote(path)}?token={token}")
        await tab.cell(0).wait_for()
        yield tab
