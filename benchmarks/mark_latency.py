"""``python -m benchmarks.mark_latency``: how soon a review mark follows an agent's edit in JupyterLab.

A real JupyterLab in headless Chromium (Debian's ``/usr/bin/chromium``) on a throwaway server; an agent
over MCP edits one cell after another with ``update_cell``, and the page notes (``performance.now``)
when the edit's text first shows in that cell and when the cell's review mark does. Prints the p50 and
p95 of each, after the call was sent, and the ratio of the mark's to the edit's (issue 20: the mark
within 200 ms, at most 1.5x the edit's own appearance). The front end is this checkout's build
(``jupyter_mcp_ext/labextension``) when there is one, else the installed one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

from tests.support.server import JupyterServer

from .client import call, cell_ids, mcp_client, write_notebook

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]

# When the journal's event reaches the page (its websocket), to tell the server's part from the page's.
HEAR = """(() => {
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      if (String(args[0]).includes('api/events/subscribe')) {
        this.addEventListener('message', m => {
          if (window.__seen && !window.__seen.event && String(m.data).includes('"journal"')) {
            window.__seen.event = performance.now();
          }
        });
      }
    }
  };
})()"""

# Per trial: when cell ``index`` first shows ``marker`` in its editor, and when it first has a mark.
WATCH = """([index, marker]) => {
  window.__seen = {};
  const cell = () => document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-Cell')[index];
  const look = () => {
    const now = performance.now();
    const node = cell();
    if (!node) return;
    if (!window.__seen.edit && (node.querySelector('.cm-content')?.textContent ?? '').includes(marker)) {
      window.__seen.edit = now;
    }
    if (!window.__seen.mark && node.querySelector('.jp-mcp-ReviewMark')) {
      window.__seen.mark = now;
    }
  };
  window.__observer?.disconnect();
  window.__observer = new MutationObserver(look);
  window.__observer.observe(document.querySelector('.jp-NotebookPanel'),
    {subtree: true, childList: true, characterData: true, attributes: true});
  return performance.now();
}"""


def lab_config(settings: Path) -> dict[str, dict[str, object]]:
    """JupyterLab offline (no news, no build check), serving this checkout's front end first."""
    settings.mkdir(parents=True, exist_ok=True)
    overrides = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}}
    (settings / "overrides.json").write_text(json.dumps(overrides))
    paths = [str(Path(sys.prefix) / "share" / "jupyter" / "labextensions")]
    own = REPO / "jupyter_mcp_ext" / "labextension"
    if (own / "package.json").exists():
        link = settings.parent / "labextensions"
        link.mkdir(exist_ok=True)
        (link / "jupyter-mcp-ext").symlink_to(own)
        paths.insert(0, str(link))
    return {
        "LabApp": {"extra_labextensions_path": paths, "app_settings_dir": str(settings), "news_url": None},
        "ServerApp": {
            "tornado_settings": {"page_config_data": {"buildCheck": False, "buildAvailable": False}}
        },
    }


def q(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


async def measure(trials: int) -> dict[str, float]:
    from playwright.async_api import async_playwright

    work = Path(tempfile.mkdtemp(prefix="mark-latency-"))
    server = JupyterServer(
        lab_config(work / "settings"), extensions=["jupyterlab"], prefix="jupyter-mcp-marks-"
    )
    server.start()
    edits: list[float] = []
    marks: list[float] = []
    answers: list[float] = []
    events: list[float] = []
    try:
        notebook = write_notebook(server.root, "marks.ipynb", trials)
        ids = cell_ids(notebook)
        async with async_playwright() as pw, mcp_client(server) as agent:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = await browser.new_page(viewport={"width": 1280, "height": 860})
            await page.add_init_script(HEAR)
            await page.goto(f"{server.url}lab/tree/marks.ipynb?token={server.token}")
            await page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=120_000)
            await call(agent, "read_cells", path="marks.ipynb")
            await asyncio.sleep(2)  # JupyterLab settles (kernel, awareness) before the clock starts
            for i, cell_id in enumerate(ids):
                cell = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").nth(i)
                await cell.scroll_into_view_if_needed()
                await asyncio.sleep(0.2)
                marker = f"edited_{i}"
                sent = await page.evaluate(WATCH, [i, marker])
                await call(
                    agent,
                    "update_cell",
                    path="marks.ipynb",
                    cell_id=cell_id,
                    old_string=f"x_{i}",
                    new_string=marker,
                )
                answers.append(await page.evaluate("performance.now()") - sent)
                await page.wait_for_function("window.__seen.edit && window.__seen.mark", timeout=30_000)
                seen = await page.evaluate("window.__seen")
                edits.append(seen["edit"] - sent)
                if "event" in seen:
                    events.append(seen["event"] - sent)
                marks.append(seen["mark"] - sent)
            await browser.close()
        async with httpx.AsyncClient(headers=server.headers) as http:  # the server's view: every mark pending
            journal = (await http.get(f"{server.url}api/mcp/journal?limit=1000")).json()["entries"]
            assert sum(e["tool"] == "update_cell" for e in journal) == trials
    finally:
        server.stop()
    ratios = [m / e for m, e in zip(marks, edits, strict=True) if e > 0]
    return {
        "edit p50": q(edits, 0.5),
        "edit p95": q(edits, 0.95),
        "call answered p50": q(answers, 0.5),
        "journal event p50": q(events, 0.5) if events else float("nan"),
        "mark p50": q(marks, 0.5),
        "mark p95": q(marks, 0.95),
        "mark/edit p50": q(marks, 0.5) / q(edits, 0.5),
        "mark/edit median of trials": statistics.median(ratios),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=30)
    figures = asyncio.run(measure(parser.parse_args().trials))
    build = (
        "this checkout's build"
        if (REPO / "jupyter_mcp_ext" / "labextension" / "package.json").exists()
        else "installed"
    )
    print(f"mark latency ({build}), ms after the update_cell call was sent:")
    for name, value in figures.items():
        print(f"  {name}: {value:.2f}" if "/" in name else f"  {name}: {value:.0f} ms")


if __name__ == "__main__":
    main()
