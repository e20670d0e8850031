"""The client side: benchmark notebooks, an SDK client session, tool calls, the editing calls."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import nbformat
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.server import JupyterServer


def raw_initialize(version: str) -> dict[str, Any]:
    """The ``initialize`` request of a raw HTTP client (one whose own CPU does not hide the server's)."""
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}


def write_notebook(root: Path, name: str, cells: int, *, big: bool = False) -> Path:
    """A notebook on disk; ``big`` cells are ~2.6 kB each (500 of them make ~1.3 MB)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
        "language_info": {"name": "python"},
    }
    for i in range(cells):
        if big:
            body = "\n".join(f"value_{i}_{j} = compute({j}, 'some argument text here')" for j in range(30))
            cell = nbformat.v4.new_code_cell(f"# cell {i}\n{body}\nmarker_{i} = 0")
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"line {i}\n" * 60)]
            cell.execution_count = i + 1
        else:
            cell = nbformat.v4.new_code_cell(f"# cell {i}\nx_{i} = {i} * 2\nmarker_{i} = 0")
        nb.cells.append(cell)
    path = root / name
    path.write_text(nbformat.writes(nb), encoding="utf-8")
    return path


def cell_ids(path: Path) -> list[str]:
    return [c["id"] for c in json.loads(path.read_text())["cells"]]


@asynccontextmanager
async def mcp_client(server: JupyterServer) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers=server.headers, timeout=httpx2.Timeout(60, read=120))
    transport = streamable_http_client(f"{server.url}mcp", http_client=http)
    async with http, Client(transport, mode="legacy") as client:
        yield client


class ToolFailed(RuntimeError):
    pass


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        text = " ".join(b.text for b in result.content if b.type == "text")
        raise ToolFailed(f"{tool}: {text}")
    return result.structured_content or {}


class Editor:
    """The three editing calls on one notebook, each keeping the notebook as it was."""

    def __init__(self, client: Client, path: str, ids: list[str]):
        self.client, self.path, self.ids = client, path, ids
        self.target = ids[len(ids) // 2]
        self.flip = False

    async def read(self) -> None:
        await call(self.client, "read_cells", path=self.path, cell_ids=[self.target])

    async def insert(self) -> str:
        out = await call(
            self.client,
            "insert_cells",
            path=self.path,
            cells=[{"cell_type": "code", "source": "y = 1"}],
            after=self.target,
        )
        return out["cell_ids"][0]

    async def update(self) -> None:
        old, new = ("marker_", "MARKER_") if not self.flip else ("MARKER_", "marker_")
        self.flip = not self.flip
        await call(
            self.client, "update_cell", path=self.path, cell_id=self.target, old_string=old, new_string=new
        )

    async def insert_then_delete(self) -> float:
        """Seconds the insert took; the cell is deleted after it (untimed), so the notebook keeps its size."""
        start = time.perf_counter()
        new_id = await self.insert()
        took = time.perf_counter() - start
        await call(self.client, "delete_cells", path=self.path, cell_ids=[new_id])
        return took
