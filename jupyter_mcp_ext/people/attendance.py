"""Whether a person is using this server now, so that the loop gate holds agents back only for one.

The gate (``gate.py``) keeps agents to a share of the event loop so that a person's typing, file
browser and kernels are served first. With nobody but agents on the server there is nobody to serve
first, and holding a lone agent back would only make it slower. A person is taken to be here while
a collaboration room has a client (a notebook or file open in a JupyterLab tab) or a request other
than an agent's or a health probe's reached the server in the last ``recent`` seconds (an open
JupyterLab polls sessions, kernels and contents every few seconds; a load balancer, Kubernetes or a
script waiting for the server asks ``/api`` or ``/api/status``, and is nobody to make way for).

Requests are seen through Tornado's ``log_function`` setting, which the application calls once at the
end of every request; the one in place (Jupyter's access log) is kept and called first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from jupyter_server.base.handlers import APIVersionHandler
from jupyter_server.services.api.handlers import APIStatusHandler

CHECK_EVERY = 0.25  # seconds between looks at the rooms
PROBES = (APIVersionHandler, APIStatusHandler)  # `/api`, `/api/status`: health checks, not a person


class Attendance:
    def __init__(
        self, settings: dict[str, Any], *, is_agent: Callable[[Any], bool], recent: float = 30.0
    ) -> None:
        self._settings = settings
        self._is_agent = is_agent
        self.recent = recent
        self.last_request = float("-inf")  # monotonic time of a person's last request
        self._checked = float("-inf")
        self._here = False

    def listen(self) -> None:
        """Hear of every request from now on (once the server's settings are final)."""
        previous = self._settings.get("log_function")
        if previous is None:
            return  # no access log to keep (not Jupyter's application): rooms alone tell

        def log_function(handler: Any) -> None:
            previous(handler)
            if not isinstance(handler, PROBES) and not self._is_agent(handler):
                self.last_request = time.monotonic()

        self._settings["log_function"] = log_function

    def person_here(self) -> bool:
        now = time.monotonic()
        if now - self.last_request < self.recent:
            return True
        if now - self._checked >= CHECK_EVERY:
            self._checked, self._here = now, self._tab_open()
        return self._here

    def _tab_open(self) -> bool:
        ext = self._settings.get("jupyter_server_ydoc")
        server = getattr(ext, "ywebsocket_server", None)
        rooms = getattr(server, "rooms", None) or {}
        return any(getattr(room, "clients", None) for room in list(rooms.values()))
