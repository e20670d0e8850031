"""Files that hold secrets (keys, tokens, credentials) are never read or written for an agent.

A pattern without a slash is matched against the file's name (``*.pem``, ``.env*``); one with a slash
against the end of its path (``.git/config`` matches ``project/.git/config``). Both the path the agent
gave and the file it really is (symbolic links resolved) are checked, so a link named ``notes.txt``
that points at ``.env`` is refused too. Matching ignores case. A folder is judged by what it holds
when it is deleted or moved. ``allowed`` is the one check every file operation goes through.
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import os
from collections.abc import Iterable
from typing import Any

from jupyter_core.utils import ensure_async

from ..errors import ToolError
from .paths import MAX_FOLDERS, _real_root, locate, real_path, walk

MAX_TREE_ENTRIES = 20_000  # entries a folder may hold for an agent to delete or move it (each is checked)

DEFAULT_DENIED = (
    ".env*",
    "*.env",  # docker compose's env_file, prod.env
    "jpserver-*",  # Jupyter's runtime files: the server's own token (jpserver-<pid>.json, -open.html)
    "nbserver-*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*credentials*",
    ".netrc",
    ".pgpass",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
    ".git/config",
    ".ssh/*",
    ".aws/*",
    ".docker/config.json",
    ".kube/config",
)


class DeniedFiles:
    """The deny-list of secret file patterns (``c.MCPExtensionApp.denied_files``)."""

    def __init__(self, patterns: Iterable[str]):
        self.patterns = tuple(p.strip().strip("/").lower() for p in patterns if p.strip().strip("/"))
        # A pure function of the path's text (nothing on disk), so its answers can be kept.
        self.matches = functools.lru_cache(maxsize=4096)(self._matches)

    def _matches(self, api: str) -> str | None:
        """The first pattern ``api`` (a relative ``/`` path) matches, if any."""
        parts = [p for p in api.lower().split("/") if p]
        if not parts:
            return None
        for pattern in self.patterns:
            depth = pattern.count("/") + 1
            if len(parts) >= depth and fnmatch.fnmatchcase("/".join(parts[-depth:]), pattern):
                return pattern
        return None

    async def allowed(
        self,
        path: str,
        contents: Any,
        *,
        what: str = "path",
        whole: bool = False,
        moved_to: str | None = None,
    ) -> str:
        """The API path of ``path`` if agents may act on it, else a ToolError saying why: the one check
        of every file operation, a tool's or a revert's. Inside the root (links resolved), not hidden
        where the server hides files, not a secret; with ``whole`` (a delete or a move, ``moved_to``
        its new API path), not a folder holding a secret, or one its new name would make one."""
        return (await self.locate(path, contents, what=what, whole=whole, moved_to=moved_to))[0]

    async def locate(
        self,
        path: str,
        contents: Any,
        *,
        what: str = "path",
        whole: bool = False,
        moved_to: str | None = None,
    ) -> tuple[str, str | None]:
        """``allowed``, with where the file really is (``paths.locate``), resolved once for the call."""
        api, real = await locate(path, contents, what=what)
        self.check(api, contents, given=path, real=real)
        if whole:
            await self.check_tree(api, contents, moved_to=moved_to)
        return api, real

    def check(self, api: str, contents: Any, *, given: str | None = None, real: str | None = None) -> None:
        """Refuse (ToolError) a path that is, or leads to, a file of the deny-list. ``real``: where
        ``api`` really is, when the caller has just resolved it (it is resolved here otherwise)."""
        if not self.patterns:
            return
        hit = self.matches(api)
        if real is None:
            real = real_path(api, contents)
        if hit is None and real is not None:
            inside = _real_root(contents.root_dir).rstrip(os.sep) + os.sep
            if real.startswith(inside):
                hit = self.matches(real[len(inside) :].replace(os.sep, "/"))
        if hit is not None:
            raise ToolError(_refusal(given or api, hit))

    async def check_tree(self, api: str, contents: Any, *, moved_to: str | None = None) -> None:
        """Refuse (ToolError) deleting or moving the folder ``api`` when it holds a file of the
        deny-list, or would under its new name ``moved_to``: a folder is judged by what it holds.

        The walk is bounded (``MAX_TREE_ENTRIES``) and, on a local disk, runs off the event loop; a
        folder too large to check is refused.
        """
        if not self.patterns or not api or not await ensure_async(contents.dir_exists(api)):
            return
        real = real_path(api, contents)
        found = await asyncio.to_thread(_local_tree, real) if real is not None else await _tree(contents, api)
        if found is None:
            raise ToolError(
                f"'{api}' holds more than {MAX_TREE_ENTRIES:,} entries, too many to check for secret files "
                "(denied_files). Nothing was changed; delete or move its subfolders one by one, or ask the "
                "person to do it."
            )
        for relative in found:
            for name in (api, moved_to):
                if name is not None and (hit := self.matches(f"{name}/{relative}")) is not None:
                    raise ToolError(_refusal(f"{name}/{relative}", hit, inside=api))


def _refusal(path: str, hit: str, *, inside: str | None = None) -> str:
    held = f"'{inside}' holds '{path}', which" if inside else f"'{path}'"
    return (
        f"{held} looks like a secret (it matches '{hit}' in the server's denied_files), so agents may "
        "not read, write, move or delete it. Ask the person to handle that file, or to change "
        "c.MCPExtensionApp.denied_files."
    )


def _local_tree(top: str) -> list[str] | None:
    """Every entry under the folder ``top`` on disk, relative and ``/``-separated, hidden ones too
    (links not followed); None past ``MAX_TREE_ENTRIES``."""
    found: list[str] = []
    for folder, dirs, files in os.walk(top):
        base = os.path.relpath(folder, top)
        for name in (*dirs, *files):
            found.append(name if base == "." else f"{base}/{name}".replace(os.sep, "/"))
        if len(found) > MAX_TREE_ENTRIES:
            return None
    return found


async def _tree(contents: Any, api: str) -> list[str] | None:
    """The same through the contents manager (a server not on a local disk); None past the caps."""
    found: list[str] = []
    folders = 0
    async for entry in walk(contents, api):
        found.append(entry["path"][len(api) + 1 :])
        folders += entry["type"] == "directory"
        if len(found) > MAX_TREE_ENTRIES or folders >= MAX_FOLDERS - 1:  # walk stops at MAX_FOLDERS
            return None
    return found
