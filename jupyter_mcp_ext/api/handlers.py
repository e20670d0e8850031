"""The REST API of the MCP panel under ``<base_url>/api/mcp/`` (docs/api.md is the contract).

Thin Jupyter ``APIHandler``s: Jupyter authenticates (token or cookie, XSRF for cookies) and its
authorizer decides, by resource: ``contents`` to review and steer agents, ``kernels`` to stop them
or to mint and manage agent credentials. There is no route to the person's Jupyter token: a set-up
never carries it (hosts sign in, or get a minted agent token).
"""

from __future__ import annotations

import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from ..agents.directory import person_of
from ..auth.principal import agent_token
from ..documents.paths import without_root
from ..people.policy import MODES
from ..people.review import ReviewConflict
from .panel import Panel
from .snippets import snippets, token_snippets

MAX_ENTRIES = 1000


class PanelHandler(APIHandler):
    auth_resource = "contents"

    def initialize(self, panel: Panel) -> None:
        self.panel = panel

    async def prepare(self) -> None:  # type: ignore[override]  # a coroutine, as Tornado allows; its stub says Awaitable | None
        # Jupyter does not know agent tokens (so it refuses them anyway); refused first, and said so.
        if agent_token(self.request.headers) is not None:
            raise web.HTTPError(403, "Agent credentials cannot use the MCP panel's API; only people can.")
        await super().prepare()

    def body(self) -> dict[str, Any]:
        try:
            data = json.loads(self.request.body or b"{}")
        except ValueError as err:
            raise web.HTTPError(400, "The body must be JSON.") from err
        if not isinstance(data, dict):
            raise web.HTTPError(400, "The body must be a JSON object.")
        return data

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Jupyter's JSON error, without the server's own folder in it (a contents error names it)."""
        kind, error, trace = kwargs.get("exc_info") or (None, None, None)
        if isinstance(error, web.HTTPError) and error.get_message():
            message = without_root(error.get_message() or "", self.panel.services.contents)
            kwargs["exc_info"] = (kind, web.HTTPError(error.status_code, message, reason=error.reason), trace)
        super().write_error(status_code, **kwargs)

    def answer(self, data: dict[str, Any], status: int = 200) -> None:
        self.set_status(status)
        self.finish(json.dumps(data))


class InfoHandler(PanelHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        url = f"{self.request.protocol}://{self.request.host}{url_path_join(self.base_url, self.panel.path)}"
        self.answer(
            {
                "url": url,
                "path": self.panel.path,
                "token_required": bool(self.identity_provider.auth_enabled),
                "snippets": snippets(url),
                "token_snippets": token_snippets(url),
                "conflicts": [c.to_json() for c in self.panel.conflicts()],
                "notices": self.panel.notices(),
            }
        )


class SessionsHandler(PanelHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.answer({"sessions": self.panel.agents()})


class JournalHandler(PanelHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        agent = self.get_query_argument("agent", None)
        try:
            limit = int(self.get_query_argument("limit", "100"))
        except ValueError as err:
            raise web.HTTPError(400, "limit must be a number.") from err
        path = self.get_query_argument("path", None)
        entries = [e for e in self.panel.journal.entries(agent=agent) if path is None or e.path == path]
        entries = entries[::-1][: max(0, min(limit, MAX_ENTRIES))]
        self.answer({"entries": [e.to_json() for e in entries]})


class RevertHandler(PanelHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        body, journal = self.body(), self.panel.journal
        if "entry" in body:
            entry_id = _int(body["entry"], "entry")
            entry = journal.get(entry_id)
            if entry is None:
                raise web.HTTPError(404, journal.too_old(entry_id) or f"No journal entry {entry_id}.")
            entries, dropped = [entry], None
        elif "cell_id" in body:  # Undo in one cell: its pending changes, newest first, to a conflict
            review = self.panel.review
            assert review is not None
            path, cell_id = body.get("path"), body["cell_id"]
            if not isinstance(path, str) or not isinstance(cell_id, str):
                raise web.HTTPError(400, "path and cell_id must be strings.")
            try:
                entries = review.undo_cell_entries(path, cell_id)
            except ReviewConflict as err:
                raise web.HTTPError(409, f"{err} Nothing was changed.") from err
            dropped = None
        elif "agent" in body:
            since = _int(body.get("since", 0), "since")
            entries = journal.entries(agent=str(body["agent"]), since=since)
            dropped = journal.dropped_since(str(body["agent"]), since)
        else:
            raise web.HTTPError(
                400,
                'Give {"entry": <id>}, {"path": <notebook>, "cell_id": <id>} or {"agent": <id>, "since": <id>}.',
            )
        person = person_of(self)  # Jupyter's identity of this request: who reverted, for the journal
        by = {"user": person["name"], "name": person["display_name"]}
        one_cell = "cell_id" in body and "entry" not in body
        result = await self.panel.reverter.revert(
            entries, by, named="entry" in body or one_cell, stop_at_conflict=one_cell
        )
        if dropped:
            result.notes.append(dropped)
        status = 409 if result.conflicts and not result.reverted else 200
        self.answer(result.to_json(), status)


class PolicyHandler(PanelHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.answer({"mode": self.panel.policy.mode})

    @web.authenticated
    @authorized
    async def post(self) -> None:
        mode = self.body().get("mode")
        if mode not in MODES:
            raise web.HTTPError(400, f"mode must be one of {', '.join(MODES)}.")
        self.panel.policy.set(mode)
        self.answer({"mode": self.panel.policy.mode})


class ApprovalsHandler(PanelHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        approvals = self.panel.approvals
        self.answer({"approvals": [approvals.to_json(a) for a in approvals.pending()]})


class DecisionHandler(PanelHandler):
    @web.authenticated
    @authorized
    async def post(self, approval_id: str) -> None:
        body = self.body()
        decision = body.get("decision")
        if decision not in ("approve", "deny"):
            raise web.HTTPError(400, 'decision must be "approve" or "deny".')
        done = self.panel.approvals.decide(
            approval_id, decision == "approve", rest_of_turn=bool(body.get("rest_of_turn", False))
        )
        if not done:
            raise web.HTTPError(404, f"No call waits for approval '{approval_id}' (answered, or it gave up).")
        self.answer({"ok": True})


class StopHandler(PanelHandler):
    auth_resource = "kernels"

    @web.authenticated
    @authorized
    async def post(self) -> None:
        self.answer(await self.panel.stop())


def _int(value: Any, name: str) -> int:
    """A journal entry id as JSON gives it: an integer, never a float cut down or a bool (a revert of
    entry 1 for ``true`` or ``1.9`` undoes what the person did not pick)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise web.HTTPError(400, f"{name} must be a journal entry id: a whole number such as 12.")
    return value


def routes(base_url: str, panel: Panel) -> list[tuple[str, type[PanelHandler], dict[str, Any]]]:
    prefix = url_path_join(base_url, "api", "mcp")
    table: list[tuple[str, type[PanelHandler]]] = [
        ("info", InfoHandler),
        ("sessions", SessionsHandler),
        ("journal", JournalHandler),
        ("revert", RevertHandler),
        ("policy", PolicyHandler),
        ("approvals", ApprovalsHandler),
        (r"approvals/([^/]+)", DecisionHandler),
        ("stop", StopHandler),
    ]
    return [(url_path_join(prefix, path), handler, {"panel": panel}) for path, handler in table]
