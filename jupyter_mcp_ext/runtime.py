"""Everything the extension runs once it is used: the services tools call, the MCP server and its
transport, the person's oversight, agent credentials and OAuth, and the routes that reach them.

Built on the first request to one of the extension's paths (``routes.LazyRoutes``), not at server
start: a server that no agent, OAuth client or panel has used pays for none of it (the MCP SDK,
pydantic's models, the tools, the OAuth server), neither in memory nor in start-up time.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from jupyter_server.utils import url_path_join

from .agents.departures import Departures
from .agents.directory import AgentDirectory
from .agents.presence import Presence
from .api.agents import routes as agent_routes
from .api.events import ActivityEvents
from .api.handlers import routes as panel_routes
from .api.panel import Panel
from .api.review import routes as review_routes
from .auth.handlers import OAuthEndpoint
from .auth.handlers import routes as oauth_routes
from .auth.provider import AgentAuthorizationServer
from .auth.tokens import TokenStore
from .documents import collaboration
from .documents.blank import BlankNotebooks
from .documents.revisions import Revisions
from .documents.rooms import DocumentService
from .documents.secrets import DeniedFiles
from .documents.text_files import TextDocumentService
from .kernels.runs import ExecutionService
from .kernels.sessions import KernelService
from .labextension_check import panel_missing
from .limits import Limits
from .loop import heap_trim, startup_heap
from .loop.gate import LoopGate
from .people.attendance import Attendance
from .people.oversight import build_oversight
from .protocol.handler import OAUTH_DISCOVERY_ROUTES, MCPHandler, NoOAuthHandler, body_limit
from .protocol.server import build_server
from .protocol.tasks import TaskBoard
from .protocol.transport import MCPTransport
from .routes import Conflict
from .services import Services
from .settings import MCPSettings
from .tools import ALL, conformance

Route = tuple[str, type, dict[str, Any]]


class Runtime:
    """The extension at work, built from the app's settings once something uses it.

    ``app`` is the extension app (its settings and server), ``events`` the panel's activity events,
    registered at start, and ``conflicts`` the other extensions routing the endpoint's path.
    """

    def __init__(self, app: MCPSettings, events: ActivityEvents, conflicts: Callable[[], list[Conflict]]):
        serverapp = app.serverapp
        assert serverapp is not None
        self._web_settings = serverapp.web_app.settings
        self._freeze_pending = False
        denied = DeniedFiles(app.denied_files)
        documents = DocumentService(
            serverapp.web_app.settings,
            serverapp.contents_manager,
            idle_timeout=app.room_idle_timeout,
            max_save_delay=app.max_save_delay,
            denied=denied,
            ready_timeout=app.room_ready_timeout,
        )
        BlankNotebooks(serverapp.web_app.settings, serverapp.contents_manager).listen(serverapp.event_logger)
        kernels = KernelService(
            serverapp, idle_timeout=app.kernel_idle_timeout, keep_chars=app.max_document_output_bytes
        )
        agents = AgentDirectory(suffix=app.agent_name_suffix, idle_timeout=app.agent_idle_timeout)
        self.services = Services(
            documents=documents,
            contents=serverapp.contents_manager,
            sessions=serverapp.session_manager,
            kernelspecs=serverapp.kernel_spec_manager,
            default_kernel=serverapp.kernel_manager.default_kernel_name,
            limits=Limits(
                max_result_bytes=app.max_result_bytes,
                max_output_chars=app.max_output_chars,
                max_images=app.max_images,
                max_source_chars=app.max_source_chars,
                default_timeout=app.default_timeout,
                max_timeout=app.max_timeout,
            ),
            kernels=kernels,
            execution=ExecutionService(
                kernels, documents, max_document_output_bytes=app.max_document_output_bytes
            ),
            text_documents=TextDocumentService(
                serverapp.web_app.settings,
                serverapp.contents_manager,
                max_file_bytes=app.max_file_bytes,
                max_download_bytes=app.max_download_bytes,
                denied=denied,
                saves=documents.saves,
            ),
            settings={name: getattr(app, name) for name in app.setting_names()},
            revisions=Revisions(app.revision_memory_bytes),
            agents=agents,
            presence=Presence(serverapp.web_app.settings, serverapp.contents_manager, agents),
        )
        # Agents that leave: their rooms close as a closed tab's, their sessions' reads go; nobody left: heap trimmed.
        self.departures = Departures(agents, documents, self.services.revisions, release=self._release)
        self.attendance = Attendance(
            serverapp.web_app.settings,
            is_agent=lambda h: isinstance(h, (MCPHandler, NoOAuthHandler, OAuthEndpoint)),
            base_url=serverapp.base_url,
            agent_paths=frozenset({url_path_join(serverapp.base_url, app.path)}),
            agent_prefixes=(  # OAuth's endpoints and discovery documents (``auth/handlers.py``)
                url_path_join(serverapp.base_url, "oauth") + "/",
                url_path_join(serverapp.base_url, ".well-known") + "/",
                "/.well-known/",
            ),
        )
        self.gate = LoopGate(
            app.mcp_loop_share,
            person_here=self.attendance.person_here,
            free_step=app.mcp_loop_free_step_ms / 1000,
            time_slice=app.mcp_loop_slice_ms / 1000,
            waiting_share=app.mcp_loop_waiting_share,
        )
        oversight = build_oversight(
            self.services,
            events.emit,
            journal_size=app.journal_size,
            journal_bytes=app.journal_bytes,
            approval_timeout=app.approval_timeout,
            policy_file=app.policy_file,
            journal_file=app._journal_path(),
            journal_max_age=app.journal_max_age,
            approval_limits={
                "per_agent": app.max_pending_approvals,
                "max_chars": app.max_approval_chars,
                "turn_calls": app.approval_turn_calls,
                "turn_seconds": app.approval_turn_seconds,
            },
        )
        tools = ALL + (conformance.TOOLS if app.conformance_tools else [])
        self.tasks = TaskBoard()
        self.transport = MCPTransport(
            build_server(self.services, oversight.guard, tools, self.tasks),
            session_idle_timeout=app.session_idle_timeout,
            retry_interval_ms=app.sse_retry_interval,
            max_body_bytes=body_limit(app.max_file_bytes),
            max_sessions_per_principal=app.max_sessions_per_user,
            max_sessions=app.max_sessions,
            agents=self.services.agents,
            # Kernel calls run long: they stream, so progress, resumption and cancelling reach them.
            streaming_tools=frozenset(
                t.name for t in tools if t.resource == "kernels" or t in conformance.TOOLS
            ),
        )
        self.tokens = TokenStore(
            app._agents_path(),
            url_path_join(serverapp.base_url, "mcp"),
            server=app._server_identity(),
            legacy=app._legacy_agents_path(),
            checked=frozenset(pair for spec in tools for pair in spec.permissions),
        )
        self.panel = Panel(
            oversight,
            self.transport,
            events,
            self.services,
            path=app.path,
            conflicts=conflicts,
            notices=lambda: [n for n in [panel_missing(serverapp)] if n],
        )
        # A person's requests from now on, each start and end of their waiting told to the gate.
        self.attendance.listen(serverapp.web_app, on_wait=self.gate.person_waits)

    def freeze(self) -> None:
        """Leave the objects the runtime built out of full garbage collections, as the server's own are
        from its start (``loop/startup_heap.py``): they live as long as the server.

        Unless a notebook's room is open now (a tab restored as JupyterLab loads sends the panel's first
        request too): a freeze keeps every object tracked at that moment, the room's document with them,
        and the document's cycles would never be collected once its tab closed. The freeze then waits for
        the first time every agent has left with no room open (``_release``).
        """
        if collaboration.open_documents(self._web_settings):
            self._freeze_pending = True
        else:
            startup_heap.freeze()

    def _release(self) -> heap_trim.Released:
        """Every agent has left (``agents/departures.py``): collect and give the free heap back, then
        freeze if a freeze waits and no room is open (after the collections: a closed room's document
        is freed only by the second, and would otherwise be frozen with the rest).

        While the freeze waits with a notebook open, nothing is collected here: a full collection then
        walks the runtime's objects too, twice, on the loop of a person working in that notebook. Python's own collections free the closed rooms meanwhile.
        """
        if self._freeze_pending and collaboration.open_documents(self._web_settings):
            return heap_trim.release(collect=False)
        released = heap_trim.release()
        if self._freeze_pending:
            self._freeze_pending = False
            startup_heap.freeze()
        return released

    def routes(self, app: MCPSettings) -> list[Route]:
        """Every route, in the order Tornado must try them."""
        serverapp = app.serverapp
        assert serverapp is not None
        base = serverapp.base_url
        mcp = {
            "transport": self.transport,
            "max_body_bytes": body_limit(app.max_file_bytes),
            "gate": self.gate,
            "tokens": self.tokens,
            "accept_jupyter_token": app.accept_jupyter_token,
            "oauth": app.oauth,
        }
        # On the server's own route (not under /jupyter_mcp_ext/): <base_url>/<path> (default mcp).
        found: list[Route] = [(url_path_join(base, re.escape(app.path)), MCPHandler, mcp)]
        found += panel_routes(base, self.panel)
        found += review_routes(base, self.panel)
        found += agent_routes(url_path_join(base, "api", "mcp"), self.panel, self.tokens)
        # Without Jupyter's auth there is no person to ask, and no sign-in is needed: no OAuth then.
        if app.oauth and serverapp.identity_provider.auth_enabled:  # before the quiet 404s below
            server = AgentAuthorizationServer(
                self.tokens,
                url_path_join(base, "oauth", "consent"),
                access_lifetime=app.access_token_lifetime,
                refresh_lifetime=app.refresh_token_lifetime,
                documents=app.oauth_client_documents,
            )
            found += oauth_routes(base, server)
        found += [(r, NoOAuthHandler, {}) for r in OAUTH_DISCOVERY_ROUTES]
        return found

    async def stop(self) -> None:
        await self.transport.stop()
        await self.tasks.stop()
        self.gate.uninstall()
        try:
            await self.services.stop()
        finally:
            await asyncio.to_thread(self.panel.close)  # the journal's last writes reach its file
