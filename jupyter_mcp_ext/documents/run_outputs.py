"""A run's outputs into a cell of the shared document: one transaction per step, as a browser would.

The run (``kernels/runs.py``) knows what the kernel sent; this module knows how the notebook keeps
it: outputs as shared maps, a stream's text as shared text that grows in place, and the cell's
``execution_state`` and ``execution_count``. A person who clears or re-runs the cell meanwhile
changes the outputs under the run, which then puts back what it has produced, whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pycrdt import Array, Map, Text

from . import cells as nb

# An edit for the shared document (kernels/output_model.py makes them):
#   ("clear",)                          remove every output
#   ("append", output)                  add an output at the end
#   ("text", index, old_tail, add)      on stream ``index``: its text ends with ``old_tail``;
#                                       remove that, then append ``add``
#   ("replace", index, output)          put ``output`` in place of output ``index``
Op = tuple[Any, ...]


def write_step(
    doc: Any,
    ycell: Map,
    ops: Sequence[Op],
    *,
    synced: int,
    expect: int,
    outputs: Sequence[dict[str, Any]],
    state: str | None,
    count: int | None,
) -> int:
    """Apply ``ops`` to ``ycell`` in one transaction; returns how many outputs it now holds.

    ``synced`` is how many outputs the run left there last time (-1: the run's first write, whose
    ops begin with a clear), ``expect`` how many it should hold after these ops, ``outputs`` all the
    run has produced (put back whole when the cell's outputs are not what the run left there).
    """
    with doc.ydoc.transaction():
        first = synced == -1
        youtputs = ycell.get("outputs")
        if not isinstance(youtputs, Array):
            ycell["outputs"] = youtputs = Array()
        if first:
            synced = len(youtputs)
        if len(youtputs) == synced:
            try:
                for op in ops:
                    _apply(youtputs, op)
            except (IndexError, KeyError, TypeError):
                synced = -2  # not what the run left there: rewritten below
        if synced < 0 or len(youtputs) != expect:
            youtputs.clear()
            youtputs.extend([_youtput(output) for output in outputs])
        if state is not None:
            ycell["execution_state"] = state
        if count is not None or state == "running" or first:
            # A run's first write clears the old count even when the run never got one.
            ycell["execution_count"] = count
        nb.mark_dirty(doc)
        return len(youtputs)


def _apply(youtputs: Array, op: Op) -> None:
    kind = op[0]
    if kind == "clear":
        youtputs.clear()
    elif kind == "append":
        youtputs.append(_youtput(op[1]))
    elif kind == "text":
        _, index, old_tail, add = op
        text = youtputs[index]["text"]
        if isinstance(text, Text):
            end = len(text)  # bytes
            start = end - len(old_tail.encode())
            if old_tail:
                del text[start:end]
            if add:
                text.insert(start, add)
    elif kind == "replace":
        _, index, output = op
        youtputs[index] = _youtput(output)


def _youtput(output: dict[str, Any]) -> Map:
    """An output as the document stores it: a stream's text is shared text, so it can grow."""
    shaped = dict(output)
    if shaped.get("output_type") == "stream":
        shaped["text"] = Text(shaped.get("text", ""))
    return Map(shaped)
