"""The consent page: which agent asks, where its answer goes, for whom, and what it may do."""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import urlsplit

from .client_documents import is_document_id
from .provider import Consent, is_loopback

CHOICES = (
    ("read-only", "Read only", "read notebooks and files; change and run nothing"),
    (
        "ask",
        "Ask me first",
        "edit notebooks; wait for my approval before running code, deleting or writing files",
    ),
    ("full", "Full access", "edit, run code and write files without asking (as I could)"),
)


def page(consent: Consent, person: Any, xsrf_field: str) -> str:
    client = consent.client
    redirect = str(consent.params.redirect_uri)
    parts = urlsplit(redirect)
    where = parts.netloc or parts.scheme + ":"
    name = client.client_name or "An unnamed MCP client"
    vouched = (
        f'<p>It describes itself at <b id="client-host">{escape(urlsplit(client.client_id).netloc)}</b>: '
        "that site, not this server, says what it is called.</p>"
        if is_document_id(client.client_id or "")
        else ""
    )
    user = getattr(person, "display_name", None) or getattr(person, "username", "") or "you"
    warning = (
        ""
        if is_loopback(redirect)
        else f'<p class="warn">Its answer goes to <b>{escape(where)}</b>, which is not on this computer. '
        "Allow only if you started this connection and know that site.</p>"
    )
    choices = "\n".join(
        f'<label><input type="radio" name="policy" value="{value}"{" checked" if value == "ask" else ""}> '
        f"<b>{label}</b>: {escape(help_text)}</label>"
        for value, label, help_text in CHOICES
    )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Allow an agent? - Jupyter</title>
<style>
body {{ font: 15px system-ui, sans-serif; max-width: 36em; margin: 3em auto; padding: 0 1em; }}
label {{ display: block; margin: .5em 0; }} .warn {{ background: #fff3cd; padding: .6em; }}
button {{ font-size: 15px; padding: .4em 1.2em; margin-right: .6em; }}
</style></head><body>
<h1>Allow an agent to use Jupyter as {escape(user)}?</h1>
<p><b id="client-name">{escape(name)}</b> asks to work in this Jupyter server through MCP.
Its answer goes to <code id="redirect-host">{escape(where)}</code>.</p>
{vouched}{warning}
<form method="post">
{xsrf_field}
<input type="hidden" name="request" value="{escape(consent.id)}">
<fieldset><legend>What may it do?</legend>
{choices}
</fieldset>
<p>You can change this or revoke it at any time in the MCP panel, or with <code>jupyter mcp token</code>.</p>
<button type="submit" name="decision" value="allow" id="allow">Allow</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
</form></body></html>"""
