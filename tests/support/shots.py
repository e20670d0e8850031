"""Where browser tests keep their screenshots: one folder a CI run keeps as its artifact.

``MCP_SCREENSHOTS`` names the folder; by default ``.ci/artifacts/screenshots`` in the checkout, so a
reviewer finds every picture of a run in one place (named after the test and the moment)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.async_api import Locator

ROOT = Path(__file__).resolve().parents[2]
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


DOCS = ROOT / "docs" / "images"
FOR_DOCS = {
    # screenshot (test and moment) -> the picture the README or docs/ show
    "test_a_mark_appears_live_for_each_change_and_keep_removes_it_on_the_server_too-review-marks": "review-marks.png",
    "test_marks_feed_and_agents_list_say_the_approved_name-panel-names": "panel-agents.png",
    "test_show_diff_has_a_chunk_per_change_the_person_types_on_and_rejects_one_accepts_the_other-diff-open": (
        "review-diff.png"
    ),
    "test_the_sign_in_pages_read_well_in_light_and_dark[light]-consent-verified-light": "consent.png",
    "test_the_sign_in_pages_read_well_in_light_and_dark[light]-consent-unverified-light": "consent-unverified.png",
    "test_the_sign_in_pages_read_well_in_light_and_dark[dark]-consent-registered-dark": "consent-dark.png",
    "test_the_sign_in_pages_read_well_in_light_and_dark[light]-error-document-light": "sign-in-refused.png",
    "test_ask_holds_a_run_until_approved_and_refuses_it_on_deny-panel-approval": "approval.png",
}
"""The documentation's pictures are these tests' screenshots, so they show what the code does today."""


def copy_for_docs() -> list[Path]:
    """Copy the screenshots the docs show from this run's folder into ``docs/images``."""
    copied = []
    for stem, picture in FOR_DOCS.items():
        shot = FOLDER / f"{stem}.png"
        if shot.exists():
            DOCS.mkdir(parents=True, exist_ok=True)
            (DOCS / picture).write_bytes(shot.read_bytes())
            copied.append(DOCS / picture)
    return copied
