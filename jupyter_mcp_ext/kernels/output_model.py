"""What a cell's outputs become as kernel messages arrive, as JupyterLab's output area does it.

Pure and synchronous: each message updates an nbformat output list and returns the edits that bring
a shared document up to date (``Op``s), so the document, the agent's result and the tests all see the
same thing. Streams merge with the previous stream of the same name; ``\\r`` and ``\\b`` act as in a
terminal; ``clear_output(wait=True)`` waits for the next output; ``update_display_data`` rewrites the
outputs with that display id. A cap on kept bytes bounds memory however much a cell prints, and the
cut is shown in the cell itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..documents.run_outputs import Op
from ..documents.storable import storable


def fold_line(line: str) -> str:
    """One line as a terminal shows it: ``\\b`` erases, ``\\r`` returns to the line's start."""
    if "\r" not in line and "\b" not in line:
        return line
    screen: list[str] = []
    col = 0
    for ch in line:
        if ch == "\r":
            col = 0
        elif ch == "\b":
            col = max(0, col - 1)
        elif col < len(screen):
            screen[col] = ch
            col += 1
        else:
            screen.append(ch)
            col += 1
    return "".join(screen)


@dataclass
class _Stream:
    done: str = ""  # complete lines, already folded
    tail: str = ""  # the open last line, raw (it may still be overwritten)

    @property
    def text(self) -> str:
        return self.done + fold_line(self.tail)


@dataclass
class OutputModel:
    max_bytes: int
    outputs: list[dict[str, Any]] = field(default_factory=list)
    kept_bytes: int = 0
    dropped_bytes: int = 0
    _streams: dict[int, _Stream] = field(default_factory=dict)
    _displays: dict[str, list[int]] = field(default_factory=dict)
    _clear_on_next: bool = False

    def apply(self, msg_type: str, content: dict[str, Any]) -> list[Op]:
        """Update the outputs for one iopub message; returns the document edits it implies."""
        if msg_type == "clear_output":
            if content.get("wait"):
                self._clear_on_next = True
                return []
            return self._clear()
        if msg_type not in ("stream", "display_data", "execute_result", "error", "update_display_data"):
            return []
        ops: list[Op] = []
        if msg_type == "update_display_data":
            return self._update_display(content)
        if self._clear_on_next:
            ops += self._clear()
        if msg_type == "stream":
            ops += self._stream(content.get("name", "stdout"), content.get("text", ""))
            if content.get("omitted"):  # cut before it reached us (see messages.py)
                ops += self._note_cut(content["omitted"])
            return ops
        output = _output(msg_type, content)
        size = _size(output)
        if not self._fits(size):
            return ops + self._note_cut(size)
        self.kept_bytes += size
        display_id = (content.get("transient") or {}).get("display_id")
        if display_id:
            self._displays.setdefault(display_id, []).append(len(self.outputs))
        self.outputs.append(output)
        return [*ops, ("append", output)]

    def finish(self) -> None:
        """The run ended: from now on only ``outputs`` is read, so the streams' working copies (a
        second copy of each text) go; a finished run then keeps its output once."""
        self._streams.clear()

    def _clear(self) -> list[Op]:
        self._clear_on_next = False
        self.outputs.clear()
        self._streams.clear()
        self._displays.clear()
        self.kept_bytes = 0
        return [("clear",)]

    def _stream(self, name: str, text: str) -> list[Op]:
        if not text:
            return []
        if not self._fits(len(text)):
            room = 0 if self.dropped_bytes else max(0, self.max_bytes - self.kept_bytes)
            kept = self._stream(name, text[:room]) if room else []
            return kept + self._note_cut(len(text) - room)
        self.kept_bytes += len(text)
        last = len(self.outputs) - 1
        if last >= 0 and last in self._streams and self.outputs[last].get("name") == name:
            stream = self._streams[last]
            done_before, tail_before = len(stream.done), fold_line(stream.tail)
            _feed(stream, text)
            self.outputs[last]["text"] = stream.text
            return [("text", last, tail_before, stream.done[done_before:] + fold_line(stream.tail))]
        stream = _Stream()
        _feed(stream, text)
        output = {"output_type": "stream", "name": name, "text": stream.text}
        self._streams[len(self.outputs)] = stream
        self.outputs.append(output)
        return [("append", dict(output))]

    def _update_display(self, content: dict[str, Any]) -> list[Op]:
        display_id = (content.get("transient") or {}).get("display_id")
        ops: list[Op] = []
        for index in self._displays.get(display_id or "", []):
            output = self.outputs[index]
            output["data"] = storable(content.get("data", {}))
            output["metadata"] = storable(content.get("metadata", {}))
            ops.append(("replace", index, dict(output)))
        return ops

    def _fits(self, size: int) -> bool:
        if self.dropped_bytes:
            return False  # once cut, stay cut: a later small output would hide the gap
        return self.kept_bytes + size <= self.max_bytes

    def _note_cut(self, size: int) -> list[Op]:
        first = not self.dropped_bytes
        self.dropped_bytes += size
        if not first:
            return []
        limit = f"{self.max_bytes / 1e6:.1f} MB" if self.max_bytes >= 1e6 else f"{self.max_bytes:,} bytes"
        note = {
            "output_type": "stream",
            "name": "stderr",
            "text": f"\n[Output limit reached: this cell's output passed {limit}; the rest was not kept.]\n",
        }
        self.outputs.append(note)
        return [("append", dict(note))]


def _feed(stream: _Stream, text: str) -> None:
    raw = stream.tail + text
    cut = raw.rfind("\n")
    if cut < 0:
        stream.tail = raw
        return
    lines = raw[: cut + 1].split("\n")[:-1]
    stream.done += "".join(fold_line(line.rstrip("\r")) + "\n" for line in lines)
    stream.tail = raw[cut + 1 :]


def _output(msg_type: str, content: dict[str, Any]) -> dict[str, Any]:
    return storable(_shape(msg_type, content))


def _shape(msg_type: str, content: dict[str, Any]) -> dict[str, Any]:
    if msg_type == "error":
        return {
            "output_type": "error",
            "ename": content.get("ename", ""),
            "evalue": content.get("evalue", ""),
            "traceback": list(content.get("traceback", [])),
        }
    output: dict[str, Any] = {
        "output_type": msg_type,
        "data": content.get("data", {}),
        "metadata": content.get("metadata", {}),
    }
    if msg_type == "execute_result":
        output["execution_count"] = content.get("execution_count")
    return output


def _size(output: dict[str, Any]) -> int:
    data = output.get("data") or {}
    return sum(len(str(v)) for v in data.values()) + sum(len(t) for t in output.get("traceback", []))
