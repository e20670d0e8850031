"""Client ID metadata documents (MCP's SEP-991): a client whose ``client_id`` is an https URL.

The server fetches the document at that URL when the client first asks to authorize. Anyone who can
reach ``/oauth/authorize`` (no login needed) can name any URL, so the fetch is what an attacker would
aim a server-side request forgery through. Hence: https only (loopback http only where a setting says
so, for tests); the host must resolve to public addresses only, checked in the resolver the connection
then uses, so a DNS answer cannot change between the check and the connect; no redirects; a few
seconds; a few kilobytes; a bounded rate of fetches from each source of requests (one stranger's
junk URLs spend that stranger's budget, not a real client's); and a bounded cache.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import time
from typing import Any
from urllib.parse import urlsplit

from mcp.shared.auth import InvalidScopeError, OAuthClientInformationFull
from pydantic import ValidationError
from tornado.httpclient import HTTPRequest
from tornado.httputil import HTTPInputError
from tornado.netutil import DefaultLoopResolver, Resolver
from tornado.simple_httpclient import HTTPTimeoutError, SimpleAsyncHTTPClient

from .budgets import PerSource
from .redirect_uris import AgentClient, is_loopback, normalise_all

MAX_BYTES = 5 * 1024  # the size the specification suggests servers accept
TIMEOUT = 5.0  # seconds for the whole fetch
FETCHES_PER_MINUTE = 30  # cache misses from one source: every fetch is a request an outsider triggered
MAX_CACHED = 200
DEFAULT_TTL, MAX_TTL = 600.0, 24 * 3600.0  # seconds a fetched document is trusted without Cache-Control
MIN_TTL = 60.0  # kept through one authorization (authorize, then the token exchange) even if no-store
MODES = ("https", "https+loopback", "off")  # the setting: what a client_id URL may be
MAX_SCOPES, MAX_SCOPE_CHARS = 20, 100


class DocumentClient(AgentClient):
    """A client described by its document: no registration says which scopes it may name, and on
    this server a scope grants nothing (the person's choice does), so it may name any, bounded."""

    def validate_scope(self, requested_scope: str | None) -> list[str] | None:
        if requested_scope is None:
            return None
        scopes = requested_scope.split()
        if len(scopes) > MAX_SCOPES or any(len(s) > MAX_SCOPE_CHARS for s in scopes):
            raise InvalidScopeError(f"Name at most {MAX_SCOPES} scopes of {MAX_SCOPE_CHARS} characters.")
        return scopes


class UnverifiedClient(DocumentClient):
    """A client ID URL whose document could not be fetched: it may answer on loopback only."""

    def accepts(self, wanted: str) -> bool:
        return is_loopback(wanted)


class ClientDocumentError(Exception):
    """Why a client's metadata document was not accepted; the message goes to the client.

    ``unreachable``: nothing came back from the document's host (no such name here, no route, no
    answer in time, not a public address): this server cannot know what the document says.
    """

    def __init__(self, message: str, unreachable: bool = False):
        super().__init__(message)
        self.unreachable = unreachable


def is_document_id(client_id: str) -> bool:
    return client_id.startswith(("https://", "http://"))


EMBEDDING = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("::/96"))  # NAT64, v4-compatible


def _allowed(address: str, loopback: bool) -> bool:
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):  # an IPv4 address inside an IPv6 one is judged as itself
        inner = ip.ipv4_mapped or ip.sixtofour
        if inner is None and any(ip in net for net in EMBEDDING):
            inner = ipaddress.IPv4Address(ip.packed[-4:])
        ip = inner or ip
    return (ip.is_global and not ip.is_multicast) or (loopback and ip.is_loopback)


class PublicResolver(Resolver):
    """Resolves as usual, then keeps only addresses that may be fetched; none left is an error."""

    def initialize(self, loopback: bool = False) -> None:
        self.loopback = loopback
        self.inner = DefaultLoopResolver()

    async def resolve(self, host: str, port: int, family: socket.AddressFamily = socket.AF_UNSPEC) -> Any:
        found = await self.inner.resolve(host, port, family)
        kept = [(fam, addr) for fam, addr in found if _allowed(addr[0], self.loopback)]
        if not kept:
            raise ClientDocumentError(
                f"{host} is not a public address; a client document must be on the web.", unreachable=True
            )
        return kept


