"""A second Yjs client in a text file's room, like a JupyterLab editor tab (``text:file:<fileId>``).

Same connection machinery as ``YPeer`` (yclient.py); only the session request and the room differ,
and the document is read as a ``YUnicode``.
"""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import httpx
from jupyter_ydoc import YUnicode
from pycrdt import Text

from .yclient import YPeer


class TextPeer(YPeer):
    """``async with TextPeer(server_url, jp_auth_header, "notes.txt") as tab:`` joins like an editor tab."""

    @property
    def text(self) -> str:
        return str(self.ydoc.get("source", type=Text))

    def type_at(self, pos: int, text: str) -> None:
        """Type ``text`` at character ``pos`` (pycrdt counts UTF-8 bytes, converted here)."""
        source = self.ydoc.get("source", type=Text)
        source.insert(len(str(source)[:pos].encode()), text)

    async def wait_for_text(self, expected: str) -> None:
        await self.wait_for(lambda _: self.text == expected or None, timeout=None)

    async def __aenter__(self) -> TextPeer:
        YUnicode(self.ydoc)  # declare the document's shared types as JupyterLab's editor does
        async with httpx.AsyncClient(headers=self.headers, timeout=self.timeout) as client:
            resp = await client.put(
                f"{self.server_url}api/collaboration/session/{quote(self.path)}",
                json={"format": "text", "type": "file"},
            )
        resp.raise_for_status()
        session = resp.json()
        self.file_id, self.session_id = session["fileId"], session["sessionId"]
        self.room_id = f"text:file:{self.file_id}"
        ready = asyncio.get_running_loop().create_future()
        self._runner = asyncio.create_task(self._run(ready), name=f"TextPeer {self.path}")
        try:
            await ready
            await self.synced()
        except BaseException:
            await self.close()
            raise
        return self
