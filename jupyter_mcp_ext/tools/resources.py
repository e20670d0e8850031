"""MCP resources: notebooks as ``notebook:///{+path}``, and ``jupyter://capabilities``.

A notebook URI is its API path with every character but letters, digits, ``-._~`` and the folder
slashes percent-encoded (RFC 3986), so ``nested folder/分析.ipynb`` is
``notebook:///nested%20folder/%E5%88%86%E6%9E%90.ipynb``. A URI a client expanded from the template
itself may also keep RFC 3986 sub-delimiters (``+``, ``(``, ...) as they are. A ``..`` or ``.``
segment, an absolute path, an encoded slash, a query or fragment and a malformed or non-UTF-8
encoding are refused before any file is looked at.

A read gives the notebook's JSON within ``max_result_bytes``: a larger one comes with its largest
sources and outputs cut, each cut marked (``notebook_json.py``).

Subscriptions (``resources/subscribe`` in the handshake era, ``subscriptions/listen`` in 2026) share
one watcher per notebook (``documents/watchers.py``), which sends ``notifications/resources/updated``
once changes pause. A session's subscriptions end with the session (DELETE, idle timeout), a listen
stream's with the stream.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import string
from collections import Counter
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote_to_bytes

import jupyter_server
import mcp_types as types
from jupyter_core.utils import ensure_async
from mcp.server import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError
from tornado.web import HTTPError

from .._version import __version__
from ..agents.directory import on_session_end
from ..documents import collaboration
from ..documents.paths import walk, without_root
from ..documents.watchers import NotebookWatchers
from ..errors import ToolError
from .authz import handler_of, is_allowed
from .notebook_json import notebook_json

if TYPE_CHECKING:
    from ..services import Services

log = logging.getLogger(__name__)

SCHEME = "notebook:///"
TEMPLATE = "notebook:///{+path}"
CAPABILITIES_URI = "jupyter://capabilities"
SCHEMA_VERSION = 1
NOTEBOOK_MIME = "application/x-ipynb+json"
MAX_LISTED = 500
MAX_SUBSCRIPTIONS = (
    1000  # per session or listen stream: each notebook no room holds is looked at once a second
)
SERVER_FILES = frozenset({"policy_file"})  # settings that name a file on the server: not for agents

_PCHAR = set(string.ascii_letters + string.digits + "-._~" + "!$&'()*+,;=:@" + "%")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


class BadURI(ValueError):
    """A notebook URI that is malformed or would leave the server root."""


def notebook_uri(path: str) -> str:
    return SCHEME + quote(path, safe="/")


def path_of(uri: str) -> str:
    """The API path a ``notebook:///`` URI names; raises BadURI without touching any file."""
    if not uri.startswith(SCHEME):
        raise BadURI(f"'{uri}' is not a notebook URI; they look like {SCHEME}folder/name.ipynb.")
    encoded = uri[len(SCHEME) :]
    bad = sorted({ch for ch in encoded if ch not in _PCHAR and ch != "/"})
    if bad:
        raise BadURI(f"'{uri}' has characters that must be percent-encoded: {' '.join(map(repr, bad))}.")
    if _BAD_ESCAPE.search(encoded):
        raise BadURI(f"'{uri}' has a malformed percent-encoding ('%' must be followed by two hex digits).")
    segments = []
    for raw in encoded.split("/"):
        try:
            segment = unquote_to_bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise BadURI(f"'{uri}' percent-encodes bytes that are not UTF-8.") from None
        if segment in ("", ".", ".."):
            raise BadURI(
                f"'{uri}' has an empty, '.' or '..' segment; it must name a notebook inside the root."
            )
        if any(ch in segment for ch in "/\\\x00"):
            raise BadURI(f"'{uri}' encodes a slash, backslash or NUL inside a name.")
        segments.append(segment)
    path = "/".join(segments)
    if not path.endswith(".ipynb"):
        raise BadURI(f"'{uri}' does not name a notebook (.ipynb).")
    return path


