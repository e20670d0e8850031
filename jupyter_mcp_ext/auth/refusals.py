"""Refused sign-in steps as a person reads them: what happened, and what to do next.

A browser lands on these from an agent's authorization URL or the consent form. Each says, in plain
words, why nothing was allowed, and names the next step: start again from the agent, a setting, or a
token minted by hand. The server's own message follows, for whoever debugs it.
"""

from __future__ import annotations

import json
from typing import Any

from markupsafe import Markup
from tornado import web

from . import pages
from .client_documents import is_document_id
from .provider import is_loopback

TOKEN_INSTEAD = Markup(
    "Or give the agent a token instead, which it sends as <code>Authorization: Bearer &lt;token&gt;</code>:"
    '<pre>jupyter mcp token create --name "My agent"</pre>'
)
AGAIN = "Start the sign-in again from the agent (in Claude Code: <code>claude mcp login &lt;name&gt;</code>)."

# kind -> (title, what happened, what to do next)
KINDS: dict[str, tuple[str, str, Markup]] = {
    "unknown-client": (
        "This agent is not known to this server",
        "The agent signed in with a client id this server has no record of: it registered with "
        "another server, or this one forgot it (registrations it never used are dropped).",
        Markup(
            "Start the sign-in again from the agent. If it keeps its old registration, remove this "
            "server from the agent and add it again, so that it registers anew. "
        )
        + TOKEN_INSTEAD,
    ),
    "redirect": (
        "This sign-in's return address is not the agent's",
        "The address the answer would go to is not one the agent registered, so nothing was sent "
        "anywhere and nothing was allowed.",
        Markup(
            "If you started this sign-in, start it again from the agent. If you did not, close this tab: "
            "someone may be trying to get your approval for their own program."
        ),
    ),
    "document": (
        "This agent's description could not be used",
        "The agent names itself by a web address where it describes itself, and this server could not "
        "use that description (the server's words below say why).",
        Markup(
            "Whoever runs this server can let it reach the agent's site, or turn these descriptions off "
            'with <code>c.MCPExtensionApp.oauth_client_documents = "off"</code> (agents then register '
            "themselves and sign in under the name they give). "
        )
        + TOKEN_INSTEAD,
    ),
    "request": (
        "This sign-in request cannot be used",
        "The agent's request to sign in is incomplete or not one this server accepts, so nothing was "
        "allowed.",
        Markup("Start the sign-in again from the agent. If it fails the same way, ") + TOKEN_INSTEAD,
    ),
    "expired": (
        "This sign-in has expired or was answered already",
        "A sign-in waits ten minutes for you, and each can be answered once. Nothing was allowed by "
        "this page.",
        Markup(AGAIN),
    ),
    "login": (
        "You are not logged in to this Jupyter server",
        "Allowing an agent needs your Jupyter login, and this browser is not logged in (or its login "
        "has expired).",
        Markup("Log in to JupyterLab in this browser, then start the sign-in again from the agent."),
    ),
    "xsrf": (
        "This form could not be checked",
        "The answer did not carry this server's form check: it came from another page, or your login "
        "changed since the page was shown. Nothing was allowed.",
        Markup(AGAIN),
    ),
    "forbidden": (
        "You may not allow agents here",
        "This server refused the request for your account or for this address.",
        Markup("Ask whoever runs this server for access, or use the address it gives you. ") + TOKEN_INSTEAD,
    ),
    "too-large": (
        "This sign-in request is too large",
        "The request carried more than a sign-in needs, so it was not read.",
        Markup(AGAIN),
    ),
    "broken": (
        "Something went wrong on this server",
        "The sign-in failed on the server's side; nothing was allowed.",
        Markup("Try again from the agent; if it fails again, the server's log says why."),
    ),
}


class Refused(web.HTTPError):
    """A refusal that knows its kind (``KINDS``) and its OAuth error code, for page or JSON alike."""

    def __init__(self, status: int, kind: str, description: str, error: str = "invalid_request"):
        super().__init__(status, description)
        self.kind, self.error = kind, error


def said(exc: BaseException | None) -> str:
    """What an HTTPError says (``get_message``: its ``log_message`` doubles any '%')."""
    get = getattr(exc, "get_message", None)
    return (get() if get is not None else None) or ""


def from_sdk(status: int, body: bytes) -> Refused:
    """The SDK's own refusal at the authorize endpoint (JSON, for it could not redirect), classified."""
    try:
        data = json.loads(body)
    except ValueError:
        data = {}
    description = str(data.get("error_description") or data.get("error") or "request refused")
    if "not found" in description and description.startswith("Client ID"):
        kind = "unknown-client"
    elif "redirect" in description.lower():
        kind = "redirect"
    else:
        kind = "request"
    return Refused(status, kind, description, str(data.get("error") or "invalid_request"))


def person_of(handler: Any) -> Any:
    """The logged-in person, or None; also where the error came before Jupyter looked (its prepare)."""
    try:
        return handler.current_user
    except RuntimeError:  # jupyter_server refuses to look it up outside prepare
        handler.current_user = None
        return None


def kind_of(handler: Any, status: int, exc: BaseException | None) -> str:
    kind = getattr(exc, "kind", None)
    if kind in KINDS:
        return kind
    message = said(exc).lower()
    authorize = handler.request.path.rstrip("/").endswith("/oauth/authorize")
    if status == 403:
        if "xsrf" in message:
            return "xsrf"
        return "forbidden" if authorize or person_of(handler) else "login"
    if status == 413:
        return "too-large"
    if status >= 500:
        return "broken"
    if authorize and is_document_id(handler.get_argument("client_id", "")):
        return "document"
    return "request"


def page(handler: Any, status: int, exc: BaseException | None) -> str:
    """The refusal page for ``exc`` (an HTTPError, or anything else as a server fault)."""
    person_of(handler)  # Jupyter's page template asks whether someone is logged in
    kind = kind_of(handler, status, exc)
    title, what, next_step = KINDS[kind]
    if kind == "document" and not is_loopback(handler.get_argument("redirect_uri", "")):
        what += " Its answer would go to another computer, so it cannot go on unchecked."
    message = said(exc) if status < 500 else ""
    pages.protect(handler)
    handler.set_header("Content-Type", "text/html; charset=UTF-8")
    return pages.render(
        handler,
        "mcp_oauth_error.html",
        page_title=title,
        title=title,
        what=what,
        next_step=next_step,
        message=pages.visible(message) if message else "",
        status_code=status,
        kind=kind,
        open_details=kind in ("request", "document"),
    )
