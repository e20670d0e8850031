"""Live updates for the panel on Jupyter's event bus: the panel listens on ``/api/events/subscribe``.

An event says what changed (``kind``) and which one (``id``); the panel refetches that list. A
journal event also carries the entry as review marks need it (``entry``, no texts), so a mark appears
without a fetch; ``seq`` counts events, so a panel that sees a gap (a lost event, a restart) refetches.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

SCHEMA_ID = "https://jupyter-mcp-ext.readthedocs.io/events/activity"
SCHEMA_FILE = Path(__file__).parent / "event_schemas" / "activity.yaml"

log = logging.getLogger(__name__)


class ActivityEvents:
    def __init__(self, event_logger: Any):
        self.logger = event_logger
        self.seq = 0
        if event_logger is not None:
            event_logger.register_event_schema(SCHEMA_FILE)

    def emit(self, kind: str, item: Any, entry: dict[str, Any] | None = None) -> None:
        if self.logger is None:
            return
        self.seq += 1
        data: dict[str, Any] = {"kind": kind, "id": str(item), "seq": self.seq}
        if entry is not None:
            data["entry"] = entry
        try:
            self.logger.emit(schema_id=SCHEMA_ID, data=data)
        except Exception:  # a listener's failure must not fail the agent's call
            log.exception("Could not emit the MCP %s event", kind)
