"""A handshake-era MCP session over bare HTTP: the JSON sent is exactly what ``json.dumps`` writes.

Unlike the SDK's client it is tied to no task, so calls can be started from one step of a test and
awaited in another (a call waiting for a person's approval), and the status, body and headers are
seen as sent.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx2

from ..support.mcp_client import RAW_HEADERS, RAW_INITIALIZE, RAW_VERSION


class RawClient:
    """A handshake-era MCP session over bare HTTP: the JSON sent is exactly what json.dumps writes."""

    def __init__(self, url: str, headers: dict[str, str]):
        self.url = f"{url}mcp"
        self.http = httpx2.AsyncClient(timeout=httpx2.Timeout(60))
        self.headers = {**headers, **RAW_HEADERS}
        self.next_id = 0

    async def open(self) -> None:
        init = self._body("initialize", RAW_INITIALIZE["params"])
        answer = await self.http.post(self.url, content=init, headers=self.headers)
        assert answer.status_code == 200, answer.text
        self.headers["Mcp-Session-Id"] = answer.headers["mcp-session-id"]
        self.headers["Mcp-Protocol-Version"] = RAW_VERSION
        body = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert (await self.http.post(self.url, content=body, headers=self.headers)).status_code == 202

    def _body(self, method: str, params: Any) -> str:
        self.next_id += 1
        return json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})

    async def call(self, tool: str, args: Any) -> tuple[int, dict[str, Any] | None, str]:
        """HTTP status, the JSON-RPC response (from the SSE stream or a JSON body), and the raw text."""
        body = self._body("tools/call", {"name": tool, "arguments": args})
        answer = await self.http.post(self.url, content=body, headers=self.headers)
        text = answer.text
        message = None
        for line in re.split(r"\r\n|\r|\n", text):  # SSE's line ends; str.splitlines also splits at U+0085
            if line.startswith("data:") and line[5:].strip():
                candidate = json.loads(line[5:])
                if "id" in candidate and ("result" in candidate or "error" in candidate):
                    message = candidate
        if message is None and text.startswith("{"):
            message = json.loads(text)
        return answer.status_code, message, text

    async def close(self) -> None:
        await self.http.aclose()
