"""``completion/complete``: what a host can offer while a person fills in a prompt or the notebook URI.

By argument name: ``path`` gives notebook paths under the root starting with the value, the most
recently modified first (``documents/finder.py`` bounds the walk and keeps out what the tools would
refuse); ``cell_id`` gives the ids of the notebook named by the ``path`` the client sends in
``context.arguments`` (none without it); ``kernel_name`` gives the installed kernels. At most
``MAX_VALUES`` values; ``total`` is sent only when it is exact, and ``hasMore`` when there is more,
or may be (a walk cut short). An unknown prompt, template or argument, or a value longer than
``MAX_VALUE_CHARS``, is an invalid-params error; a prefix that leads nowhere gives no values.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import mcp_types as types
from jupyter_core.utils import ensure_async
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError

from ..documents.finder import MAX_WALKS, notebooks_starting_with
from ..errors import ToolError
from .authz import is_allowed
from .prompts import NotebookPrompts
from .resources import TEMPLATE, require

if TYPE_CHECKING:
    from ..services import Services

Values = tuple[list[str], bool]  # the matches, and whether they are all there are

MAX_VALUES = 100  # the protocol's own limit per response
MAX_VALUE_CHARS = 1024  # a longer prefix is no one typing a path


class Completions:
    """The ``on_completion`` handler the MCP server is built with."""

    def __init__(self, services: Services, prompts: NotebookPrompts):
        self.services = services
        self.prompts = prompts
        self._walks: asyncio.Semaphore | None = None
        self._completers: dict[str, Callable[[Any, str, dict[str, str]], Awaitable[Values]]] = {
            "path": self._paths,
            "cell_id": self._cell_ids,
            "kernel_name": self._kernel_names,
        }

    async def complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        ref, argument = params.ref, params.argument
        if isinstance(ref, types.PromptReference):
            names = self.prompts.arguments_of(ref.name)
            if names is None:
                raise MCPError(types.INVALID_PARAMS, f"Unknown prompt '{ref.name}'; prompts/list names them.")
            what = f"prompt {ref.name}"
        elif ref.uri == TEMPLATE:
            names, what = ["path"], f"template {TEMPLATE}"
        else:
            raise MCPError(
                types.INVALID_PARAMS,
                f"No resource template '{ref.uri[:200]}' here; resources/templates/list names them ({TEMPLATE}).",
            )
        if argument.name not in names:
            raise MCPError(
                types.INVALID_PARAMS,
                f"The {what} has no argument '{argument.name[:100]}'; its arguments are {', '.join(names)}.",
            )
        if len(argument.value) > MAX_VALUE_CHARS:
            raise MCPError(
                types.INVALID_PARAMS,
                f"The value of '{argument.name}' is over {MAX_VALUE_CHARS} characters; send the start of it.",
            )
        completer = self._completers.get(argument.name)
        if completer is None:  # the conformance fixture's free-text arguments
            return types.CompleteResult(completion=types.Completion(values=[], total=0, has_more=False))
        handler = await require(ctx, "read", "completion/complete")
        context = (params.context.arguments if params.context else None) or {}
        values, exact = await completer(handler, argument.value, context)
        shown = values[:MAX_VALUES]
        return types.CompleteResult(
            completion=types.Completion(
                values=shown,
                total=len(values) if exact else None,
                has_more=len(values) > len(shown) or not exact,
            )
        )

    async def _paths(self, handler: Any, prefix: str, context: dict[str, str]) -> Values:
        if self._walks is None:
            self._walks = asyncio.Semaphore(MAX_WALKS)  # made here, on the server's loop
        documents = self.services.documents
        found = await notebooks_starting_with(prefix, self.services.contents, documents.denied, self._walks)
        return found.newest_first(len(found.notebooks)), found.complete

    async def _cell_ids(self, handler: Any, prefix: str, context: dict[str, str]) -> Values:
        path = context.get("path")
        if not path or len(path) > MAX_VALUE_CHARS:
            return [], True
        services = self.services
        try:
            api = await services.documents.resolve(path)
        except ToolError:
            return [], True  # not a notebook this caller could open: nothing to offer, nothing said about it
        live = await services.text_documents.live_document(api, "notebook", "json")
        if live is not None:
            ids = [str(cell.get("id", "")) for cell in live.ycells]
        else:
            model = await ensure_async(services.contents.get(api, type="notebook", content=True))
            ids = [str(cell.get("id", "")) for cell in model["content"].get("cells", ())]
        return [i for i in ids if i and i.startswith(prefix)], True

    async def _kernel_names(self, handler: Any, prefix: str, context: dict[str, str]) -> Values:
        if not await is_allowed(handler, "read", "kernelspecs"):
            user = handler.current_user.username
            raise MCPError(types.INVALID_REQUEST, f"Not permitted: user '{user}' may not read kernelspecs.")
        specs = await ensure_async(self.services.kernelspecs.get_all_specs())
        default = self.services.default_kernel
        return sorted((n for n in specs if n.startswith(prefix)), key=lambda n: (n != default, n)), True
