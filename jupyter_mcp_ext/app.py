"""The extension app: its services and its routes, wired from the settings in ``settings.py``."""

from __future__ import annotations

import asyncio
import re

from jupyter_server.utils import url_path_join

from . import startup_heap
from .api.agents import routes as agent_routes
from .api.handlers import routes as panel_routes
from .api.panel import Panel
from .api.review import routes as review_routes
from .auth.handlers import OAuthEndpoint
from .auth.handlers import routes as oauth_routes
from .auth.provider import AgentAuthorizationServer
from .auth.tokens import TokenStore
from .documents.blank import BlankNotebooks
from .documents.revisions import Revisions
from .documents.rooms import DocumentService
from .documents.secrets import DeniedFiles
from .documents.text_files import TextDocumentService
from .documents.update_store import default_update_store
from .endpoint import startup_line
from .gate import LoopGate
from .kernels.runs import ExecutionService
from .kernels.sessions import KernelService
from .labextension_check import panel_missing
from .limits import Limits
from .people.agents import AgentDirectory
from .people.attendance import Attendance
from .people.presence import Presence
from .protocol.handler import OAUTH_DISCOVERY_ROUTES, MCPHandler, NoOAuthHandler, body_limit
from .protocol.server import build_server
from .protocol.tasks import TaskBoard
from .protocol.transport import MCPTransport
from .routes import Conflict, conflicts
from .services import Services
from .settings import MCPSettings
from .tools import ALL, conformance


