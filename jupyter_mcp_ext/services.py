"""The services tools call, built once by the extension app and shared by every MCP session."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .agents.directory import AgentDirectory
from .agents.presence import Presence
from .documents.revisions import Revisions
from .documents.rooms import DocumentService
from .documents.text_files import TextDocumentService
from .kernels.runs import ExecutionService
from .kernels.sessions import KernelService
from .limits import Limits


@dataclass
class Services:
    documents: DocumentService
    contents: Any  # the server's ContentsManager
    sessions: Any  # the server's SessionManager
    kernelspecs: Any  # the server's KernelSpecManager
    default_kernel: str
    limits: Limits
    kernels: KernelService
    execution: ExecutionService
    text_documents: TextDocumentService = field(kw_only=True)
    settings: dict[str, Any] = field(kw_only=True, default_factory=dict)  # the app's effective settings
    revisions: Revisions = field(kw_only=True, default_factory=Revisions)  # what each agent read
    agents: AgentDirectory = field(kw_only=True, default_factory=AgentDirectory)  # who calls, where
    presence: Presence | None = field(kw_only=True, default=None)  # agents as collaborators in rooms

    async def stop(self) -> None:
        await self.agents.stop()
        if self.presence is not None:
            await self.presence.stop()
        await self.execution.stop()
        await self.kernels.stop()
        await self.documents.stop()
