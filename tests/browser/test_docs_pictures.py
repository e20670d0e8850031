"""The pictures in the README and docs/ are screenshots the browser tests take (``tests/support/shots.py``),
so a picture of a screen that changed is remade by the test that shows it, never left behind."""

from __future__ import annotations

import re
from pathlib import Path

from ..support.shots import DOCS, FOR_DOCS

ROOT = Path(__file__).resolve().parents[2]


def test_every_picture_the_docs_show_is_a_tests_screenshot_and_is_there():
    shown = set()
    for page in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text(encoding="utf-8")):
            picture = (page.parent / target).resolve()
            assert picture.parent == DOCS.resolve(), (
                f"{page.name} shows {target}, not a picture in docs/images"
            )
            assert picture.name in FOR_DOCS.values(), f"{page.name} shows {target}, which no test makes"
            assert picture.exists(), f"{target} is missing: run the browser tests with MCP_DOCS_SHOTS=1"
            shown.add(picture.name)
    assert shown, "the README shows no picture"
    unused = {p.name for p in DOCS.glob("*.png")} - shown
    assert not unused, f"pictures in docs/images that no page shows: {sorted(unused)}"
