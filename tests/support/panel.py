"""The MCP panel's REST API as a test (or the panel) calls it: ``<base_url>/api/mcp/...``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import httpx


class PanelAPI:
    def __init__(self, server_url: str, headers: Mapping[str, str]):
        self.base = f"{server_url}api/mcp/"
        self.http = httpx.AsyncClient(headers=dict(headers), timeout=30)

    async def __aenter__(self) -> PanelAPI:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.http.aclose()

    async def get(self, route: str, **params: Any) -> Any:
        response = await self.http.get(self.base + route, params=params)
        assert response.status_code == 200, (route, response.status_code, response.text)
        return response.json()

    async def post(self, route: str, body: Mapping[str, Any] | None = None, status: int = 200) -> Any:
        response = await self.http.post(self.base + route, json=dict(body or {}))
        assert response.status_code == status, (route, response.status_code, response.text)
        return response.json()

    async def journal(self, **params: Any) -> list[dict[str, Any]]:
        return (await self.get("journal", **params))["entries"]

    async def entry(self, tool: str) -> dict[str, Any]:
        """The newest journal entry of a tool."""
        return next(e for e in await self.journal() if e["tool"] == tool)

    async def revert(self, entry: int, status: int = 200) -> dict[str, Any]:
        return await self.post("revert", {"entry": entry}, status=status)

    async def until(self, probe: Callable[[], Any], timeout: float = 20.0) -> Any:
        """The first truthy result of an async probe, checked every 50 ms."""
        async with asyncio.timeout(timeout):
            while not (value := await probe()):
                await asyncio.sleep(0.05)
        return value
