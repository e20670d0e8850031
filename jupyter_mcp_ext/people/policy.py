"""The server's policy for agents: what they may do without a person, kept across restarts.

``full`` (the default: installing the extension changes nothing), ``ask`` (reads and edits go
through; running code, deleting and writing files outside notebooks wait for a person),
``read-only`` and ``off`` (every tool refuses). One setting per server, stored as JSON in Jupyter's
data folder so a restart keeps what the person chose.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ToolError

log = logging.getLogger(__name__)

MODES = ("full", "ask", "read-only", "off")

# How a call is gated. Most tools are classified by the permissions they ask the authorizer for;
# these are the exceptions, named here so the tools themselves stay unaware of the policy.
READS = frozenset({"get_execution", "inspect_variables"})  # execute permission, but change nothing
RUNS = frozenset({"restart_kernel", "interrupt_kernel"})  # lose the kernel's state, end a person's run
DELETES = frozenset({"delete_cells", "delete_path", "clear_outputs"})  # outputs cannot be taken back
FILE_WRITES = frozenset({"write_file", "edit_file", "rename_path"})
GATED = ("run", "delete", "write")  # what "ask" waits for a person on


def kind_of(spec: Any) -> str:
    """read, edit, run, delete or write: what a tool does, as the policy sees it."""
    if spec.name in READS or all(action == "read" for _, action in spec.permissions):
        return "read"
    if spec.name in RUNS or (spec.resource == "kernels" and spec.action == "execute"):
        return "run"
    if spec.name in DELETES:
        return "delete"
    if spec.name in FILE_WRITES:
        return "write"
    return "edit"


class Policy:
    def __init__(self, path: Path, on_change: Callable[[str], None] | None = None):
        self.path = path
        self._on_change = on_change
        self.mode = self._load()

    def _load(self) -> str:
        try:
            mode = json.loads(self.path.read_text(encoding="utf-8")).get("mode")
        except FileNotFoundError:
            return "full"
        except (OSError, ValueError, AttributeError) as err:
            log.warning("Ignoring unreadable MCP policy file %s (%s); the policy is 'full'", self.path, err)
            return "full"
        if mode not in MODES:
            log.warning("Unknown MCP policy %r in %s; the policy is 'full'", mode, self.path)
            return "full"
        return str(mode)

    def set(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"Unknown policy '{mode}'; use one of {', '.join(MODES)}.")
        self.mode = mode
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"mode": mode}), encoding="utf-8")
            os.replace(tmp, self.path)  # a crash mid-write leaves the old policy, never half a file
        except OSError as err:  # enforced all the same; only a restart forgets it
            log.error(
                "Could not keep the MCP policy in %s (%s); it holds until the server stops", self.path, err
            )
        if self._on_change is not None:
            self._on_change(mode)

    def check(self, tool: str, kind: str, ceiling: str | None = None) -> bool:
        """Refuse what the policy forbids (a ToolError); True when a person must approve first.

        ``ceiling`` is the policy of the caller's own credential: the stricter of the two applies.
        """
        mode = stricter(self.mode, ceiling)
        if mode == "off":
            raise ToolError(
                f"{tool} was refused: agents are paused by the user on this server. "
                "Nothing was done; wait for the person to resume agents."
            )
        if mode == "read-only" and kind != "read":
            whom = "you (this agent's credential)" if mode != self.mode else "agents on this server"
            raise ToolError(
                f"{tool} was refused: the user has set {whom} to read-only. "
                "Reading tools still work; ask the person to allow changes."
            )
        return mode == "ask" and kind in GATED


def stricter(mode: str, other: str | None) -> str:
    """The stricter of two policies (``off`` strictest, ``full`` least); ``None`` adds nothing."""
    if other not in MODES:
        return mode
    return max(mode, other, key=MODES.index)
