"""The panel's review routes under ``<base_url>/api/mcp/``: Keep, checkpoints, undo since one, and the
two sides of a cell's diff (``review/diff``) for the merge view in the cell.

Undo of one entry (or an agent's entries) is ``revert`` (``handlers.py``). Like every panel route,
these take people only (Jupyter's auth, XSRF for cookies; agent credentials refused), and a Keep or
Undo that finds the change already settled by someone else answers 409 with who and when.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.utils import url_path_join
from tornado import web

from ..agents.directory import person_of
from ..people.originals import diff_of
from ..people.review import NotFound, Review, ReviewConflict
from .handlers import PanelHandler, _int
from .panel import Panel


def _by(handler: PanelHandler) -> dict[str, str]:
    person = person_of(handler)  # Jupyter's identity of this request
    return {"user": person["name"], "name": person["display_name"]}


def _review(handler: PanelHandler) -> Review:
    review = handler.panel.review
    assert review is not None
    return review


def _text(body: dict[str, Any], name: str, required: bool = True) -> str | None:
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise web.HTTPError(400, f"{name} must be a non-empty string.")
    return value


class KeepHandler(PanelHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        body, review = self.body(), _review(self)
        try:
            if "entries" in body:
                ids = body["entries"]
                if not isinstance(ids, list) or not ids or len(ids) > 1000:
                    raise web.HTTPError(400, "entries must be a list of 1 to 1,000 journal entry ids.")
                kept = review.keep_entries([_int(i, "entries") for i in ids], _by(self))
            elif "cell_id" in body:
                kept = review.keep_cell(str(_text(body, "path")), str(_text(body, "cell_id")), _by(self))
            elif "path" in body:
                agent = _text(body, "agent", required=False)
                kept = review.keep_notebook(str(_text(body, "path")), agent, _by(self))
            else:
                raise web.HTTPError(
                    400,
                    'Give {"entries": [<id>, ...]}, {"path": <notebook>, "cell_id": <id>} or '
                    '{"path": <notebook>, "agent": <id, optional>}.',
                )
        except NotFound as err:
            raise web.HTTPError(404, str(err)) from err
        except ReviewConflict as err:
            raise web.HTTPError(409, f"{err} Nothing was changed.") from err
        self.answer({"kept": kept})


class CheckpointsHandler(PanelHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.answer({"checkpoints": list(_review(self).checkpoints.values())[::-1]})

    @web.authenticated
    @authorized
    async def post(self) -> None:
        name = _text(self.body(), "name")
        try:
            checkpoint = _review(self).add_checkpoint(str(name), _by(self))
        except ValueError as err:
            raise web.HTTPError(400, str(err)) from err
        except ReviewConflict as err:
            raise web.HTTPError(409, str(err)) from err
        self.answer(checkpoint, 201)


class UndoSinceHandler(PanelHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.body()
        name = str(_text(body, "name"))
        agent, path = _text(body, "agent", required=False), _text(body, "path", required=False)
        try:
            result = await _review(self).undo_since(name, _by(self), agent=agent, path=path)
        except NotFound as err:
            raise web.HTTPError(404, str(err)) from err
        self.answer(result, 409 if result["conflicts"] and not result["reverted"] else 200)


class DiffHandler(PanelHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        path, cell_id = self.get_query_argument("path", ""), self.get_query_argument("cell_id", "")
        if not path or not cell_id:
            raise web.HTTPError(400, "Give ?path=<notebook>&cell_id=<id>.")
        review = _review(self)
        try:
            self.answer(await diff_of(review.journal, review.reverter.services, path, cell_id))
        except NotFound as err:
            raise web.HTTPError(404, str(err)) from err
        except ReviewConflict as err:
            raise web.HTTPError(409, str(err)) from err


def routes(base_url: str, panel: Panel) -> list[tuple[str, type[PanelHandler], dict[str, Any]]]:
    prefix = url_path_join(base_url, "api", "mcp")
    table: list[tuple[str, type[PanelHandler]]] = [
        ("keep", KeepHandler),
        ("checkpoints", CheckpointsHandler),
        ("checkpoints/undo", UndoSinceHandler),
        ("review/diff", DiffHandler),
    ]
    return [(url_path_join(prefix, path), handler, {"panel": panel}) for path, handler in table]
