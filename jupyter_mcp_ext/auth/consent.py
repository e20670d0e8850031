"""The consent page: which agent asks, how its name is known, where its answer goes, for whom, and
what it may do; and, when it asks again, what it holds already, so that asking never widens unseen."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from . import pages
from .provider import Consent, is_loopback
from .tokens import Credential

# Narrowest first: a choice after the one held widens what the agent may do.
CHOICES = (
    ("read-only", "Read only", "read notebooks and files; change and run nothing"),
    (
        "ask",
        "Ask me first",
        "edit notebooks; wait for my approval before running code, deleting or writing files",
    ),
    ("full", "Full access", "edit, run code and write files without asking (as I could)"),
)
DEFAULT = "ask"
STATUSES = ("verified", "unverified", "")


def where(redirect: str) -> str:
    """The redirect URI's host and port, as the person should read it (its scheme for an app's URI)."""
    parts = urlsplit(redirect)
    return parts.netloc or parts.scheme + ":"


def choices(held: Credential | None) -> list[dict[str, Any]]:
    """The policies to choose from: what is held preselected (else the default), wider ones marked."""
    order = [value for value, _, _ in CHOICES]
    current = held.policy if held is not None and held.policy in order else None
    rank = order.index(current) if current is not None else None
    return [
        {
            "value": value,
            "label": label,
            "help": help_text,
            "checked": value == (current or DEFAULT),
            "held": value == current,
            "widens": rank is not None and order.index(value) > rank,
        }
        for value, label, help_text in CHOICES
    ]


def page(handler: Any, consent: Consent, held: Credential | None) -> str:
    """The consent page for ``consent``, shown to ``handler``'s person."""
    client = consent.client
    redirect = str(consent.params.redirect_uri)
    name = client.client_name or "An unnamed MCP client"
    destination = where(redirect)
    person = handler.current_user
    user = getattr(person, "display_name", None) or getattr(person, "username", "") or "you"
    status = consent.document_status if consent.document_status in STATUSES else "unverified"
    labels = {value: label for value, label, _ in CHOICES}
    pages.protect(handler)
    return pages.render(
        handler,
        "mcp_consent.html",
        page_title="Allow an agent?",
        user=pages.visible(user),
        client_name=pages.visible(name),
        where=pages.visible(destination),
        status=status,
        client_host=pages.visible(urlsplit(client.client_id or "").netloc) if status == "verified" else "",
        hidden=pages.any_hidden(name, destination),
        loopback=is_loopback(redirect),
        held=(
            {
                "label": labels.get(held.policy, held.policy),
                "since": time.strftime("%Y-%m-%d", time.localtime(held.created)),
            }
            if held is not None
            else None
        ),
        choices=choices(held),
        request_id=consent.id,
    )
