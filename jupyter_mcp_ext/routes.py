"""Who else routes our endpoint's path: another extension (datalayer's jupyter-mcp-server routes
``mcp/?``) registered on ``<base_url>/mcp`` makes whichever loaded first answer, silently.

Read from Tornado's routing table as it stands, so it sees extensions loaded before and after ours.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tornado.routing import PathMatches, Rule

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


def conflicts(web_app: Any, path: str, ours: tuple[type, ...], extensions: list[str]) -> list[Conflict]:
    """Other extensions' handlers on ``path`` (the raw route, base URL included), in routing order.

    Only rules added by extensions count: the server's own table (its 404 page matches anything) is
    the last rule of the default router, tried after every extension's.
    """
    added = getattr(web_app.default_router, "rules", [])[:-1]
    found: list[Conflict] = []
    taken = False  # Tornado answers with the first rule that matches
    for rule in (r for host in added for r in _path_rules(host.target)):
        if not rule.matcher.regex.match(path):
            continue
        handler = rule.target
        if isinstance(handler, type) and issubclass(handler, ours):
            taken = True
            continue
        name = f"{handler.__module__}.{handler.__qualname__}" if isinstance(handler, type) else repr(handler)
        extension = _extension_of(handler, extensions) if isinstance(handler, type) else "?"
        found.append(Conflict(path, name, extension, answers=not taken))
        taken = True
    return found
