"""Once the server has started, what exists then is left out of Python's full garbage collections
(``MCPExtensionApp.freeze_startup_objects``): a full collection while agents work walks what came
since, not the server's whole heap (110-180 ms a collection under four agents before, 17-37 ms after:
README, "What the person feels"). Servers in a process of their own: in-process test servers never
run the extensions' start hook."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from ..support.server_process import TOKEN, server_on

FROZEN = re.compile(r"(\d+) objects left out of full garbage collections")


def frozen_objects(work: Path, *args: str) -> int | None:
    """How many objects the server said it left out as it started (None: it said nothing); it
    says so before its MCP endpoint line, which ``server_on`` waits for."""
    work.mkdir()
    with server_on(work, *args) as url:
        answer = httpx.post(f"{url}mcp", headers={"Authorization": f"token {TOKEN}"}, json={}, timeout=30)
        assert answer.status_code < 500, answer.text  # it serves on as before
        found = FROZEN.search("".join(p.read_text() for p in work.glob("server-*.log")))
    return int(found[1]) if found else None


def test_a_started_server_leaves_its_startup_objects_out_of_full_collections(tmp_path: Path) -> None:
    frozen = frozen_objects(tmp_path / "on")
    assert frozen is not None and frozen > 50_000  # modules, classes and functions, at least
    assert frozen_objects(tmp_path / "off", "--MCPExtensionApp.freeze_startup_objects=False") is None
