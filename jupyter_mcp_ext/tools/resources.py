"""MCP resources: notebooks as ``notebook:///{+path}``, and ``jupyter://capabilities``.

A notebook URI is its API path with every character but letters, digits, ``-._~`` and the folder
slashes percent-encoded (RFC 3986), so ``nested folder/分析.ipynb`` is
``notebook:///nested%20folder/%E5%88%86%E6%9E%90.ipynb``. A URI a client expanded from the template
itself may also keep RFC 3986 sub-delimiters (``+``, ``(``, ...) as they are. A ``..`` or ``.``
segment, an absolute path, an encoded slash, a query or fragment and a malformed or non-UTF-8
encoding are refused before any file is looked at.

Subscriptions (``resources/subscribe`` in the handshake era, ``subscriptions/listen`` in 2026) are
served by one watcher per notebook: it observes the live shared document while a room holds the
notebook (so a person's keystrokes count as much as an agent's edits) and the file's modification
time while none does, and sends ``notifications/resources/updated`` once changes pause.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import string
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote_to_bytes

import jupyter_server
import mcp_types as types
from jupyter_core.utils import ensure_async
from mcp.server import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError
from pycrdt import Map
from tornado.web import HTTPError

from .._version import __version__
from ..documents import cells as nb
from ..documents import values
from ..documents.paths import walk
from ..errors import ToolError
from .authz import handler_of, is_allowed

if TYPE_CHECKING:
    from ..services import Services

log = logging.getLogger(__name__)

SCHEME = "notebook:///"
TEMPLATE = "notebook:///{+path}"
CAPABILITIES_URI = "jupyter://capabilities"
SCHEMA_VERSION = 1
NOTEBOOK_MIME = "application/x-ipynb+json"
MAX_LISTED = 500
POLL_SECONDS = 0.25
QUIET_SECONDS = 0.3  # changes closer together than this are one notification

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


@dataclass
class _Watch:
    api: str
    sessions: dict[str, Any] = field(default_factory=dict)  # MCP session id -> a ServerSession of it
    listeners: int = 0
    changed_at: float | None = None
    task: asyncio.Task[None] | None = None

    @property
    def wanted(self) -> bool:
        return bool(self.sessions) or self.listeners > 0


class NotebookResources:
    """The resource handlers the MCP server is built with."""

    def __init__(self, services: Services):
        self.services = services
        self.bus = InMemorySubscriptionBus()
        self._listen = ListenHandler(self.bus)
        self._watches: dict[str, _Watch] = {}

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
                if entry["type"] == "notebook":
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
            if live is not None:
                notebook = nb.as_json(live)
            else:
                model = await ensure_async(self.services.contents.get(api, type="notebook", content=True))
                notebook = model["content"]
                if (where := values.nonfinite_at(notebook)) is not None:
                    raise ToolError(nb.not_json(where))
        except ToolError as err:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Resource {params.uri}: {err}") from None
        text = json.dumps(notebook, indent=1, ensure_ascii=False)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, mime_type=NOTEBOOK_MIME, text=text)]
        )

    async def capabilities(self) -> dict[str, Any]:
        """What a client may rely on here; ``schema_version`` changes when this shape does."""
        services = self.services
        specs = await ensure_async(services.kernelspecs.get_all_specs())
        ydoc_ext = services.text_documents.collaboration_on
        try:
            import jupyter_server_ydoc

            ydoc_version: str | None = jupyter_server_ydoc.__version__
        except (ImportError, AttributeError):
            ydoc_version = None
        return {
            "schema_version": SCHEMA_VERSION,
            "versions": {"jupyter_server": jupyter_server.__version__, "jupyter_mcp_ext": __version__},
            "collaboration": {"enabled": ydoc_ext, "jupyter_server_ydoc": ydoc_version if ydoc_ext else None},
            "settings": dict(services.settings),
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
            raise MCPError(code=types.INVALID_PARAMS, message=f"Resource {uri}: {err}") from None

    # -- subscriptions ------------------------------------------------------------------

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        api = await self._checked(ctx, params.uri, "resources/subscribe")
        self._watch(params.uri, api).sessions[_client_key(ctx)] = ctx.session
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        watch = self._watches.get(params.uri)
        if watch is not None:
            watch.sessions.pop(_client_key(ctx), None)
        return types.EmptyResult()

    async def listen(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """The SDK's listen stream, with a watcher for each notebook URI it asks for while it lasts."""
        watches = []
        for uri in params.notifications.resource_subscriptions or ():
            if uri.startswith(SCHEME):
                watches.append(self._watch(uri, await self._checked(ctx, uri, "subscriptions/listen")))
        for watch in watches:
            watch.listeners += 1
        try:
            return await self._listen(ctx, params)
        finally:
            for watch in watches:
                watch.listeners -= 1

    def _watch(self, uri: str, api: str) -> _Watch:
        watch = self._watches.get(uri)
        if watch is None:
            watch = self._watches[uri] = _Watch(api)
        if watch.task is None or watch.task.done():
            watch.task = asyncio.create_task(self._follow(uri, watch), name=f"jupyter-mcp-ext watch {uri}")
        return watch

    async def _follow(self, uri: str, watch: _Watch) -> None:
        """Notify subscribers of ``uri`` after changes pause, for as long as anyone subscribes."""
        observed: Any = None
        subscriptions: list[tuple[Any, Any]] = []

        def changed(*_: Any) -> None:
            watch.changed_at = time.monotonic()

        def unobserve() -> None:
            for shared, sub in subscriptions:
                with contextlib.suppress(Exception):
                    shared.unobserve(sub)
            subscriptions.clear()

        mtime = await self._mtime(watch.api)
        await asyncio.sleep(0)  # the subscribe call returns before the first look
        try:
            while watch.wanted:
                doc = await self.services.text_documents.live_document(watch.api, "notebook", "json")
                if doc is not observed:
                    unobserve()
                    observed = doc
                    if doc is not None:
                        for shared in (doc.ycells, doc.ydoc.get("meta", type=Map)):
                            subscriptions.append((shared, shared.observe_deep(changed)))
                now_mtime = await self._mtime(watch.api)
                if doc is None and now_mtime != mtime:
                    changed()  # changed on disk with no room open (another tool, a git pull, ...)
                mtime = now_mtime
                if watch.changed_at is not None and time.monotonic() - watch.changed_at >= QUIET_SECONDS:
                    watch.changed_at = None
                    await self._notify(uri, watch)
                await asyncio.sleep(POLL_SECONDS)
        finally:
            unobserve()
            if self._watches.get(uri) is watch and not watch.wanted:
                del self._watches[uri]

    async def _mtime(self, api: str) -> Any:
        try:
            model = await ensure_async(self.services.contents.get(api, content=False))
        except Exception:
            return None
        return model.get("last_modified")

    async def _notify(self, uri: str, watch: _Watch) -> None:
        for key, session in list(watch.sessions.items()):
            try:
                await session.send_resource_updated(uri)
            except Exception:
                watch.sessions.pop(key, None)  # the client's session is gone
        if watch.listeners:
            await self.bus.publish(ResourceUpdated(uri=uri))
