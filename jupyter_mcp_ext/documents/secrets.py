"""Files that hold secrets (keys, tokens, credentials) are never read or written for an agent.

A pattern without a slash is matched against the file's name (``*.pem``, ``.env*``); one with a slash
against the end of its path (``.git/config`` matches ``project/.git/config``). Both the path the agent
gave and the file it really is (symbolic links resolved) are checked, so a link named ``notes.txt``
that points at ``.env`` is refused too. Matching ignores case.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from typing import Any

from ..errors import ToolError
from .paths import real_path

DEFAULT_DENIED = (
    ".env*",
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
        self.patterns = [p.strip().strip("/").lower() for p in patterns if p.strip().strip("/")]

    def matches(self, api: str) -> str | None:
        """The first pattern ``api`` (a relative ``/`` path) matches, if any."""
        parts = [p for p in api.lower().split("/") if p]
        if not parts:
            return None
        for pattern in self.patterns:
            depth = pattern.count("/") + 1
            if len(parts) >= depth and fnmatch.fnmatchcase("/".join(parts[-depth:]), pattern):
                return pattern
        return None

    def check(self, api: str, contents: Any, *, given: str | None = None) -> None:
        """Refuse (ToolError) a path that is, or leads to, a file of the deny-list."""
        if not self.patterns:
            return
        hit = self.matches(api)
        real = real_path(api, contents)
        if hit is None and real is not None:
            root = os.path.realpath(contents.root_dir)
            if real.startswith(root.rstrip(os.sep) + os.sep):
                hit = self.matches(os.path.relpath(real, root).replace(os.sep, "/"))
        if hit is not None:
            raise ToolError(
                f"'{given or api}' looks like a secret (it matches '{hit}' in the server's denied_files), "
                "so agents may not read, write, move or delete it. Ask the person to handle that file, "
                "or to change c.MCPExtensionApp.denied_files."
            )
