"""The OAuth pages a person's browser shows, as pages of this Jupyter server.

The consent page and every refusal a browser can land on are rendered with Jupyter Server's own
``page.html`` (its logo and look; light or dark by the browser's colour scheme), from templates that
ship in this package. Whether an endpoint answers a person or a program is decided by its path: the
authorize endpoint and the consent page are opened in a browser, everything else is read by an
agent host and answers JSON.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from jinja2 import ChoiceLoader, Environment, FileSystemLoader
from jupyter_server.utils import url_path_join
from markupsafe import Markup

from ..people.hidden_chars import has_hidden, is_hidden

TEMPLATES = Path(__file__).with_name("templates")
PERSON_PATHS = ("oauth/authorize", "oauth/consent")  # under base_url: opened in a person's browser

# Not frameable (clickjacking the Allow button), nothing loaded from elsewhere, no script at all.
CSP = (
    "frame-ancestors 'none'; default-src 'none'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self'; base-uri 'none'"
)

_environments: dict[int, tuple[Environment, Environment]] = {}


def shown_to_a_person(handler: Any) -> bool:
    """Whether ``handler``'s endpoint is one a browser opens (so it answers with pages, not JSON)."""
    path = handler.request.path.rstrip("/")
    return any(path == url_path_join(handler.base_url, p) for p in PERSON_PATHS)


def protect(handler: Any) -> None:
    """The headers every page here carries: never framed, never cached, no referrer elsewhere."""
    handler.set_header("Content-Security-Policy", CSP)
    handler.set_header("X-Frame-Options", "DENY")
    handler.set_header("Cache-Control", "no-store")
    handler.set_header("Referrer-Policy", "same-origin")  # "no-referrer" makes the form's Origin null
    handler.clear_header("Access-Control-Allow-Origin")


def environment(handler: Any) -> Environment:
    """Jupyter's template environment (its translations, its ``page.html``) that also finds ours."""
    base: Environment = handler.settings["jinja2_env"]
    known = _environments.get(id(base))
    if known is None or known[0] is not base:
        ours = base.overlay(
            loader=ChoiceLoader([FileSystemLoader(str(TEMPLATES)), base.loader]),  # type: ignore[list-item]  # Jupyter's environment has one
            autoescape=True,
        )
        known = _environments[id(base)] = (base, ours)
    return known[1]


def render(handler: Any, name: str, **values: Any) -> str:
    """``name`` rendered as Jupyter renders its own pages (``JupyterHandler.render_template``)."""
    values.update(handler.template_namespace)
    return environment(handler).get_template(name).render(**values)


def token(char: str) -> str:
    """``⟨U+202E⟩`` for one character, as the panel's approval cards show it."""
    return f"⟨U+{ord(char):04X}⟩"


def visible(text: str) -> Markup:
    """``text`` escaped, each invisible or control character as a marked ``⟨U+…⟩`` token (the set the
    panel marks: ``people/hidden_chars.py``), so a name cannot hide itself or reverse what follows it."""
    out = []
    for char in text:
        if is_hidden(char, line_breaks=True):
            out.append(
                f'<span class="mcp-hidden" title="An invisible or control character, shown by its code">'
                f"{token(char)}</span>"
            )
        else:
            out.append(escape(char, quote=True))
    return Markup("".join(out))


def any_hidden(*texts: str) -> bool:
    """Whether any of ``texts`` holds what ``visible`` marks, or marks stacked to draw over other lines."""
    return any(has_hidden(t, line_breaks=True) for t in texts)
