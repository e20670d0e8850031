"""An agent host on the TypeScript MCP SDK (``tests/ts_client/connect.mjs``), run by Node.js.

The script prints the authorization URL its SDK made; the test gives consent there as a person would
(``consent`` returns once the browser has been sent back to the script's loopback listener), and the
script then lists the tools, calls one and prints what it got.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parents[1] / "ts_client"
SDK = HERE / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
APPS_SDK = HERE / "node_modules" / "@modelcontextprotocol" / "ext-apps" / "package.json"


def node() -> str:
    """Node.js, with the script's locked packages installed (``npm ci``, once); skips without Node."""
    found = shutil.which("node")
    if found is None:
        pytest.skip("Node.js is not installed: the TypeScript SDK's client cannot run")
    if not (SDK.exists() and APPS_SDK.exists()):
        npm = shutil.which("npm")
        assert npm, "Node.js is installed without npm: install npm to run the TypeScript SDK's client"
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"npm ci in {HERE} failed:\n{done.stderr[-2000:]}"
    return found


async def connect(
    mcp_url: str, consent: Callable[[str], Awaitable[None]], tool: str = "list_files", **arguments: Any
) -> dict[str, Any]:
    """Run the TypeScript host against ``mcp_url``; ``consent`` answers its authorization URL."""
    proc = await asyncio.create_subprocess_exec(
        node(),
        str(HERE / "connect.mjs"),
        mcp_url,
        tool,
        json.dumps(arguments),
        cwd=HERE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = json.loads(await asyncio.wait_for(proc.stdout.readline(), 60) or b'{"error": "no output"}')
        assert "authorize" in line, line
        await consent(line["authorize"])
        done = json.loads(await asyncio.wait_for(proc.stdout.readline(), 60) or b'{"error": "no output"}')
        assert "error" not in done, done["error"]
        return {"authorize": line["authorize"], **done}
    finally:
        if proc.returncode is None:
            proc.kill()
        stderr = await proc.stderr.read() if proc.stderr else b""
        await proc.wait()
        if stderr.strip():
            print(stderr.decode(errors="replace")[-2000:])


async def apps_host(mcp_url: str, token: str, path: str, kind: str = "ui") -> dict[str, Any]:
    """Run the TypeScript Apps host (``ts_client/apps.mjs``): it declares the Apps extension
    (``kind="ui"``) or not (``"plain"``), lists the tools, reads the view and reads ``path``'s cells."""
    proc = await asyncio.create_subprocess_exec(
        node(),
        str(HERE / "apps.mjs"),
        mcp_url,
        token,
        path,
        kind,
        cwd=HERE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    done = json.loads(out.decode().strip().splitlines()[-1] if out.strip() else '{"error": "no output"}')
    assert "error" not in done, f"{done['error']}\n{err.decode(errors='replace')[-2000:]}"
    return done
