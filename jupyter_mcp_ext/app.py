"""The extension app: its settings, its routes, and on first use the runtime behind them.

A server start loads this module, the settings and a router; the rest (``runtime.Runtime``: the MCP
SDK, the tools, the OAuth server, the person's oversight) is built on the first request to one of
the extension's paths. Every server under a JupyterHub pays for the extension only once it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jupyter_server.utils import url_path_join

from .api.events import ActivityEvents
from .cli.endpoint import startup_line
from .documents.update_store import UpdateStores, default_update_store
from .labextension_check import panel_missing
from .loop import startup_heap
from .routes import Conflict, LazyRoutes, conflicts
from .settings import MCPSettings

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

    from .api.panel import Panel
    from .auth.tokens import TokenStore
    from .loop.gate import LoopGate
    from .people.attendance import Attendance
    from .protocol.tasks import TaskBoard
    from .protocol.transport import MCPTransport
    from .runtime import Runtime
    from .services import Services


class MCPExtensionApp(MCPSettings):
    """Serves MCP at ``<base_url>/mcp`` in the Jupyter Server process, behind Jupyter's auth."""

    name = "jupyter_mcp_ext"
    load_other_extensions = True
    _runtime: Runtime | None = None

    def _link_jupyter_server_extension(self, serverapp: ServerApp) -> None:
        # ExtensionApp's link hook, before collaboration's (extensions link in name order).
        super()._link_jupyter_server_extension(serverapp)
        default_update_store(serverapp.config)

    @property
    def runtime(self) -> Runtime:
        """The extension at work, built on first use (a request to one of its paths, or this)."""
        if self._runtime is None:
            from .runtime import Runtime  # the MCP SDK, the tools, OAuth: only now

            self._runtime = Runtime(self, self.events, self.route_conflicts)
            if self.freeze_startup_objects:  # what it built lives as long as the server, as at start
                self._runtime.freeze()
        return self._runtime

    @property
    def services(self) -> Services:
        return self.runtime.services

    @property
    def panel(self) -> Panel:
        return self.runtime.panel

    @property
    def tokens(self) -> TokenStore:
        return self.runtime.tokens

    @property
    def gate(self) -> LoopGate:
        return self.runtime.gate

    @property
    def transport(self) -> MCPTransport:
        return self.runtime.transport

    @property
    def tasks(self) -> TaskBoard:
        return self.runtime.tasks

    @property
    def attendance(self) -> Attendance:
        return self.runtime.attendance

    def prefixes(self) -> tuple[str, ...]:
        """The paths whose first request builds the runtime: the endpoint, the panel's API, OAuth."""
        assert self.serverapp is not None
        base = self.serverapp.base_url
        return (
            url_path_join(base, self.path),
            url_path_join(base, "api", "mcp") + "/",
            url_path_join(base, "oauth") + "/",
            url_path_join(base, ".well-known") + "/",
            "/.well-known/",
        )

    def initialize_settings(self) -> None:
        # The panel's events are registered now: JupyterLab subscribes to the event bus on loading,
        # before anything builds the runtime, and hears only the schemas known by then.
        assert self.serverapp is not None
        self.events = ActivityEvents(self.serverapp.event_logger)

    def initialize_handlers(self) -> None:
        assert self.serverapp is not None
        web_app = self.serverapp.web_app
        lazy = LazyRoutes(web_app, self.prefixes(), lambda: self.runtime.routes(self))
        web_app.add_handlers(".*$", [(r".*", lazy)])

    async def _start_jupyter_server_extension(self, serverapp: ServerApp) -> None:
        # ExtensionApp's start hook: it runs once the loop is up, after the server's own URL lines.
        if self.freeze_startup_objects:  # every extension has loaded: what exists now lives on
            frozen, took = startup_heap.freeze()
            self.log.info("%d objects left out of full garbage collections (%.0f ms)", frozen, took * 1000)
        for conflict in self.route_conflicts():  # every extension has loaded by now
            self.log.error(conflict.message())
        for notice in [n for n in [panel_missing(serverapp)] if n]:
            self.log.warning(notice)
        # Last, in the same step as the lines above: whoever waits for it finds them written.
        self.log.info(startup_line(serverapp, self.path, self.oauth))
        # Before a tab or an agent opens rooms: rooms starting together would each make the database.
        await UpdateStores(serverapp.web_app.settings).ensure()

    def route_conflicts(self) -> list[Conflict]:
        """Other extensions' handlers on our endpoint's path, as Tornado routes now."""
        assert self.serverapp is not None
        path = url_path_join(self.serverapp.base_url, self.path)
        names = list(self.serverapp.extension_manager.extensions)
        return conflicts(self.serverapp.web_app, path, names)

    async def stop_extension(self) -> None:
        if self._runtime is not None:
            await self._runtime.stop()
