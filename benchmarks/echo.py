"""A person's keystroke echo with this extension loaded and no agent connected, beside the same
server without it (jupyter-collaboration alone), in one run (issue 21: within 1.05x, p50 and p95).

``python -m benchmarks.echo [--quick] [--rounds N] [--json FILE]``

Two servers run side by side, alike but for ``jupyter_mcp_ext`` (turned off in the second's
config). On each, two Yjs clients share a notebook: a keystroke in one is timed until the other's
observer sees it. Keystrokes go in blocks of twenty, one block per server in a shuffled order each
round, so that the machine's drift falls on both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.server import JupyterServer

from .client import write_notebook
from .report import Row, ms, pct, table
from .yjs import YPeer

BLOCK = 20


def servers() -> dict[str, JupyterServer]:
    """``with``: the installed extensions; ``without``: the same with this extension turned off."""
    off = {"ServerApp": {"jpserver_extensions": {"jupyter_mcp_ext": False}}}
    return {
        "with": JupyterServer(prefix="jupyter-mcp-echo-"),
        "without": JupyterServer(off, prefix="jupyter-mcp-echo-"),
    }


async def mcp_status(server: JupyterServer) -> int:
    """The status of a bare POST to the MCP route: 404 where the extension is off. On a server whose
    extension is on, this first request to its route builds what it builds lazily (``runtime.py``),
    as a JupyterLab with the panel open would: loaded, no agent connected."""
    async with httpx.AsyncClient(headers=server.headers, timeout=30) as http:
        return (await http.post(f"{server.url}mcp", json={})).status_code


async def keystrokes(peer: Any, tab: Any) -> list[float]:
    """A block of ``BLOCK`` keystrokes typed in ``peer``, each timed until ``tab`` sees it (seconds);
    a pause of 20 ms after each, a person's pace rather than a flood. Also ``benchmarks.ab``'s idle
    keystroke."""
    keys = []
    for _ in range(BLOCK):
        before = len(tab.sources()[0])
        start = time.perf_counter()
        peer.insert_text(0, 0, "k")
        await tab.wait_for(lambda nb, before=before: len(tab.sources()[0]) > before, timeout=60)
        keys.append(time.perf_counter() - start)
        await asyncio.sleep(0.02)
    return keys


async def measure(rounds: int) -> list[Row]:
    both = servers()
    for server in both.values():
        write_notebook(server.root, "person.ipynb", 3)
        server.start()
    try:
        # The "without" server must not serve MCP, or the comparison says nothing.
        assert await mcp_status(both["without"]) == 404, "jupyter_mcp_ext is still on in 'without'"
        assert await mcp_status(both["with"]) != 404, "jupyter_mcp_ext is not on in 'with'"
        keys: dict[str, list[float]] = {name: [] for name in both}
        async with (
            YPeer(both["with"].url, both["with"].headers, "person.ipynb") as peer_a,
            YPeer(both["with"].url, both["with"].headers, "person.ipynb") as tab_a,
            YPeer(both["without"].url, both["without"].headers, "person.ipynb") as peer_b,
            YPeer(both["without"].url, both["without"].headers, "person.ipynb") as tab_b,
        ):
            pairs = {"with": (peer_a, tab_a), "without": (peer_b, tab_b)}
            for pair in pairs.values():
                await keystrokes(*pair)  # warm-up
            for _ in range(rounds):
                for name in random.sample(list(pairs), len(pairs)):
                    keys[name] += await keystrokes(*pairs[name])
    finally:
        for server in both.values():
            server.stop()
    rows = []
    with_ms, without_ms = ms(keys["with"]), ms(keys["without"])
    for label, q in (("p50", 0.5), ("p95", 0.95)):
        rows.append(
            Row(
                f"person's keystroke {label}, no agent, extension loaded vs not",
                "ms",
                pct(with_ms, q),
                None,
                len(with_ms),
                pct(without_ms, q),
                "jupyter-collaboration alone",
                "ratio",
                1.05,
                "<= 1.05x",
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="few rounds")
    parser.add_argument(
        "--rounds", type=int, help="rounds of a block of twenty per server (default 20, quick 5)"
    )
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args()
    rows = asyncio.run(measure(args.rounds or (5 if args.quick else 20)))
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps([r.as_json() for r in rows], indent=2))


if __name__ == "__main__":
    sys.exit(main())
