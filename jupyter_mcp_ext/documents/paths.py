"""Turns the path an agent gave into a contents API path that stays inside the server root."""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import AsyncIterator
from typing import Any

from jupyter_core.utils import ensure_async
from tornado.web import HTTPError

from ..errors import ToolError

_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
MAX_PATH_CHARS = 4096  # PATH_MAX on Linux: a longer path names no file, and is only bytes to carry


async def api_path(path: str, contents: Any, *, what: str = "path") -> str:
    """Normalise ``path`` (relative to the server root) or raise a ToolError saying how to fix it
    (``locate``, without where the file really is)."""
    return (await locate(path, contents, what=what))[0]


async def locate(path: str, contents: Any, *, what: str = "path") -> tuple[str, str | None]:
    """Normalise ``path`` (relative to the server root) or raise a ToolError saying how to fix it;
    with the file's real location (symlinks resolved; None off a local disk), resolved once here
    for the checks that follow in the same call rather than again by each.

    Refused: paths longer than ``MAX_PATH_CHARS``, absolute paths, ``..`` segments, NUL bytes, hidden
    files when the server hides them, and, for a server on a local disk, anything whose real location
    (symlinks resolved) is outside the root.
    """
    if len(path) > MAX_PATH_CHARS:
        raise ToolError(
            f"The {what} is {len(path):,} characters long; paths on this server are at most "
            f"{MAX_PATH_CHARS:,}. Give a shorter path relative to the Jupyter server root."
        )
    raw = path.strip()
    if "\x00" in raw:
        raise ToolError(
            f"The {what} contains a NUL byte; give a plain relative path such as 'work/data.ipynb'."
        )
    if raw.startswith(("/", "~")) or _DRIVE.match(raw):
        raise ToolError(
            f"'{path}' is absolute. Paths are relative to the Jupyter server root, "
            "e.g. 'analysis/model.ipynb' (list_notebooks shows them)."
        )
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ToolError(f"'{path}' uses '..': paths must stay inside the Jupyter server root.")
    normalised = "/".join(parts)
    if not getattr(contents, "allow_hidden", True) and any(part.startswith(".") for part in parts):
        raise ToolError(f"'{path}' is hidden and this server does not serve hidden files.")
    real = real_path(normalised, contents)
    if real is not None:
        if _outside(real, contents.root_dir):
            raise ToolError(
                f"'{path}' leads outside the Jupyter server root (a symbolic link); use a path inside it."
            )
        if (
            normalised
            and os.path.exists(real)
            and not getattr(contents, "allow_hidden", True)
            and await ensure_async(contents.is_hidden(normalised))
        ):
            raise ToolError(f"'{path}' is hidden and this server does not serve hidden files.")
        if normalised:
            # One name per folder: through a link to a folder of the root (``sub/up -> ..``) a file
            # would have two paths, two file ids and two rooms that overwrite each other. The last
            # part stays as given when it is a link itself: deleting or renaming a link acts on it.
            if os.path.islink(os.path.join(contents.root_dir, *parts)):
                folder = _relative(real_path("/".join(parts[:-1]), contents) or "", contents.root_dir)
                normalised = f"{folder}/{parts[-1]}" if folder else parts[-1]
            else:
                normalised = _relative(real, contents.root_dir)
    return normalised, real


def canonical(api: str, contents: Any, *, real: str | None = None) -> str:
    """The one path of the file ``api`` names, links resolved (for a server on a local disk): the
    key of its shared document, so every way to reach a file opens the same room. ``real``: where
    ``api`` really is, when the caller has just resolved it (``locate``)."""
    real = real if real is not None else real_path(api, contents)
    return api if real is None or _outside(real, contents.root_dir) else _relative(real, contents.root_dir)


def _relative(real: str, root: str) -> str:
    real_root = _real_root(root)
    if real == real_root:
        return ""
    inside = real_root.rstrip(os.sep) + os.sep
    if real.startswith(inside):  # the usual case: a slice, not relpath's splits and joins
        return real[len(inside) :].replace(os.sep, "/")
    return os.path.relpath(real, real_root).replace(os.sep, "/")


def real_path(api: str, contents: Any) -> str | None:
    """Where a normalised API path really is (symlinks resolved), for a server on a local disk.

    As ``os.path.realpath`` of the path under the root, found from the root's real path (resolved
    once) with one ``lstat`` per part of ``api``, rather than one per part of the root's path too;
    any part that is a link is resolved by ``realpath`` itself, on every call.
    """
    root = getattr(contents, "root_dir", None)
    if not isinstance(root, str):
        return None
    if root not in _local_roots:
        if not os.path.isdir(root):
            return None
        _local_roots.add(root)  # a folder on this disk: it stays one while the server serves it
    real_root = _real_root(root)
    parts = [part for part in api.split("/") if part]
    found = real_root
    for i, part in enumerate(parts):
        if part in (".", ".."):
            return os.path.realpath(os.path.join(real_root, *parts))
        found = os.path.join(found, part)
        try:
            if stat.S_ISLNK(os.lstat(found).st_mode):
                return os.path.realpath(os.path.join(real_root, *parts))
        except OSError:  # missing (or under a file): realpath keeps the rest as given, and so does this
            return os.path.join(found, *parts[i + 1 :])
    return found


_local_roots: set[str] = set()


def leads_outside(api: str, contents: Any) -> bool:
    """Whether a normalised API path is a symbolic link (or inside one) out of the server root."""
    real = real_path(api, contents)
    return real is not None and _outside(real, contents.root_dir)


def _outside(real: str, root: str) -> bool:
    real_root = _real_root(root)
    return real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep)


@functools.lru_cache(maxsize=8)
def _real_root(root: str) -> str:
    # Resolved once: every tool call checks its path against it.
    return os.path.realpath(root)


def without_root(text: str, contents: Any) -> str:
    """A server message without the server's own folder in it (``/srv/root/a.ipynb`` -> ``a.ipynb``)."""
    root = getattr(contents, "root_dir", None)
    if not isinstance(root, str) or not root:
        return text
    for folder in {os.path.realpath(root), os.path.abspath(root)}:
        text = text.replace(folder.rstrip(os.sep) + os.sep, "")
    return text


MAX_FOLDERS = 2000


async def walk(contents: Any, folder: str, *, recursive: bool = True) -> AsyncIterator[dict[str, Any]]:
    """Directory entries under ``folder``, breadth first, each folder's sorted by name.

    Never through a symbolic link out of the root (the tools refuse those paths), never twice into
    the same real folder (links back up the tree), and at most ``MAX_FOLDERS`` folders. A missing
    ``folder`` raises the contents manager's HTTPError; an unreadable subfolder is skipped.
    """
    pending, visited, folders = [folder], set(), 0
    while pending and folders < MAX_FOLDERS:
        current = pending.pop(0)
        folders += 1
        real = real_path(current, contents)
        if real is not None:
            if real in visited:
                continue
            visited.add(real)
        try:
            model = await ensure_async(contents.get(current, content=True, type="directory"))
        except HTTPError:
            if current == folder:
                raise
            continue
        for entry in sorted(model["content"], key=lambda e: e["name"]):
            if leads_outside(entry["path"], contents):
                continue
            if entry["type"] == "directory" and recursive:
                pending.append(entry["path"])
            yield entry
