"""Where browser tests keep their screenshots: one folder a CI run keeps as its artifact.

``MCP_SCREENSHOTS`` names the folder; by default ``.ci/artifacts/screenshots`` in the checkout, so a
reviewer finds every picture of a run in one place (named after the test and the moment)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.async_api import Locator

ROOT = Path(__file__).resolve().parent.parent
FOLDER = Path(os.environ.get("MCP_SCREENSHOTS") or ROOT / ".ci" / "artifacts" / "screenshots")


def place(name: str) -> Path:
    """The file for screenshot ``name`` (the running test's name in front, so runs never clash)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    stem = test.split("::")[-1].replace("/", "_") if test else "shot"
    FOLDER.mkdir(parents=True, exist_ok=True)
    return FOLDER / f"{stem}-{name}.png"


async def keep(where: Locator, name: str) -> Path:
    """Screenshot ``where`` into the artifact folder and say where it went."""
    shot = place(name)
    await where.screenshot(path=str(shot))
    print("screenshot:", shot)
    return shot