class MCPExtensionApp(MCPSettings):
    """Serves MCP at ``<base_url>/mcp`` in the Jupyter Server process, behind Jupyter's auth."""

    name = "jupyter_mcp_ext"
    load_other_extensions = True

    def _link_jupyter_server_extension(self, serverapp) -> None:  # type: ignore[no-untyped-def]
        # ExtensionApp's link hook, before collaboration's (extensions link in name order).
        super()._link_jupyter_server_extension(serverapp)
        default_update_store(serverapp.config)

    def initialize_settings(self) -> None:
        serverapp = self.serverapp
        assert serverapp is not None
        denied = DeniedFiles(self.denied_files)
        documents = DocumentService(
            serverapp.web_app.settings,
            serverapp.contents_manager,
            idle_timeout=self.room_idle_timeout,
            max_save_delay=self.max_save_delay,
            denied=denied,
            ready_timeout=self.room_ready_timeout,
        )
        BlankNotebooks(serverapp.web_app.settings, serverapp.contents_manager).listen(serverapp.event_logger)
        kernels = KernelService(
            serverapp, idle_timeout=self.kernel_idle_timeout, keep_chars=self.max_document_output_bytes
        )
        agents = AgentDirectory(suffix=self.agent_name_suffix, idle_timeout=self.agent_idle_timeout)
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
                saves=documents.saves,
            ),
            settings={name: getattr(self, name) for name in self.setting_names()},
            revisions=Revisions(self.revision_memory_bytes),
            agents=agents,
            presence=Presence(serverapp.web_app.settings, serverapp.contents_manager, agents),
        )
        self.attendance = Attendance(
            serverapp.web_app.settings,
            is_agent=lambda h: isinstance(h, (MCPHandler, NoOAuthHandler, OAuthEndpoint)),
            base_url=serverapp.base_url,
            agent_paths=frozenset({url_path_join(serverapp.base_url, self.path)}),
            agent_prefixes=(  # OAuth's endpoints and discovery documents (``auth/handlers.py``)
                url_path_join(serverapp.base_url, "oauth") + "/",
                url_path_join(serverapp.base_url, ".well-known") + "/",
                "/.well-known/",
            ),
        )
        self.gate = LoopGate(
            self.mcp_loop_share,
            person_here=self.attendance.person_here,
            free_step=self.mcp_loop_free_step_ms / 1000,
            time_slice=self.mcp_loop_slice_ms / 1000,
            waiting_share=self.mcp_loop_waiting_share,
        )
        self.attendance.on_wait = self.gate.person_waits
        tools = ALL + (conformance.TOOLS if self.conformance_tools else [])
        self.tasks = TaskBoard()
        self.transport = MCPTransport(
            build_server(self.services, tools, self.tasks),
            session_idle_timeout=self.session_idle_timeout,
            retry_interval_ms=self.sse_retry_interval,
            max_body_bytes=body_limit(self.max_file_bytes),
            max_sessions_per_principal=self.max_sessions_per_user,
            max_sessions=self.max_sessions,
            agents=self.services.agents,
            # Kernel calls run long: they stream, so progress, resumption and cancelling reach them.
            streaming_tools=frozenset(
                t.name for t in tools if t.resource == "kernels" or t in conformance.TOOLS
            ),
        )
        self.tokens = TokenStore(self._agents_path(), url_path_join(serverapp.base_url, "mcp"))
        self.tokens.checked = frozenset(pair for spec in tools for pair in spec.permissions)
        self.panel = Panel.build(
            self.services,
            self.transport,
            serverapp.event_logger,
            journal_size=self.journal_size,
            journal_bytes=self.journal_bytes,
            approval_timeout=self.approval_timeout,
            policy_file=self.policy_file,
            journal_file=self._journal_path(),
            journal_max_age=self.journal_max_age,
            approval_limits={
                "per_agent": self.max_pending_approvals,
                "max_chars": self.max_approval_chars,
                "turn_calls": self.approval_turn_calls,
                "turn_seconds": self.approval_turn_seconds,
            },
        )
        self.panel.path, self.panel.conflicts = self.path, self.route_conflicts
        self.panel.notices = lambda: [n for n in [panel_missing(serverapp)] if n]

    def initialize_handlers(self) -> None:
        # Registered on the server's own route (not under /jupyter_mcp_ext/), at <base_url>/<path> (default mcp).
        assert self.serverapp is not None
        route = url_path_join(self.serverapp.base_url, re.escape(self.path))
        limit = body_limit(self.max_file_bytes)
        self.serverapp.web_app.add_handlers(
            ".*$",
            [
                (
                    route,
                    MCPHandler,
                    {
                        "transport": self.transport,
                        "max_body_bytes": limit,
                        "gate": self.gate,
                        "tokens": self.tokens,
                        "accept_jupyter_token": self.accept_jupyter_token,
                        "oauth": self.oauth,
                    },
                )
            ],
        )
        self.serverapp.web_app.add_handlers(".*$", panel_routes(self.serverapp.base_url, self.panel))
        self.serverapp.web_app.add_handlers(".*$", review_routes(self.serverapp.base_url, self.panel))
        api = url_path_join(self.serverapp.base_url, "api", "mcp")
        self.serverapp.web_app.add_handlers(".*$", agent_routes(api, self.panel, self.tokens))
        # Without Jupyter's auth there is no person to ask, and no sign-in is needed: no OAuth then.
        if self.oauth and self.serverapp.identity_provider.auth_enabled:  # before the quiet 404s below
            server = AgentAuthorizationServer(
                self.tokens,
                url_path_join(self.serverapp.base_url, "oauth", "consent"),
                access_lifetime=self.access_token_lifetime,
                refresh_lifetime=self.refresh_token_lifetime,
                documents=self.oauth_client_documents,
            )
            self.serverapp.web_app.add_handlers(".*$", oauth_routes(self.serverapp.base_url, server))
        self.serverapp.web_app.add_handlers(".*$", [(r, NoOAuthHandler) for r in OAUTH_DISCOVERY_ROUTES])
        # After ExtensionApp has written our settings into the server's.
        self.attendance.listen(self.serverapp.web_app)

    async def _start_jupyter_server_extension(self, serverapp) -> None:  # type: ignore[no-untyped-def]
        # ExtensionApp's start hook: it runs once the loop is up, after the server's own URL lines.
        if self.freeze_startup_objects:  # every extension has loaded: what exists now lives on
            frozen, took = startup_heap.freeze()
            self.log.info("%d objects left out of full garbage collections (%.0f ms)", frozen, took * 1000)
        for conflict in self.route_conflicts():  # every extension has loaded by now
            self.log.error(conflict.message())
        for notice in self.panel.notices():
            self.log.warning(notice)
        # Last, in the same step as the lines above: whoever waits for it finds them written.
        self.log.info(startup_line(serverapp, self.path, self.oauth))
        # Before a tab or an agent opens rooms: rooms starting together would each make the database.
        await self.services.documents.stores.ensure()

    def route_conflicts(self) -> list[Conflict]:
        """Other extensions' handlers on our endpoint's path, as Tornado routes now."""
        assert self.serverapp is not None
        path = url_path_join(self.serverapp.base_url, self.path)
        names = list(self.serverapp.extension_manager.extensions)
        return conflicts(self.serverapp.web_app, path, (MCPHandler,), names)

    async def stop_extension(self) -> None:
        await self.transport.stop()
        await self.tasks.stop()
        self.gate.uninstall()
        try:
            await self.services.stop()
        finally:
            await asyncio.to_thread(self.panel.close)  # the journal's last writes reach its file
