"""Notebooks whose path starts with what a person has typed so far, for completions.

A host asks on every keystroke, and a server root can hold a huge tree: the walk starts in the
deepest folder the prefix names, descends only into folders that can still match, and stops after
``MAX_ENTRIES`` directory entries or ``MAX_SECONDS``, whichever comes first (then the answer says it
is incomplete). On a local disk it runs in a worker thread, at most ``MAX_WALKS`` at a time, so the
event loop never waits on the disk. It offers what the tools would open: nothing outside the root
(symbolic links out of it are skipped), no file of the deny-list, no hidden file unless the server
serves hidden files, nothing the contents manager hides from listings (``hide_globs``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from jupyter_core.paths import is_file_hidden, is_hidden
from tornado.web import HTTPError

from ..errors import ToolError
from .paths import walk
from .secrets import DeniedFiles

MAX_ENTRIES = 20_000  # directory entries looked at per request
MAX_SECONDS = 1.0  # wall time per request
MAX_WALKS = 2  # walks running at once per server (each holds a worker thread)


@dataclass
class Found:
    """Matching notebooks as ``(modified, path)``, and whether the whole tree that could match was seen."""

    notebooks: list[tuple[float, str]]
    complete: bool

    def newest_first(self, limit: int) -> list[str]:
        ordered = sorted(self.notebooks, key=lambda n: (-n[0], n[1]))
        return [path for _, path in ordered[:limit]]


async def notebooks_starting_with(
    prefix: str,
    contents: Any,
    denied: DeniedFiles,
    walks: asyncio.Semaphore,
    *,
    max_entries: int = MAX_ENTRIES,
    max_seconds: float = MAX_SECONDS,
) -> Found:
    """Notebooks under the root whose API path starts with ``prefix`` (case-sensitive, as paths are).

    A prefix that could only name something outside the root or hidden matches nothing.
    """
    prefix = prefix.lstrip()
    while prefix.startswith("./"):
        prefix = prefix[2:]
    parts = prefix.split("/")
    if (
        "\x00" in prefix
        or prefix.startswith(("/", "~", "\\"))
        or ".." in parts
        or (len(prefix) > 1 and prefix[1] == ":")
    ):
        return Found([], True)
    folder = "/".join(parts[:-1])
    allow_hidden = bool(getattr(contents, "allow_hidden", True))
    if not allow_hidden and any(p.startswith(".") for p in parts[:-1]):
        return Found([], True)
    root = getattr(contents, "root_dir", None)
    async with walks:  # made on the server's loop, MAX_WALKS permits
        if isinstance(root, str) and os.path.isdir(root):
            return await asyncio.to_thread(
                _scan, root, folder, prefix, contents, denied, allow_hidden, max_entries, max_seconds
            )
        return await _through_contents(prefix, folder, contents, denied, max_entries, max_seconds)


def _could_match(rel_folder: str, prefix: str) -> bool:
    """Whether anything under ``rel_folder`` can start with ``prefix``."""
    below = rel_folder + "/"
    return below.startswith(prefix) or prefix.startswith(below)


def _allowed(rel: str, contents: Any, denied: DeniedFiles) -> bool:
    try:
        denied.check(rel, contents)
    except ToolError:
        return False
    return True


def _scan(
    root: str,
    folder: str,
    prefix: str,
    contents: Any,
    denied: DeniedFiles,
    allow_hidden: bool,
    max_entries: int,
    max_seconds: float,
) -> Found:
    """The walk on a local disk (in a worker thread)."""
    real_root = os.path.realpath(root)
    start = os.path.realpath(os.path.join(real_root, *folder.split("/"))) if folder else real_root
    if start != real_root and not start.startswith(real_root.rstrip(os.sep) + os.sep):
        return Found([], True)
    if not os.path.isdir(start) or (not allow_hidden and folder and is_hidden(start, real_root)):
        return Found([], True)
    deadline = time.monotonic() + max_seconds
    pending: deque[tuple[str, str]] = deque([(start, folder)])
    visited: set[str] = set()
    found: list[tuple[float, str]] = []
    seen = 0
    while pending:
        real_dir, rel_dir = pending.popleft()
        if real_dir in visited:
            continue
        visited.add(real_dir)
        try:
            with os.scandir(real_dir) as entries:
                for entry in entries:
                    seen += 1
                    if seen > max_entries or time.monotonic() > deadline:
                        return Found(found, False)
                    rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                    if not rel.startswith(prefix) and not _could_match(rel, prefix):
                        continue
                    if not contents.should_list(entry.name):
                        continue
                    with contextlib.suppress(OSError):
                        stat = entry.stat()
                        if not allow_hidden and is_file_hidden(entry.path, stat):
                            continue
                        real = os.path.realpath(entry.path) if entry.is_symlink() else entry.path
                        if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
                            continue  # a link out of the root: the tools refuse it
                        if entry.is_dir():
                            if _could_match(rel, prefix):
                                pending.append((real, rel))
                        elif (
                            entry.name.endswith(".ipynb")
                            and rel.startswith(prefix)
                            and _allowed(rel, contents, denied)
                        ):
                            found.append((stat.st_mtime, rel))
        except OSError:
            continue  # an unreadable folder is skipped, as the tools' walk does
    return Found(found, True)


async def _through_contents(
    prefix: str, folder: str, contents: Any, denied: DeniedFiles, max_entries: int, max_seconds: float
) -> Found:
    """The walk through the contents manager, for one that is not a local disk."""
    deadline = time.monotonic() + max_seconds
    found: list[tuple[float, str]] = []
    seen = 0
    try:
        async for entry in walk(contents, folder):
            seen += 1
            if seen > max_entries or time.monotonic() > deadline:
                return Found(found, False)
            path = entry["path"]
            if entry["type"] == "notebook" and path.startswith(prefix) and _allowed(path, contents, denied):
                modified = entry.get("last_modified")
                found.append((modified.timestamp() if modified is not None else 0.0, path))
    except HTTPError:
        return Found([], True)
    return Found(found, True)
