"""The world the person's controls are tried in (issue 18): a root holding notebooks, a person's files
and secrets, a folder outside the root, the other process that changes files under the server, and
the ledger of what the person approved.

Every run of agent code in the suite appends a unique marker (``M00042``) to a log file named by an
environment variable, so neither the code nor a card carries a server path; the ledger says which
markers the person saw, byte-for-byte, on a card they approved.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RAN_ENV = "MCP_PROPSUITE_RAN"  # the kernel's environment names the log of markers run
NOTEBOOKS = ("nb/a.ipynb", "nb/b.ipynb")
FILES = ("files/notes.txt", "files/data.txt", "files/gone.txt", "files/link.txt")
BIG = "files/big.txt"  # a person's file too big for the journal to keep (finding 5)
BIG_BYTES = 2_500_000
DENIED = ("secret.pem", ".ssh/id_rsa", "keys/server.pem", ".kube/config")
TOP = {"nb", "files", "keys", ".ssh", ".kube", "secret.pem"}  # what the root holds at the start
MARKER = re.compile(r"M\d{5}")
LINK_TARGETS = (  # what the other process links a person's file to
    "secret.pem",
    "id_rsa",
    "keys folder",
    "outside file",
    "outside, dangling",
    "outside folder",
    "in the root",
)

_markers = itertools.count(1)


def new_marker() -> str:
    return f"M{next(_markers):05}"


def statement(marker: str) -> str:
    """Code that leaves ``marker`` in the log when it runs (and nothing else)."""
    return f'open(__import__("os").environ["{RAN_ENV}"], "a").write("{marker} ")'


class Site:
    """The root and the folder beside it; what must never change there, and a reset between examples."""

    def __init__(self, root: Path, outside: Path, ran_log: Path):
        self.root, self.outside, self.ran_log = root, outside, ran_log
        self.secrets = {rel: f"SECRET-{rel}-{uuid.uuid4().hex}" for rel in DENIED}
        self._denied: dict[str, tuple[bytes, int]] = {}
        self._outside: dict[str, tuple[bytes | str, int]] = {}

    def build(self) -> None:
        self.outside.mkdir(exist_ok=True)
        (self.outside / "o.txt").write_text("the person's file outside the root\n")
        self.reset()

    def reset(self) -> None:
        """Back to the start (files, secrets, nothing new at the top of the root), then snapshot."""
        for child in self.root.iterdir():
            if child.name not in TOP and not child.name.startswith(".ipynb"):
                _remove(child)
        _remove(self.root / "files")
        for rel in FILES[:2]:
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.root / rel).write_text(f"{rel}: the person's text\nsecond line\n")
        line = "the person's big file, second line\n"
        (self.root / BIG).write_text((line * (BIG_BYTES // len(line) + 1))[:BIG_BYTES])
        for rel, secret in self.secrets.items():
            path = self.root / rel
            if path.is_symlink() or not path.is_file() or path.read_text() != secret:
                _remove(path)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(secret)
        for extra in set(_walk(self.outside)) - {"o.txt"}:
            _remove(self.outside / extra)
        self._denied = {rel: _stamp(self.root / rel) for rel in DENIED}
        self._outside = _walk(self.outside)

    def deny(self, rel: str) -> None:
        """A file that became a denied one (renamed to ``*.pem``): from now on it must not change."""
        self._denied[rel] = _stamp(self.root / rel)

    def damage(self) -> list[str]:
        """What changed since the snapshot where nothing may: denied files and the folder outside."""
        found = []
        for rel, was in self._denied.items():
            path = self.root / rel
            if path.is_symlink() or not path.is_file():
                found.append(f"the denied file {rel} was moved, deleted or replaced")
            elif _stamp(path) != was:
                found.append(f"the denied file {rel} was written")
        now = _walk(self.outside)
        for rel in sorted(set(now) | set(self._outside)):
            if now.get(rel) != self._outside.get(rel):
                found.append(
                    f"outside the root, {rel} was {'created' if rel not in self._outside else 'changed'}"
                )
        return found

    def lost(self, approved: Iterable[str]) -> str | None:
        """The person's big file, if it is gone though no approved call deleted or moved it (or a
        folder holding it)."""
        if os.path.lexists(self.root / BIG):
            return None
        if any(p == BIG or BIG.startswith(p.rstrip("/") + "/") for p in approved):
            return None
        return BIG

    def leaked(self, text: str) -> str | None:
        """The denied file whose secret ``text`` carries, if any."""
        return next((rel for rel, secret in self.secrets.items() if secret in text), None)

    def ran(self) -> list[str]:
        """Every marker agent code has written so far."""
        return MARKER.findall(self.ran_log.read_text()) if self.ran_log.exists() else []


class OtherProcess:
    """Changes made under the server by something else on the machine: links, renames, deletes."""

    def __init__(self, site: Site):
        root, outside = site.root, site.outside
        self.root, self.site = root, site
        places = (
            root / "secret.pem",
            root / ".ssh/id_rsa",
            root / "keys",
            outside / "o.txt",
            outside / "new.txt",
            outside,
            root / "files/data.txt",
        )
        self.targets = dict(zip(LINK_TARGETS, places, strict=True))

    def link(self, rel: str, target: str) -> None:
        path = self.root / rel
        _remove(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(self.targets[target])

    def hide(self, rel: str) -> None:
        """Move a person's file to a denied name (``.pem``) and leave a link to it in its place: its
        text is what a revert of the agent's last change expects to find."""
        path, hidden = self.root / rel, self.root / f"{rel}.pem"
        if path.is_file() and not path.is_symlink() and not os.path.lexists(hidden):
            os.rename(path, hidden)
            path.symlink_to(hidden)
            self.site.deny(f"{rel}.pem")

    def rename(self, rel: str, to: str) -> None:
        if os.path.lexists(self.root / rel) and not os.path.lexists(self.root / to):
            (self.root / to).parent.mkdir(parents=True, exist_ok=True)
            os.rename(self.root / rel, self.root / to)

    def delete(self, rel: str) -> None:
        _remove(self.root / rel)

    def write(self, rel: str) -> None:
        path = self.root / rel
        if not path.is_symlink():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{rel} as the person rewrote it ({uuid.uuid4().hex[:8]})\n")


