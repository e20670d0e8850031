"""The RFC 8707 ``resource`` of an OAuth request, against the MCP URL this server publishes.

The SDK's handlers hand the provider the authorize request's ``resource`` but not the token
request's, and the provider never sees the HTTP request; so the Tornado handler notes both the URL
this server answers for (as its protected resource metadata publishes it) and the ``resource`` the
request named, in a context variable the provider reads within the same request.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit


@dataclass(frozen=True)
class _Request:
    expected: str  # <scheme>://<host><base_url>mcp
    named: str | None  # the request's ``resource`` parameter, if it has one


_current: ContextVar[_Request | None] = ContextVar("oauth_resource", default=None)


def begin(expected: str, named: str | None) -> None:
    """Called as an OAuth request starts (``OAuthEndpoint.prepare``)."""
    _current.set(_Request(expected, named))


def mcp_url() -> str | None:
    """This server's MCP URL as the current request reaches it; None outside an OAuth request."""
    current = _current.get()
    return current.expected if current is not None else None


def named() -> str | None:
    current = _current.get()
    return current.named if current is not None else None


def normalise(url: str) -> str:
    """Scheme and host compared without case, a trailing slash ignored."""
    parts = urlsplit(url.strip())
    return urlunsplit(
        (parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, parts.fragment)
    )


def problem(resource: str | None, path: str) -> str | None:
    """Why ``resource`` is not this server's MCP endpoint (None: it is, or none was named).

    Outside a request (``path`` only known) the path is compared; in one, the whole URL.
    """
    if resource is None:
        return None
    expected = mcp_url()
    if expected is None:
        same = urlsplit(resource).path.rstrip("/") == path.rstrip("/")
    else:
        same = normalise(resource) == normalise(expected)
    if same:
        return None
    return f"resource must be this server's MCP endpoint, {expected or path} (not {resource[:200]})."
