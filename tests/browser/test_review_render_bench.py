"""The review-marks render benchmark (``python -m benchmarks.review_render``) runs end to end, small:
a server with JupyterLab, an agent changing every cell of two notebooks, a Keep all, each opened and
scrolled once in Chromium, and a ratio for each figure."""

from __future__ import annotations

import pytest

from benchmarks.review_render import measure

from ..support.browser import CHROMIUM

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM}")


@pytest.mark.timeout(300)
async def test_the_render_benchmark_measures_both_notebooks_and_gives_ratios():
    result = await measure(cells=4, rounds=1, warmup=False)
    assert set(result["ratios"]) == {"first", "all", "scroll", "worst", "open_cpu", "scroll_cpu"}
    for kind in ("marked", "plain"):
        assert all(value > 0 for value in result["medians_ms"][kind].values())
