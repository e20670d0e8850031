"""A server extension for the benchmark's own server: an authenticated ``APIHandler`` as a CPU floor.

``PUT <base>/bench/floor`` stores an answer; each ``POST`` then answers those bytes. With the bytes
of an MCP answer stored, a POST of the same request body costs what Jupyter's own request handling
and token auth cost for that exchange, without MCP: the floor the server's CPU per call is set against.
"""

from __future__ import annotations

import json
import time
from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

ANSWER: dict[str, bytes] = {"body": b"{}"}


class FloorHandler(APIHandler):
    auth_resource = "contents"

    @web.authenticated
    async def put(self) -> None:
        ANSWER["body"] = self.request.body
        self.set_status(204)
        self.finish()

    @web.authenticated
    async def post(self) -> None:
        self.finish(ANSWER["body"])


class GateHandler(APIHandler):
    """The MCP gate's counters (``jupyter_mcp_ext.loop.gate``): how much loop CPU MCP used, who waited."""

    auth_resource = "contents"

    @property
    def gate(self) -> Any:
        (app,) = self.serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
        return getattr(app, "gate", None)

    @web.authenticated
    async def put(self) -> None:
        """``{"share": x, "nobody": bool}``: the gate's share from now on (1: off), and whether it is
        to take nobody to be here (the agents alone, as with no person on the server), to compare in
        one run."""
        body = json.loads(self.request.body)
        if self.gate is not None:  # a server without the gate (before issue 14) has nothing to set
            self.gate.share = float(body["share"])
            if "free_step" in body:  # issue 21: steps shorter than this are not charged
                self.gate.free_step = float(body["free_step"])
            if "time_slice" in body:  # issue 21: seconds of MCP work between two polls for I/O
                self.gate.time_slice = float(body["time_slice"])
            # issue 21: the share while a person's request is in flight (a baseline may have none)
            if "waiting_share" in body and hasattr(self.gate, "waiting_share"):
                self.gate.waiting_share = float(body["waiting_share"])
            (app,) = self.serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
            attendance = getattr(app, "attendance", None)
            if attendance is not None:
                self.gate.person_here = _nobody if body.get("nobody") else attendance.person_here
        if "ystore_batching" in body:  # issue 21: the batching update store, on or off
            from jupyter_mcp_ext.documents.ystore import BatchedSQLiteYStore

            BatchedSQLiteYStore.batching = bool(body["ystore_batching"])
        self.set_status(204)
        self.finish()

    @web.authenticated
    async def get(self) -> None:
        gate = self.gate
        self.finish(
            {
                "share": gate.share if gate else 1.0,
                "free_step": getattr(gate, "free_step", 0.0),
                "time_slice": getattr(gate, "time_slice", 0.0),
                "waiting_share": getattr(gate, "waiting_share", 1.0),
                "sliced": getattr(gate, "sliced", 0),
                "spent_s": gate.spent if gate else 0.0,
                "admitted": gate.admitted if gate else 0,
                "waited": gate.waited if gate else 0,
                "thread_cpu_s": time.thread_time(),
            }
        )


def _nobody() -> bool:
    return False


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    return [{"module": "benchmarks.floor"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    route = url_path_join(serverapp.base_url, "bench", "floor")
    gate = url_path_join(serverapp.base_url, "bench", "gate")
    serverapp.web_app.add_handlers(".*$", [(route, FloorHandler), (gate, GateHandler)])
