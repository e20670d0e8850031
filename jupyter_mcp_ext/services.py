"""The services tools call, built once by the extension app and shared by every MCP session."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .documents import DocumentService
from .limits import Limits


@dataclass
class Services:
    documents: DocumentService
    contents: Any  # the server's ContentsManager
    sessions: Any  # the server's SessionManager
    kernelspecs: Any  # the server's KernelSpecManager
    default_kernel: str
    limits: Limits

    async def stop(self) -> None:
        await self.documents.stop()
