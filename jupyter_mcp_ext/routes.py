"""Who else routes our endpoint's path, and our own routes, built on first use: another extension (datalayer's jupyter-mcp-server routes
``mcp/?``) registered on ``<base_url>/mcp`` makes whichever loaded first answer, silently.

Read from Tornado's routing table as it stands, so it sees extensions loaded before and after ours.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from tornado.httputil import HTTPServerRequest
from tornado.routing import PathMatches, Router, Rule
from tornado.web import Application

SETTING = "MCPExtensionApp.path"


@dataclass(frozen=True)
class Conflict:
    """Another handler on our path: its class, the extension it came with, and whether it answers first."""

    path: str
    handler: str
    extension: str
    answers: bool

    def message(self) -> str:
        who = f"{self.handler} (extension {self.extension})"
        if self.answers:
            effect = "it answers there, and agents reach it instead of jupyter_mcp_ext"
        else:
            effect = f"jupyter_mcp_ext answers there, so {self.extension}'s endpoint is unreachable"
        return (
            f"Another extension also routes {self.path}: {who}; {effect}. Move ours with "
            f"c.{SETTING} = 'jupyter-mcp' (or --{SETTING}=jupyter-mcp), or turn the other off with "
            f"`jupyter server extension disable {self.extension}`."
        )

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "message": self.message()}


def _path_rules(router: Any) -> list[Rule]:
    """The path rules of a router, in the order Tornado tries them (host rules opened in place)."""
    found: list[Rule] = []
    for rule in getattr(router, "rules", []):
        if isinstance(rule.matcher, PathMatches):
            found.append(rule)
        elif hasattr(rule.target, "rules"):
            found.extend(_path_rules(rule.target))
    return found


def _extension_of(handler: type, extensions: list[str]) -> str:
    module = handler.__module__
    named = [name for name in extensions if module == name or module.startswith(name + ".")]
    return max(named, key=len) if named else module.split(".")[0]


def conflicts(web_app: Any, path: str, extensions: list[str]) -> list[Conflict]:
    """Other extensions' handlers on ``path`` (the raw route, base URL included), in routing order.

    Only rules added by extensions count: the server's own table (its 404 page matches anything) is
    the last rule of the default router, tried after every extension's.
    """
    added = getattr(web_app.default_router, "rules", [])[:-1]
    found: list[Conflict] = []
    taken = False  # Tornado answers with the first rule that matches
    for rule in (r for host in added for r in _path_rules(host.target)):
        if not rule.matcher.regex.match(path):  # type: ignore[attr-defined]  # a PathMatches: Matcher does not declare it
            continue
        handler = rule.target
        if isinstance(handler, LazyRoutes):  # ours, built on first use
            taken = taken or handler.ours(path)
            continue
        name = f"{handler.__module__}.{handler.__qualname__}" if isinstance(handler, type) else repr(handler)
        extension = _extension_of(handler, extensions) if isinstance(handler, type) else "?"
        found.append(Conflict(path, name, extension, answers=not taken))
        taken = True
    return found


class LazyRoutes(Router):
    """The extension's routes, built on the first request under one of ``prefixes``.

    Registered in place of the routes themselves (``Application.add_handlers`` with a path that
    matches anything), so Tornado tries them where the extension's routes belong; a request under
    none of the prefixes, or that no route matches, goes on to the next rule, as with plain routes.
    Jupyter Server checks each handler it is given for authentication decorators; it is given this
    router, so the routes get the same check when they are built.
    """

    SUPPORTED_METHODS: tuple[str, ...] = ()  # no methods of its own: Jupyter's check looks at these

    def __init__(self, app: Application, prefixes: tuple[str, ...], build: Callable[[], list[Any]]):
        self.app = app
        self.prefixes = prefixes
        self._build = build
        self._rules: list[tuple[PathMatches, type, dict[str, Any]]] | None = None

    def ours(self, path: str) -> bool:
        return any(path.startswith(p) or path == p.rstrip("/") for p in self.prefixes)

    def find_handler(self, request: HTTPServerRequest, **kwargs: Any) -> Any:
        if not self.ours(request.path or ""):
            return None
        if self._rules is None:
            routes = self._build()
            check = getattr(self.app, "_check_handler_auth", None)  # Jupyter Server's own, as add_handlers
            undecorated = [
                m for pattern, handler, _ in routes for m in (check(pattern, handler) if check else [])
            ]
            if undecorated and not self.app.settings.get("allow_unauthenticated_access", True):
                raise RuntimeError("Endpoints without authentication: " + ", ".join(undecorated))
            self._rules = [(PathMatches(pattern), handler, args) for pattern, handler, args in routes]
        for matcher, handler, args in self._rules:
            found = matcher.match(request)
            if found is not None:
                return self.app.get_handler_delegate(
                    request, handler, args, found.get("path_args"), found.get("path_kwargs")
                )
        return None
