"""Does a notebook full of review marks open and scroll like one without (issue 20, Performance)?

Two copies of one notebook (500 cells by default) on a throwaway server with JupyterLab; a real MCP
agent changes every cell of both (one ``update_cell`` each), then a person's Keep all clears the
marks of one. Headless Chromium opens each in turn (alternating, fresh page each time) and measures
from navigation: the first cell on screen (with its mark, for the marked copy), every cell (and
every mark) in the page, and a scroll of the whole notebook top to bottom in a fixed number of
steps, each waiting for two frames (vsync off, so a frame costs what its work costs); and how long
the page's main thread was busy (its tasks' time, Chromium's ``TaskDuration``) opening and scrolling,
which leaves out waits on the network but not a machine's load. The ratios
marked / plain are of the medians, same run; the issue's target is at most 1.2x.

    python -m benchmarks.review_render [--cells 500] [--rounds 5]

JupyterLab serves the first ``jupyter-mcp-ext`` it finds: run with ``JUPYTER_PATH=<checkout>/.jp``
(holding ``labextensions/jupyter-mcp-ext``, a link to a build) to measure a build of one's own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import sys
from typing import Any
from urllib.parse import quote

import httpx
from playwright.async_api import Page, async_playwright

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS
from tests.support.server import JupyterServer

from .client import call, cell_ids, mcp_client, write_notebook

TARGET = 1.2
SCROLL_STEPS = 100
# Frames paced by work, not by a 60 Hz clock: otherwise every step costs 16.7 ms whatever it does.
UNPACED = ["--disable-frame-rate-limit", "--disable-gpu-vsync"]
# When the notebook's first cell, then all of them (and for the marked copy, their marks), are there.
WATCH = """(cells) => {
  window.__t = {};
  const check = () => {
    const now = performance.now();
    const panel = document.querySelector('.jp-NotebookPanel .jp-Notebook');
    const first = panel && panel.querySelector('.jp-Cell');
    const marked = document.body.dataset.expectMarks === '1';
    if (first && !window.__t.first && (!marked || first.querySelector('.jp-mcp-ReviewMark'))) {
      window.__t.first = now;
    }
    if (panel && !window.__t.all && panel.querySelectorAll('.jp-Cell').length >= cells &&
        (!marked || panel.querySelectorAll('.jp-mcp-ReviewMark').length >= cells)) {
      window.__t.all = now;
    }
    if (!window.__t.all) requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
}"""
SCROLL = """async (steps) => {
  const outer = document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer');
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  outer.scrollTop = 0;
  await frame();
  const start = performance.now();
  let worst = 0;
  for (let k = 1; k <= steps; k++) {
    const t = performance.now();
    outer.scrollTop = (k / steps) * (outer.scrollHeight - outer.clientHeight);
    await frame();
    worst = Math.max(worst, performance.now() - t);
  }
  return { total: performance.now() - start, worst, height: outer.scrollHeight };
}"""


def lab_server() -> JupyterServer:
    """A server with JupyterLab, offline and quiet (no news, no build check)."""
    server = JupyterServer(prefix="jupyter-mcp-render-")
    settings = server.tmp / "lab-settings"
    settings.mkdir()
    overrides = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}}
    (settings / "overrides.json").write_text(json.dumps(overrides))
    server.config["LabApp"] = {
        "app_settings_dir": str(settings),
        "news_url": None,
        "extension_manager": "readonly",
    }
    server.config["ServerApp"] = {
        "tornado_settings": {"page_config_data": {"buildCheck": False, "buildAvailable": False}}
    }
    return server


async def agent_changes_every_cell(server: JupyterServer, names: list[str], cells: int) -> None:
    """Each notebook written, then every cell of it changed by an agent (eight calls in flight)."""
    async with mcp_client(server) as client:
        limit = asyncio.Semaphore(8)

        async def change(name: str, i: int, cell_id: str) -> None:
            async with limit:
                await call(
                    client,
                    "update_cell",
                    path=name,
                    cell_id=cell_id,
                    old_string=f"marker_{i} = 0",
                    new_string=f"marker_{i} = 1",
                )

        for name in names:
            ids = cell_ids(write_notebook(server.root, name, cells))
            await call(client, "get_notebook", path=name)
            await asyncio.gather(*(change(name, i, cid) for i, cid in enumerate(ids)))


async def main_thread_cpu(cdp: Any) -> float:
    """Milliseconds the page's main thread has been busy (Chromium's ``TaskDuration``: its tasks' time,
    idle waits left out; on a loaded machine a task's time still includes waiting for a core)."""
    metrics = (await cdp.send("Performance.getMetrics"))["metrics"]
    return 1000 * next(m["value"] for m in metrics if m["name"] == "TaskDuration")


async def open_and_scroll(
    page: Page, server: JupyterServer, name: str, cells: int, marked: bool
) -> dict[str, float]:
    await page.add_init_script(
        f"document.addEventListener('DOMContentLoaded', () => {{ document.body.dataset.expectMarks = "
        f"'{int(marked)}'; ({WATCH})({cells}); }});"
    )
    cdp = await page.context.new_cdp_session(page)
    await cdp.send("Performance.enable")
    # A workspace of its own each time: JupyterLab would reopen the notebooks of earlier rounds too.
    workspace = secrets.token_hex(4)
    await page.goto(f"{server.url}lab/workspaces/{workspace}/tree/{quote(name)}?token={server.token}")
    await page.wait_for_function("window.__t && window.__t.all", timeout=180_000, polling=200)
    times = await page.evaluate("window.__t")
    await page.wait_for_timeout(1000)  # let the page settle (fonts, late fetches) before scrolling
    opened = await main_thread_cpu(cdp)
    scroll = await page.evaluate(SCROLL, SCROLL_STEPS)
    return {
        "first": times["first"],
        "all": times["all"],
        "scroll": scroll["total"],
        "worst": scroll["worst"],
        "open_cpu": opened,
        "scroll_cpu": await main_thread_cpu(cdp) - opened,
    }


async def measure(cells: int, rounds: int, warmup: bool = True) -> dict[str, Any]:
    server = lab_server()
    server.start()
    try:
        await agent_changes_every_cell(server, ["marked.ipynb", "plain.ipynb"], cells)
        kept = httpx.post(f"{server.url}api/mcp/keep", json={"path": "plain.ipynb"}, headers=server.headers)
        assert kept.status_code == 200, kept.text
        runs: dict[str, list[dict[str, float]]] = {"marked": [], "plain": []}
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=[*CHROMIUM_ARGS, *UNPACED]
            )
            try:
                for r in range(0 if warmup else 1, rounds + 1):  # round 0 warms the server and the cache up
                    for kind in ("marked", "plain") if r % 2 else ("plain", "marked"):
                        context = await browser.new_context(viewport={"width": 1280, "height": 860})
                        page = await context.new_page()
                        run = await open_and_scroll(page, server, f"{kind}.ipynb", cells, kind == "marked")
                        await context.close()
                        if r:
                            runs[kind].append(run)
                        print(
                            f"  round {r} {kind}: " + ", ".join(f"{k} {v:.0f} ms" for k, v in run.items()),
                            file=sys.stderr,
                        )
            finally:
                await browser.close()
    finally:
        server.stop()
    medians = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in runs.items()}
    ratios = {m: medians["marked"][m] / medians["plain"][m] for m in medians["plain"]}
    return {"cells": cells, "rounds": rounds, "medians_ms": medians, "ratios": ratios, "target": TARGET}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    result = asyncio.run(measure(args.cells, args.rounds))
    if args.json:
        print(json.dumps(result))
        return 0
    med = result["medians_ms"]
    print(f"{args.cells} agent-changed cells, medians of {args.rounds} rounds (marked / plain, ratio):")
    names = {
        "first": "first cell shown",
        "all": "every cell shown",
        "scroll": "scroll, whole notebook",
        "worst": "slowest scroll step",
        "open_cpu": "open, main thread busy",
        "scroll_cpu": "scroll, main thread busy",
    }
    for key, label in names.items():
        ratio = result["ratios"][key]
        flag = "" if key == "worst" else ("  ok" if ratio <= TARGET else f"  over {TARGET}x")
        print(f"  {label:24} {med['marked'][key]:8.0f} ms {med['plain'][key]:8.0f} ms  {ratio:.2f}x{flag}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