async def require(ctx: ServerRequestContext[Any], action: str, what: str) -> Any:
    """The request's Jupyter handler, once Jupyter's authorizer allows ``action`` on contents."""
    handler = handler_of(ctx)
    if handler is None:
        raise MCPError(code=types.INVALID_REQUEST, message="This request carries no Jupyter identity.")
    user = handler.current_user
    if not await is_allowed(handler, action, "contents"):
        raise MCPError(
            code=types.INVALID_REQUEST,
            message=f"Not permitted: user '{user.username}' may not {action} contents, so {what} was refused.",
        )
    return handler


def _client_key(ctx: ServerRequestContext[Any]) -> str:
    """Which client session a request belongs to: ``ctx.session`` is a new proxy on every request."""
    headers = getattr(ctx.request, "headers", None) or {}
    return headers.get("mcp-session-id") or f"request:{id(ctx.session)}"


class NotebookResources:
    """The resource handlers the MCP server is built with."""

    def __init__(self, services: Services):
        self.services = services
        self.bus = InMemorySubscriptionBus()
        self._listen = ListenHandler(self.bus)
        self.watchers = NotebookWatchers(
            lambda api: services.text_documents.live_document(api, "notebook", "json"),
            services.contents,
            self._notify,
        )
        self._subscribers: dict[str, dict[str, tuple[Any, str]]] = {}  # api -> session -> (session, uri)
        self._listening: dict[str, Counter[str]] = {}  # api -> uri -> open listen streams
        self._of_session: dict[str, set[str]] = {}  # MCP session -> the notebooks it subscribed to

    # -- listing and reading -------------------------------------------------------------

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        await require(ctx, "read", "resources/list")
        contents = self.services.contents
        found: list[types.Resource] = [
            types.Resource(
                uri=CAPABILITIES_URI,
                name="capabilities",
                mime_type="application/json",
                description="Server and extension versions, limits, kernelspecs, collaboration.",
            )
        ]
        with contextlib.suppress(HTTPError):
            async for entry in walk(contents, ""):
                if len(found) > MAX_LISTED:
                    break
                if entry["type"] == "notebook" and not self.services.documents.denied.matches(entry["path"]):
                    found.append(
                        types.Resource(
                            uri=notebook_uri(entry["path"]),
                            name=entry["path"],
                            mime_type=NOTEBOOK_MIME,
                            size=entry.get("size"),
                        )
                    )
        return types.ListResourcesResult(resources=found)

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            uri_template=TEMPLATE,
            name="notebook",
            mime_type=NOTEBOOK_MIME,
            description="A notebook by its path under the server root (RFC 3986 percent-encoded).",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if params.uri == CAPABILITIES_URI:
            await require(ctx, "read", "jupyter://capabilities")
            text = json.dumps(await self.capabilities(), indent=1)
            return types.ReadResourceResult(
                contents=[types.TextResourceContents(uri=params.uri, mime_type="application/json", text=text)]
            )
        api = await self._checked(ctx, params.uri, "resources/read")
        live = await self.services.text_documents.live_document(api, "notebook", "json")
        try:
            stored = None
            if live is None:
                model = await ensure_async(self.services.contents.get(api, type="notebook", content=True))
                stored = model["content"]
            text = await notebook_json(live, stored, self.services.limits.max_result_bytes)
        except ToolError as err:
            raise self._refused(params.uri, str(err)) from None
        except HTTPError as err:  # the contents manager's words name the server's own folder
            raise self._refused(params.uri, f"unreadable ({err.log_message or err.reason})") from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, mime_type=NOTEBOOK_MIME, text=text)]
        )

    async def capabilities(self) -> dict[str, Any]:
        """What a client may rely on here; ``schema_version`` changes when this shape does."""
        services = self.services
        specs = await ensure_async(services.kernelspecs.get_all_specs())
        ydoc_ext = services.text_documents.collaboration_on
        ydoc_version = collaboration.version()
        return {
            "schema_version": SCHEMA_VERSION,
            "versions": {"jupyter_server": jupyter_server.__version__, "jupyter_mcp_ext": __version__},
            "collaboration": {"enabled": ydoc_ext, "jupyter_server_ydoc": ydoc_version if ydoc_ext else None},
            "settings": {k: v for k, v in services.settings.items() if k not in SERVER_FILES},
            "default_kernel": services.default_kernel,
            "kernelspecs": [
                {
                    "name": name,
                    "display_name": spec["spec"].get("display_name", name),
                    "language": spec["spec"].get("language", ""),
                }
                for name, spec in sorted(specs.items())
            ],
        }

    async def _checked(self, ctx: ServerRequestContext[Any], uri: str, what: str) -> str:
        """The API path of an existing notebook a URI names, for a user allowed to read it."""
        try:
            path = path_of(uri)
        except BadURI as err:
            raise MCPError(code=types.INVALID_PARAMS, message=str(err)) from None
        await require(ctx, "read", what)
        try:
            return await self.services.documents.resolve(path)
        except ToolError as err:
            raise self._refused(uri, str(err)) from None

    def _refused(self, uri: str, why: str) -> MCPError:
        """An invalid-params error about ``uri`` that never names the server's own folder."""
        message = without_root(f"Resource {uri}: {why}", self.services.contents)
        return MCPError(code=types.INVALID_PARAMS, message=message)

    # -- subscriptions ------------------------------------------------------------------

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        api = await self._checked(ctx, params.uri, "resources/subscribe")
        key = _client_key(ctx)
        if len(self._of_session.get(key, ())) >= MAX_SUBSCRIPTIONS and api not in self._of_session[key]:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message=f"A session may subscribe to at most {MAX_SUBSCRIPTIONS} notebooks; unsubscribe from some first.",
            )
        if key not in self._of_session:
            self._of_session[key] = set()
            if not on_session_end(ctx, lambda: self._drop_session(key)):
                log.warning("Cannot see when MCP sessions end: subscriptions stay until unsubscribed")
        self._of_session[key].add(api)
        self._subscribers.setdefault(api, {})[key] = (ctx.session, params.uri)
        await self.watchers.watch(api)
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        key = _client_key(ctx)
        for api, subscribers in list(self._subscribers.items()):
            if subscribers.get(key, (None, None))[1] == params.uri:
                del subscribers[key]
                self._of_session.get(key, set()).discard(api)
                self._release(api)
        return types.EmptyResult()

    async def listen(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """The SDK's listen stream, with the notebooks it asks for watched while it lasts."""
        uris = [
            u
            for u in dict.fromkeys(params.notifications.resource_subscriptions or ())
            if u.startswith(SCHEME)
        ]
        if len(uris) > MAX_SUBSCRIPTIONS:  # each is resolved now, and each change is sent to each
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"A listen stream may watch at most {MAX_SUBSCRIPTIONS:,} notebooks ({len(uris):,} "
                "were asked for); listen for fewer.",
            )
        wanted = [(await self._checked(ctx, uri, "subscriptions/listen"), uri) for uri in uris]
        for api, uri in wanted:
            self._listening.setdefault(api, Counter())[uri] += 1
            await self.watchers.watch(api)
        try:
            return await self._listen(ctx, params)
        finally:
            for api, uri in wanted:
                self._listening[api][uri] -= 1
                self._release(api)

    def _drop_session(self, key: str) -> None:
        """The session ended (DELETE, idle timeout, server stop): its subscriptions go with it."""
        for api in self._of_session.pop(key, set()):
            self._subscribers.get(api, {}).pop(key, None)
            self._release(api)

    def _release(self, api: str) -> None:
        """Stop watching ``api`` once no session subscribes to it and no stream listens for it."""
        if not self._subscribers.get(api):
            self._subscribers.pop(api, None)
        listening = self._listening.get(api)
        if listening is not None and not +listening:
            del self._listening[api]
        if api not in self._subscribers and api not in self._listening:
            self.watchers.unwatch(api)

    async def _notify(self, api: str) -> None:
        for key, (session, uri) in list(self._subscribers.get(api, {}).items()):
            try:
                await session.send_resource_updated(uri)
            except Exception:
                self._subscribers.get(api, {}).pop(key, None)  # the client's session is gone
        for uri, count in (self._listening.get(api) or Counter()).items():
            if count > 0:
                await self.bus.publish(ResourceUpdated(uri=uri))
