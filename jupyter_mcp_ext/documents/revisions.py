"""What each agent saw: short revisions of the texts it was served, kept to rebase its writes.

A whole-text write is only safe to merge if the server knows the text it was computed from. Every
read that returns a cell's source or a file's text names that version with a short revision (a
hash of the text, 8 hex characters: a few tokens) and keeps the text; a write either hands the
revision back or, without one, is taken to start from what the same client was last served for
that cell or file (by its MCP session, else by its user: a client that reconnects, or speaks the
stateless protocol, still finds its reads). Memory is bounded: least recently used texts go first,
counted in bytes. What was kept for a session goes when the session ends (``forget_session``): no
later request can name it, and it would hold a share of the bound until pushed out.
"""

from __future__ import annotations

import hashlib
import sys
from collections import OrderedDict
from typing import Any

Scope = tuple[str, ...]  # ("cell", path, cell_id), ("file", path), ("cells", path)
Client = tuple[str, str]  # (user, MCP session id or "")

_ENTRY_OVERHEAD = 200  # bytes of keys and bookkeeping per entry, roughly


def cell_scope(path: str, cell_id: str) -> Scope:
    return ("cell", path, cell_id)


def file_scope(path: str) -> Scope:
    return ("file", path)


def cells_scope(path: str) -> Scope:
    """The ids of a notebook's cells a client was shown in one whole read (newline-separated)."""
    return ("cells", path)


def revision(text: str) -> str:
    """The short revision of a text: equal texts always get the same one."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


class Revisions:
    """Texts by (scope, revision), and per client and scope the revision it was last served.

    Revisions are 32 bits, so they are only unique within one cell's or file's versions: the scope
    is part of every key.
    """

    def __init__(self, max_bytes: int = 32_000_000):
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[Any, ...], tuple[str, int]] = OrderedDict()
        self._bytes = 0
        self._of_session: dict[str, set[tuple[Any, ...]]] = {}  # session id -> its keys in ``_entries``

    def served(self, client: Client, scope: Scope, text: str, *, replacing: str | None = None) -> str:
        """Remember that ``client`` was given ``text`` for ``scope`` (or wrote it); returns its revision.

        ``replacing``: for a write, the revision it was based on. The client's own write supersedes
        that revision: a later write naming it (a percent script re-sent with its old markers) is
        taken to start from the written text. Texts the client wrote never hold a person's typing,
        so starting from them cannot undo any; a read made later could.
        """
        rev = revision(text)
        self._put(("text", scope, rev), text)
        for who in {(client[0], ""), client}:
            self._put(("last", *who, scope), rev)
            if replacing is not None and replacing != rev:
                self._put(("after", *who, scope, replacing), rev)
        return rev

    def base(self, client: Client, scope: Scope, rev: str | None = None) -> tuple[str | None, str | None]:
        """(revision, text) a write of ``client`` starts from: the one ``rev`` names (or the client's
        own write that replaced it), else the last served to its session, else to its user. The text
        is None when not known (never served, or forgotten to stay within memory)."""
        if rev is None:
            rev = self._get(("last", *client, scope)) or self._get(("last", client[0], "", scope))
        seen = set()
        while rev is not None and rev not in seen:
            seen.add(rev)
            later = self._get(("after", *client, scope, rev)) or self._get(
                ("after", client[0], "", scope, rev)
            )
            if later is None:
                break
            rev = later
        return rev, None if rev is None else self._get(("text", scope, rev))

    def forget_session(self, session_id: str) -> None:
        """The MCP session ended: what its client was served goes; what its user was served stays."""
        for key in list(self._of_session.get(session_id, ())):
            self._drop(key)

    @property
    def used_bytes(self) -> int:
        return self._bytes

    @property
    def sessions(self) -> set[str]:
        """The MCP sessions whose reads are kept."""
        return set(self._of_session)

    def _get(self, key: tuple[Any, ...]) -> str | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def _put(self, key: tuple[Any, ...], value: str) -> None:
        size = sys.getsizeof(value) + _ENTRY_OVERHEAD
        self._drop(key)
        if size > self.max_bytes:
            return  # one text larger than the whole budget is simply not kept
        self._entries[key] = (value, size)
        self._bytes += size
        session = _session_of(key)
        if session:
            self._of_session.setdefault(session, set()).add(key)
        while self._bytes > self.max_bytes:
            self._drop(next(iter(self._entries)))  # the least recently used

    def _drop(self, key: tuple[Any, ...]) -> None:
        """Forget one entry, its bytes and its place among its session's keys."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry[1]
        session = _session_of(key)
        keys = self._of_session.get(session)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._of_session[session]


def _session_of(key: tuple[Any, ...]) -> str:
    """The session id in a per-client key (``("last" | "after", user, session id, ...)``), else ""."""
    return key[2] if key[0] in ("last", "after") else ""
