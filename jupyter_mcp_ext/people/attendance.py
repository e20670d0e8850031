"""Whether a person is using this server now, so that the loop gate holds agents back only for one.

The gate (``loop/gate.py``) keeps agents to a share of the event loop so that a person's typing, file
browser and kernels are served first. With nobody but agents on the server there is nobody to serve
first, and holding a lone agent back would only make it slower. A person is taken to be here while
a collaboration room has a client (a notebook or file open in a JupyterLab tab) or a request other
than an agent's or a health probe's reached the server in the last ``recent`` seconds (an open
JupyterLab polls sessions, kernels and contents every few seconds; a load balancer, Kubernetes or a
script waiting for the server asks ``/api`` or ``/api/status``, and is nobody to make way for).

Requests are seen through Tornado's ``log_function`` setting, which the application calls once at the
end of every request; the one in place (Jupyter's access log) is kept and called first.

A person who is here is not always waiting. While a request of theirs is in flight (from the moment
Tornado hands it to its handler until it ends: a folder listing, a save, a kernel's websocket
handshake) they wait on the server, and the gate holds agents to a smaller share (``on_wait``, given to
``listen``: the gate reads ``person_here`` from the attendance, so it is built after it); the
rest of the time slices keep their keystrokes prompt. The start is seen through an output transform
(``Application.add_transform``), which Tornado makes for every request just before its handler runs;
the transform only sees the path, so agents' requests (MCP's and OAuth's) are told apart there by path.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from jupyter_server.base.handlers import APIVersionHandler
from jupyter_server.services.api.handlers import APIStatusHandler
from jupyter_server.utils import url_path_join
from tornado.web import OutputTransform

from ..documents import collaboration

CHECK_EVERY = 0.25  # seconds between looks at the rooms
PROBES = (APIVersionHandler, APIStatusHandler)  # `/api`, `/api/status`: health checks, not a person
PROBE_PATHS = ("api", "api/status")  # theirs, under the base URL: a request's start is seen by path
STALE = 10.0  # seconds after which a request whose end never came stops counting as in flight
MAX_IN_FLIGHT = 256  # requests in flight past which those older than STALE are forgotten at once

log = logging.getLogger(__name__)


def _nothing(waiting: bool) -> None:
    pass


class Attendance:
    def __init__(
        self,
        settings: dict[str, Any],
        *,
        is_agent: Callable[[Any], bool],
        recent: float = 30.0,
        base_url: str = "/",
        agent_paths: frozenset[str] = frozenset(),
        agent_prefixes: tuple[str, ...] = (),
    ) -> None:
        self._settings = settings
        self._is_agent = is_agent
        self.recent = recent
        # Request paths never a person's (the MCP endpoint, probes), and prefixes (OAuth's, which
        # every MCP client asks on connecting): the start of a request is told apart by path alone.
        self.not_people = agent_paths | {url_path_join(base_url, p) for p in PROBE_PATHS}
        self.not_people_under = agent_prefixes
        # Told when a person's first request in flight begins (True) and when the last ends (False).
        self.on_wait: Callable[[bool], None] = _nothing  # until ``listen``: nothing to tell before
        self.last_request = float("-inf")  # monotonic time of a person's last request
        self._in_flight: dict[int, float] = {}  # id(request) -> monotonic start, a person's requests
        self._checked = float("-inf")
        self._here = False

    def listen(self, web_app: Any, on_wait: Callable[[bool], None] = _nothing) -> None:
        """Hear of every request from now on (once the server's settings are final), telling
        ``on_wait`` when a person starts and stops waiting on the server."""
        self.on_wait = on_wait
        previous = self._settings.get("log_function")
        if previous is None:
            return  # no access log to keep (not Jupyter's application): rooms alone tell
        web_app.add_transform(self._arrival())

        def log_function(handler: Any) -> None:
            if self._in_flight.pop(id(handler.request), None) is not None and not self._in_flight:
                self._tell(False)
            previous(handler)
            if not isinstance(handler, PROBES) and not self._is_agent(handler):
                self.last_request = time.monotonic()

        self._settings["log_function"] = log_function

    def _arrival(self) -> type[OutputTransform]:
        attendance = self

        class Arrival(OutputTransform):
            """Made by Tornado for each request as its handler is about to run; passes output as is."""

            def __init__(self, request: Any) -> None:
                path = request.path
                if path not in attendance.not_people and not path.startswith(attendance.not_people_under):
                    attendance._began(request)

        return Arrival

    def _began(self, request: Any) -> None:
        now = time.monotonic()
        if len(self._in_flight) >= MAX_IN_FLIGHT:  # ends that never came, with nobody looking since
            self._forget_stale(now)
        first = not self._in_flight
        self._in_flight[id(request)] = now
        if first:
            self._tell(True)

    def _tell(self, waiting: bool) -> None:
        # Called inside Tornado's routing and request end: a failure here must not fail the request.
        try:
            self.on_wait(waiting)
        except Exception:
            log.exception(
                "The loop gate could not be told a person %s", "waits" if waiting else "stopped waiting"
            )

    @property
    def waiting(self) -> bool:
        """Whether a request of a person's is in flight."""
        return bool(self._in_flight)

    def person_here(self) -> bool:
        now = time.monotonic()
        if now - self._checked >= CHECK_EVERY:
            self._checked, self._here = now, self._tab_open()
            if self._in_flight:
                self._forget_stale(now)
        return self._here or bool(self._in_flight) or now - self.last_request < self.recent

    def _forget_stale(self, now: float) -> None:
        # A request whose end never reached the log (its connection dropped mid-way) must not hold
        # agents back for good.
        for key, began in list(self._in_flight.items()):
            if now - began > STALE:
                del self._in_flight[key]
        if not self._in_flight:
            self._tell(False)

    def _tab_open(self) -> bool:
        return collaboration.anyone_in_a_room(self._settings)
