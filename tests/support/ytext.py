"""A second Yjs client in a text file's room, like a JupyterLab editor tab (``text:file:<fileId>``).

Same connection machinery as ``YPeer`` (yclient.py); only the session request and the room differ,
and the document is read as a ``YUnicode``.
"""

from __future__ import annotations

from typing import Any

from jupyter_ydoc import YUnicode
from pycrdt import Text

from .yclient import YPeer


class TextPeer(YPeer):
    """``async with TextPeer(server_url, jp_auth_header, "notes.txt") as tab:`` joins like an editor tab."""

    file_format = "text"
    file_type = "file"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        YUnicode(self.ydoc)  # declare the document's shared types as JupyterLab's editor does

    @property
    def text(self) -> str:
        return str(self.ydoc.get("source", type=Text))

    def type_at(self, pos: int, text: str) -> None:
        """Type ``text`` at character ``pos`` (pycrdt counts UTF-8 bytes, converted here)."""
        source = self.ydoc.get("source", type=Text)
        source.insert(len(str(source)[:pos].encode()), text)

    async def wait_for_text(self, expected: str) -> None:
        await self.wait_for(lambda _: self.text == expected or None, timeout=None)
