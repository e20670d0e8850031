"""A notebook saved with no cells stays without cells when a room opens it.

jupyter_ydoc fills an empty notebook with one blank code cell (a random id, ``trusted`` metadata)
whenever a room loads it, and the room then saves that cell. An agent that created the notebook
empty would find a cell it did not make, and its first insert would land after it. So, when a
notebook room is initialised (by our tools or by a JupyterLab tab: the collaboration layer's
``initialize`` event), that cell is removed again if, and only if, the file on disk has no cells.

A JupyterLab tab keeps at least one cell on screen: it adds its own blank cell to an empty
notebook. Such a lone untouched cell is a placeholder, and the agent's first insert replaces it
(``drop_placeholder``) rather than landing after it.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_ydoc import YNotebook

from . import collaboration
from .cells import mark_dirty

log = logging.getLogger(__name__)


def _is_filler(cell: dict[str, Any]) -> bool:
    """A cell made for an empty notebook (jupyter_ydoc's is trusted, JupyterLab's has no metadata):
    empty code, never run."""
    return (
        cell.get("cell_type") == "code"
        and not cell.get("source")
        and not cell.get("outputs")
        and cell.get("execution_count") is None
        and cell.get("metadata") in ({}, {"trusted": True})
    )


def lone_placeholder(doc: YNotebook) -> str | None:
    """The id of the notebook's only cell if it is an untouched placeholder, else None."""
    if len(doc.ycells) == 1 and _is_filler(cell := doc.ycells[0].to_py()):
        return str(cell.get("id"))
    return None


def drop_placeholder(doc: YNotebook, cell_id: str) -> int | None:
    """Remove the placeholder ``cell_id`` if it is still untouched; returns the index it had."""
    for i, ycell in enumerate(doc.ycells):
        if ycell.get("id") == cell_id:
            if not _is_filler(ycell.to_py()):
                return None
            with doc.ydoc.transaction():
                del doc.ycells[i]
                mark_dirty(doc)
            return i
    return None


async def drop_filler(doc: YNotebook, path: str, contents: Any) -> bool:
    """Remove the filler cell from a freshly loaded room if the file itself has no cells."""
    if len(doc.ycells) != 1 or not _is_filler(doc.ycells[0].to_py()):
        return False
    model = await ensure_async(contents.get(path, type="notebook", content=True))
    if model["content"].get("cells"):
        return False
    # Checked again after the await: a person may have typed into the cell meanwhile.
    if len(doc.ycells) != 1 or not _is_filler(doc.ycells[0].to_py()):
        return False
    with doc.ydoc.transaction():
        del doc.ycells[0]
        mark_dirty(doc)
    return True


class BlankNotebooks:
    """Listens for rooms that open notebooks (JupyterLab tabs included) and keeps empty ones empty."""

    def __init__(self, settings: dict[str, Any], contents: Any):
        self._settings = settings
        self._contents = contents
        # Rooms seen, by their live document: "initialize" is also sent for each client that joins,
        # and by then an empty cell is one a person may have made.
        self._seen: weakref.WeakSet[YNotebook] = weakref.WeakSet()

    def listen(self, event_logger: Any) -> None:
        # Registered whether or not collaboration has loaded yet (extensions load in name order).
        if event_logger is not None:
            event_logger.add_listener(schema_id=collaboration.SESSION_EVENTS, listener=self._on_event)

    async def _on_event(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        room, path = data.get("room", ""), data.get("path")
        if data.get("action") != "initialize" or not room.startswith("json:notebook:") or not path:
            return
        if not collaboration.enabled(self._settings):
            return
        try:
            doc = await collaboration.document(self._settings, room)
            if isinstance(doc, YNotebook) and doc not in self._seen:
                self._seen.add(doc)
                await drop_filler(doc, path, self._contents)
        except Exception:  # a listener's failure must not reach the collaboration layer
            log.exception("Could not check the new room of %s for a filler cell", path)