@dataclass
class Ledger:
    """What the person let run: markers on approved cards, and calls a rest-of-turn approval covers.

    A rest-of-turn approval covers the same agent, tool and path only (issue 18, finding 2), for
    ``turn_calls`` calls within ``turn_seconds`` of the approval. The ledger starts a turn's clock once
    the server has answered the approval, and counts a call when it starts: so it never covers a
    call the server would not have let through, and its figures are never stricter than the server's.
    """

    turn_calls: int = 10
    turn_seconds: float = 120.0
    approved: set[str] = field(default_factory=set)
    covered: set[str] = field(default_factory=set)
    turns: dict[tuple[int, str, str | None], tuple[int, float]] = field(default_factory=dict)

    def approve(self, card_code: str | None) -> set[str]:
        """The markers whose whole statement the approved card showed."""
        code = card_code or ""
        seen = {m for m in MARKER.findall(code) if statement(m) in code}
        self.approved |= seen
        return seen

    def grant(self, agent: int, tool: str, path: str | None) -> None:
        if self.turn_calls > 0:
            self.turns[(agent, tool, path)] = (self.turn_calls, time.monotonic() + self.turn_seconds)

    def launch(self, agent: int, tool: str, path: str | None, markers: Iterable[str]) -> bool:
        """A call about to start: True (and its markers may run) if a rest-of-turn approval covers it."""
        key = (agent, tool, path)
        left, until = self.turns.get(key, (0, 0.0))
        if left <= 0 or time.monotonic() > until:
            self.turns.pop(key, None)
            return False
        self.turns[key] = (left - 1, until)
        self.covered |= set(markers)
        return True

    def unapproved(self, ran: Iterable[str]) -> list[str]:
        return sorted(set(ran) - self.approved - self.covered)


def held_bytes(entries: Iterable[Any]) -> int:
    """The bytes of text the journal's entries hold, every field counted (their own sizes aside)."""
    pending: list[Any] = list(entries)
    size, seen = 0, set()
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, str):
            size += len(item.encode(errors="replace"))
        elif isinstance(item, bytes):
            size += len(item)
        elif isinstance(item, dict):
            pending += [*item.keys(), *item.values()]
        elif isinstance(item, (list, tuple, set, frozenset)):
            pending += list(item)
        elif type(item).__module__.startswith(("jupyter_mcp_ext.people", "jupyter_mcp_ext.agents")):
            pending += list(vars(item).values())
    return size


def rss_bytes() -> int:
    """This process's resident memory (the server runs in it)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _stamp(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


def _walk(top: Path) -> dict[str, tuple[bytes | str, int]]:
    """Every entry under ``top`` (links as links): its bytes or link target, and its mtime."""
    found: dict[str, tuple[bytes | str, int]] = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(folder) / name
            rel = path.relative_to(top).as_posix()
            stat = path.lstat()
            if path.is_symlink():
                found[rel] = (os.readlink(path), stat.st_mtime_ns)
            elif path.is_file():
                found[rel] = (path.read_bytes(), stat.st_mtime_ns)
            else:
                found[rel] = ("folder", stat.st_mtime_ns)
    return found


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
