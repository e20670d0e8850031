"""The extension app: its settings (``c.MCPExtensionApp.<name>``), its services, and its route."""

from __future__ import annotations

from jupyter_server.extension.application import ExtensionApp
from jupyter_server.utils import url_path_join
from traitlets import Float, Int, List, Unicode

from .documents.rooms import DocumentService
from .documents.secrets import DEFAULT_DENIED, DeniedFiles
from .documents.text_files import TextDocumentService
from .kernels.runs import ExecutionService
from .kernels.sessions import KernelService
from .limits import Limits
from .protocol.handler import MCPHandler
from .protocol.server import build_server
from .protocol.transport import MCPTransport
from .services import Services
from .tools import ALL


class MCPExtensionApp(ExtensionApp):
    """Serves MCP at ``<base_url>/mcp`` in the Jupyter Server process, behind Jupyter's auth."""

    name = "jupyter_mcp_ext"
    load_other_extensions = True

    room_idle_timeout = Float(
        300.0,
        config=True,
        help="Seconds after an agent's last use before a notebook room it opened, and that no tab has "
        "open, is closed (its content is saved first). Rooms that a tab uses are left to the "
        "collaboration layer.",
    )
    session_idle_timeout = Float(
        1800.0,
        config=True,
        allow_none=True,
        help="Seconds without requests after which an MCP session is closed; None keeps sessions "
        "until the client ends them.",
    )
    sse_retry_interval = Int(
        1000,
        config=True,
        help="Milliseconds a client waits before reconnecting a dropped SSE stream (the SSE 'retry' field).",
    )
    max_result_bytes = Int(64_000, config=True, help="Bytes of text and images one tool result may carry.")
    max_output_chars = Int(8_000, config=True, help="Characters kept of any one output in a result.")
    max_images = Int(4, config=True, help="Images one tool result may carry; more are counted, not sent.")
    kernel_idle_timeout = Float(
        3600.0,
        config=True,
        help="Seconds without runs after which a kernel this extension started, for a notebook no tab is "
        "connected to, is shut down. The server's own culling settings apply as well.",
    )
    default_timeout = Float(
        120.0, config=True, help="Seconds an execution call waits when the agent gives no timeout."
    )
    max_timeout = Float(
        600.0, config=True, help="Largest timeout, in seconds, an agent may ask an execution call for."
    )
    max_document_output_bytes = Int(
        5_000_000,
        config=True,
        help="Bytes of output one cell run keeps, in the notebook and in memory; past it the cell says it was cut.",
    )
    max_source_chars = Int(
        1_000_000, config=True, help="Largest cell source, in characters, an agent may write."
    )
    max_file_bytes = Int(
        10_000_000,
        config=True,
        help="Largest file, in bytes, read_file and edit_file load and write_file writes.",
    )
    max_download_bytes = Int(
        1_000_000, config=True, help="Largest file, in bytes, download_file returns (before base64)."
    )
    denied_files = List(
        Unicode(),
        list(DEFAULT_DENIED),
        config=True,
        help="Patterns of secret files agents may not read, write, move or delete (case-insensitive; "
        "without a slash, the file's name: '*.pem'; with one, the end of its path: '.git/config'). "
        "Symbolic links are followed. An empty list turns the check off.",
    )

    def initialize_settings(self) -> None:
        serverapp = self.serverapp
        assert serverapp is not None
        denied = DeniedFiles(self.denied_files)
        documents = DocumentService(
            serverapp.web_app.settings,
            serverapp.contents_manager,
            idle_timeout=self.room_idle_timeout,
            denied=denied,
        )
        kernels = KernelService(
            serverapp, idle_timeout=self.kernel_idle_timeout, keep_chars=self.max_document_output_bytes
        )
        self.services = Services(
            documents=documents,
            contents=serverapp.contents_manager,
            sessions=serverapp.session_manager,
            kernelspecs=serverapp.kernel_spec_manager,
            default_kernel=serverapp.kernel_manager.default_kernel_name,
            limits=Limits(
                max_result_bytes=self.max_result_bytes,
                max_output_chars=self.max_output_chars,
                max_images=self.max_images,
                max_source_chars=self.max_source_chars,
                default_timeout=self.default_timeout,
                max_timeout=self.max_timeout,
            ),
            kernels=kernels,
            execution=ExecutionService(
                kernels, documents, max_document_output_bytes=self.max_document_output_bytes
            ),
            text_documents=TextDocumentService(
                serverapp.web_app.settings,
                serverapp.contents_manager,
                max_file_bytes=self.max_file_bytes,
                max_download_bytes=self.max_download_bytes,
                denied=denied,
            ),
            settings={name: getattr(self, name) for name in self.class_own_traits(config=True)},
        )
        self.transport = MCPTransport(
            build_server(self.services, ALL),
            session_idle_timeout=self.session_idle_timeout,
            retry_interval_ms=self.sse_retry_interval,
        )

    def initialize_handlers(self) -> None:
        # Registered on the server's own route (not under /jupyter_mcp_ext/), at <base_url>/mcp.
        assert self.serverapp is not None
        route = url_path_join(self.serverapp.base_url, "mcp")
        self.serverapp.web_app.add_handlers(".*$", [(route, MCPHandler, {"transport": self.transport})])
        self.log.info("MCP endpoint at %s", route)

    async def stop_extension(self) -> None:
        await self.transport.stop()
        await self.services.stop()
