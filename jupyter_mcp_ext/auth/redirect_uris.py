"""Where an authorization's answer may go: one parser and one rule for every redirect URI.

Registration, client documents and the authorize request all read a redirect URI with the parser
the MCP SDK compares with (pydantic's ``AnyUrl``, which parses as browsers do), and the rule is
checked on what it parsed, never on the raw text: ``http://evil.example\\@127.0.0.1/cb`` is
``http://evil.example/@127.0.0.1/cb`` to a browser, and so it is here.

Allowed: https; http to a loopback host (RFC 8252 section 7.3: any port, chosen when the request
is made); a native app's private-use scheme named after a domain it controls, reversed
(RFC 8252 section 7.1: ``com.example.app:/callback``, with a dot). Never user-info, never a
fragment, nothing a browser would read other than as a page address (``intent:``, ``view-source:``
and other single-word schemes are refused by the allow-list, not a deny-list).
"""

from __future__ import annotations

import re

from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull
from pydantic import AnyUrl, ValidationError

MAX_REDIRECT_URIS = 10
MAX_URI_CHARS = 2000
LOOPBACK = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
PRIVATE_USE = re.compile(r"[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+")  # reverse domain: com.example.app
UNPRINTABLE = re.compile(r"[\x00-\x20\x7f\\]")  # whitespace, controls, backslash


def normalise(uri: str) -> str:
    """The URI as the SDK and a browser read it; ValueError says why it may not receive an answer."""
    if len(uri) > MAX_URI_CHARS:
        raise ValueError(f"Redirect URI is longer than {MAX_URI_CHARS} characters.")
    shown = uri[:200]
    if UNPRINTABLE.search(uri) or "#" in uri:
        raise ValueError(
            f"Redirect URI {shown!r} has a space, a backslash, a control character or a fragment."
        )
    try:
        parsed = AnyUrl(uri)
    except ValidationError:
        raise ValueError(f"Redirect URI {shown!r} is not a URI.") from None
    if parsed.username is not None or parsed.password is not None or parsed.fragment is not None:
        raise ValueError(f"Redirect URI {shown!r}: no user name or fragment may be in it.")
    scheme = parsed.scheme
    if scheme == "https" and parsed.host:
        return str(parsed)
    if scheme == "http" and (parsed.host or "") in LOOPBACK:
        return str(parsed)
    if PRIVATE_USE.fullmatch(scheme):
        return str(parsed)
    raise ValueError(
        f"Redirect URI {shown!r}: use https, http to 127.0.0.1, [::1] or localhost (any port), "
        "or a native app's scheme named after its domain (com.example.app:/callback)."
    )


def normalise_all(uris: list[str]) -> list[str]:
    """Each URI normalised; ValueError naming the first that may not be a client's."""
    if not uris or len(uris) > MAX_REDIRECT_URIS:
        raise ValueError(f"Give 1 to {MAX_REDIRECT_URIS} redirect_uris.")
    return [normalise(u) for u in uris]


def is_loopback(uri: str) -> bool:
    """http to this computer: the agent host's own listener."""
    try:
        parsed = AnyUrl(uri)
    except ValidationError:
        return False
    return parsed.scheme == "http" and (parsed.host or "") in LOOPBACK and parsed.username is None


def _key(uri: str) -> str:
    """What two URIs must share to be the same place: all of it, but a loopback URI's port."""
    parsed = AnyUrl(uri)
    if parsed.scheme == "http" and (parsed.host or "") in LOOPBACK:
        return f"http://{parsed.host}{parsed.path or ''}?{parsed.query or ''}"
    return str(parsed)


def _same(registered: str, requested: str) -> bool:
    """Whether a request's URI is a registered one (one kept from before these rules may match none)."""
    try:
        return _key(normalise(registered)) == _key(normalise(requested))
    except ValueError:
        return False


class AgentClient(OAuthClientInformationFull):
    """A client whose redirect URIs are compared after normalisation, loopback ones on any port."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None:  # allowed where one URI is registered: that one, checked as any other
            if len(self.redirect_uris or []) != 1:
                raise InvalidRedirectUriError("redirect_uri is missing, and this client has more than one.")
            redirect_uri = (self.redirect_uris or [])[0]
        try:
            wanted = normalise(str(redirect_uri))
        except ValueError as e:
            raise InvalidRedirectUriError(str(e)) from None
        if self.accepts(wanted):
            return AnyUrl(wanted)
        raise InvalidRedirectUriError(f"Redirect URI '{wanted}' is not registered for client")

    def accepts(self, wanted: str) -> bool:
        return any(_same(str(r), wanted) for r in self.redirect_uris or [])


class UnverifiedClient(AgentClient):
    """A client ID URL whose document could not be fetched: it may answer on loopback only."""

    def accepts(self, wanted: str) -> bool:
        return is_loopback(wanted)
