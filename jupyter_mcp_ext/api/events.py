"""Live updates for the panel on Jupyter's event bus: the panel listens on ``/api/events/subscribe``.

An event says only what changed (``kind``) and which one (``id``); the panel refetches that list.
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
        if event_logger is not None:
            event_logger.register_event_schema(SCHEMA_FILE)

    def emit(self, kind: str, item: Any) -> None:
        if self.logger is None:
            return
        try:
            self.logger.emit(schema_id=SCHEMA_ID, data={"kind": kind, "id": str(item)})
        except Exception:  # a listener's failure must not fail the agent's call
            log.exception("Could not emit the MCP %s event", kind)
