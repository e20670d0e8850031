"""Turns the path an agent gave into a contents API path that stays inside the server root."""

from __future__ import annotations

import os
import re
from typing import Any

from jupyter_core.utils import ensure_async

from .errors import ToolError

_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


async def api_path(path: str, contents: Any, *, what: str = "path") -> str:
    """Normalise ``path`` (relative to the server root) or raise a ToolError saying how to fix it.

    Refused: absolute paths, ``..`` segments, NUL bytes, hidden files when the server hides them,
    and, for a server on a local disk, anything whose real location (symlinks resolved) is outside
    the root.
    """
    raw = path.strip()
    if "\x00" in raw:
        raise ToolError(f"The {what} contains a NUL byte; give a plain relative path such as 'work/data.ipynb'.")
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
    root = getattr(contents, "root_dir", None)
    if isinstance(root, str) and os.path.isdir(root):
        real_root = os.path.realpath(root)
        real = os.path.realpath(os.path.join(real_root, *parts))
        if os.path.commonpath([real_root, real]) != real_root:
            raise ToolError(f"'{path}' leads outside the Jupyter server root (a symbolic link); use a path inside it.")
        if (
            normalised
            and os.path.exists(real)
            and not getattr(contents, "allow_hidden", True)
            and await ensure_async(contents.is_hidden(normalised))
        ):
            raise ToolError(f"'{path}' is hidden and this server does not serve hidden files.")
    return normalised