class ClientDocuments:
    """Fetches, checks and caches client ID metadata documents."""

    def __init__(self, mode: str = "https"):
        self.mode = mode
        self.cache: dict[str, tuple[OAuthClientInformationFull, float]] = {}
        self.fetches = PerSource(FETCHES_PER_MINUTE)

    def check_url(self, url: str) -> None:
        if not (url.isascii() and url.isprintable()) or " " in url or "\\" in url:
            raise ClientDocumentError(
                "client_id: a client ID URL is plain ASCII, without spaces or backslashes."
            )
        parts = urlsplit(url)
        loopback_ok = self.mode == "https+loopback" and parts.scheme == "http"
        if loopback_ok and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            loopback_ok = False
        if not (parts.scheme == "https" or loopback_ok) or not parts.hostname:
            raise ClientDocumentError(f"client_id {url!r}: a client ID URL must be https.")
        if parts.path in ("", "/") or parts.fragment or parts.username or parts.password or len(url) > 2000:
            raise ClientDocumentError(
                f"client_id {url!r}: it must have a path, and no fragment or user name, within 2000 chars."
            )

    def cached(self, url: str) -> OAuthClientInformationFull | None:
        """The client a document fetched lately describes, without fetching."""
        found = self.cache.get(url)
        return found[0] if found is not None and found[1] > time.monotonic() and self.mode != "off" else None

    async def get(self, url: str, source: str = "") -> OAuthClientInformationFull:
        """The client the document at ``url`` describes, from the cache or fetched now for ``source``."""
        if self.mode == "off":
            raise ClientDocumentError("This server does not accept client ID metadata documents; register.")
        self.check_url(url)
        cached = self.cached(url)
        if cached is not None:
            return cached
        if not self.fetches.spend(source):
            raise ClientDocumentError(
                "Too many client documents were fetched for your address just now; try again in a minute."
            )
        body, ttl = await self._fetch(url)
        client = self.parse(url, body)
        if len(self.cache) >= MAX_CACHED:
            self.cache.pop(min(self.cache, key=lambda k: self.cache[k][1]))
        self.cache[url] = (client, time.monotonic() + ttl)
        return client

    async def _fetch(self, url: str) -> tuple[bytes, float]:
        size = {"declared": 0, "read": 0}

        def header(line: str) -> None:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length" and value.strip().isdigit():
                size["declared"] = int(value.strip())

        chunks: list[bytes] = []

        def body(chunk: bytes) -> None:
            size["read"] += len(chunk)
            chunks.append(chunk)

        resolver = PublicResolver(loopback=self.mode == "https+loopback")
        http = SimpleAsyncHTTPClient(force_instance=True, resolver=resolver, max_body_size=MAX_BYTES)
        request = HTTPRequest(
            url,
            headers={"Accept": "application/json"},
            follow_redirects=False,
            request_timeout=TIMEOUT,
            connect_timeout=TIMEOUT,
            header_callback=header,
            streaming_callback=body,
            decompress_response=False,  # a small compressed body must not inflate past the bound
        )
        try:
            response = await http.fetch(request, raise_error=False)
        except ClientDocumentError:
            raise
        except HTTPTimeoutError:
            raise ClientDocumentError(
                f"The client document at {url} did not arrive within {TIMEOUT:g} seconds.", unreachable=True
            ) from None
        except Exception as e:
            too_big = isinstance(e, HTTPInputError) and ("too long" in str(e) or "too large" in str(e))
            if size["declared"] > MAX_BYTES or too_big:
                raise ClientDocumentError(
                    f"The client document at {url} is larger than {MAX_BYTES} bytes."
                ) from None
            raise ClientDocumentError(
                f"The client document at {url} could not be fetched ({e}).", unreachable=not size["read"]
            ) from None
        finally:
            http.close()
        if response.code != 200:
            where = " (redirects are not followed)" if 300 <= response.code < 400 else ""
            raise ClientDocumentError(f"The client document at {url} answered {response.code}{where}.")
        return b"".join(chunks), _ttl(response.headers.get("Cache-Control", ""))

    def parse(self, url: str, body: bytes) -> OAuthClientInformationFull:
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise ClientDocumentError(f"The client document at {url} is not JSON.") from None
        if not isinstance(data, dict):
            raise ClientDocumentError(f"The client document at {url} is not a JSON object.")
        if data.get("client_id") != url:
            raise ClientDocumentError(f"The client document's client_id must be its own URL, {url}.")
        method = data.get("token_endpoint_auth_method", "none")
        if method != "none":
            raise ClientDocumentError(
                f"token_endpoint_auth_method {method!r}: a client document's client has no secret; use 'none'."
            )
        uris = data.get("redirect_uris")
        if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
            raise ClientDocumentError("The client document needs redirect_uris, a list of URIs.")
        try:
            name = data.get("client_name")
            return DocumentClient(
                client_id=url,
                client_name=name[:100] if isinstance(name, str) else None,
                redirect_uris=normalise_all(uris),
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            )
        except (ValueError, ValidationError) as e:
            raise ClientDocumentError(f"The client document is not valid: {e}") from None


def _ttl(cache_control: str) -> float:
    for part in cache_control.lower().split(","):
        name, _, value = part.strip().partition("=")
        if name in ("no-store", "no-cache"):
            return MIN_TTL
        if name == "max-age" and value.isdigit():
            return max(MIN_TTL, min(float(value), MAX_TTL))
    return DEFAULT_TTL
