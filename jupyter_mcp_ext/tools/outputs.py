"""Outputs as an agent reads them: plain text without ANSI codes, images apart, everything bounded.

Every cut is counted and said in the result, never silent: an agent that does not know a traceback
was shortened will reason about the wrong error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..limits import Limits

# CSI sequences (colours, cursor moves), OSC sequences ended by BEL or ST (titles, hyperlinks), the rest.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
TEXT_TYPES = ("text/plain", "text/markdown", "text/latex", "application/json", "text/html")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def as_displayed(text: str) -> str:
    """Stream text as a notebook shows it: no terminal codes, and a line redrawn with carriage
    returns (a progress bar) only in its last state."""
    text = strip_ansi(text)
    if "\r" not in text:
        return text
    lines = []
    for line in re.sub(r"\r+\n", "\n", text).split("\n"):
        shown = ""
        for part in line.split("\r"):
            shown = part + shown[len(part) :]  # a carriage return overwrites from the line's start
        lines.append(shown)
    return "\n".join(lines)


def as_text(value: Any) -> str:
    """nbformat stores multi-line strings as lists of lines; join them."""
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return "" if value is None else str(value)


def one_line(output: dict[str, Any], width: int = 60) -> str:
    """A few words about one output, for outlines."""
    kind = output.get("output_type")
    if kind == "stream":
        text = as_text(output.get("text"))
        return f"{output.get('name', 'stream')}: {text.count(chr(10)) + (not text.endswith(chr(10)))} lines"
    if kind == "error":
        return _clip(f"error: {output.get('ename', '')}: {strip_ansi(as_text(output.get('evalue')))}", width)
    data = output.get("data") or {}
    images = [m for m in data if m in IMAGE_TYPES or m == "image/svg+xml"]
    if images:
        return images[0]
    if "text/plain" in data:
        first = strip_ansi(as_text(data["text/plain"])).strip().split("\n", 1)[0]
        return _clip(f"result: {first}" if kind == "execute_result" else f"display: {first}", width)
    return ", ".join(data) or str(kind)


def outline(outputs: list[dict[str, Any]], total: int | None = None) -> str:
    """The one-line summary of a cell's outputs in get_notebook (``total``: how many it has, when
    ``outputs`` holds only the first few)."""
    total = len(outputs) if total is None else total
    if not total:
        return ""
    parts = [one_line(o) for o in outputs[:3]]
    if total > 3:
        parts.append(f"+{total - 3} more")
    return "; ".join(parts)


def _clip(text: str, width: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass
class Budget:
    """What one tool result may still spend, and what has been cut so far."""

    limits: Limits
    used: int = 0
    chars_cut: int = 0
    outputs_omitted: int = 0
    images: list[tuple[str, str]] = field(default_factory=list)
    images_omitted: int = 0
    cells_unread: int = 0  # cells a read left out once the result was full

    @property
    def left(self) -> int:
        # A 64th (1,000 of 64,000 bytes) is kept for what surrounds it: headers, ids and notes.
        limit = self.limits.max_result_bytes
        return max(0, limit - limit // 64 - self.used)

    def take_text(self, text: str) -> str:
        """Bound one output's text by the per-output characters and the bytes left in the result.

        The middle goes (a traceback's or log's end matters most, so a third of what is kept is
        the head), and a marker says how many characters went; the marker counts against the bytes.
        """
        keep = min(len(text), self.limits.max_output_chars)
        shown = text
        while keep > 0:
            cut = len(text) - keep
            head = keep // 3
            marker = f"\n[… {cut:,} characters cut …]\n" if cut else ""
            shown = text[:head] + marker + text[len(text) - (keep - head) :]
            size = len(shown.encode())
            if size <= self.left:
                break
            # Drop the excess at this text's bytes per character (at least one each round).
            keep -= max(1, int((size - self.left) * len(shown) / size))
        if keep <= 0 and text:
            shown = f"[… {len(text):,} characters cut …]"
        self.chars_cut += len(text) - max(keep, 0)
        self.used += len(shown.encode())
        return shown

    def take_text_whole(self, text: str) -> str:
        """Bound a cell source by the per-result limit only: a source is what the agent edits."""
        if len(text.encode()) > self.left:
            # The whole characters that fit in the bytes left.
            kept = text.encode()[: self.left].decode(errors="ignore")
            cut = len(text) - len(kept)
            self.chars_cut += cut
            text = kept + f"\n[… {cut:,} characters of source cut: read this cell alone …]"
        self.used += len(text.encode())
        return text

    def take_image(self, mime: str, data: str) -> int | None:
        """Keep an image if it fits; returns its position in the result's images."""
        data = data.replace("\n", "")
        if len(self.images) >= self.limits.max_images or len(data) > self.left:
            self.images_omitted += 1
            return None
        self.used += len(data)
        self.images.append((mime, data))
        return len(self.images) - 1

    def notes(self) -> list[str]:
        notes = []
        if self.chars_cut:
            notes.append(f"{self.chars_cut:,} characters of output cut")
        if self.outputs_omitted:
            notes.append(f"{self.outputs_omitted} outputs omitted (result size limit)")
        if self.cells_unread:
            notes.append(f"the last {self.cells_unread} cells not read (result size limit)")
        if self.images_omitted:
            notes.append(
                f"{self.images_omitted} images omitted (at most {self.limits.max_images} images and "
                f"{self.limits.max_result_bytes:,} bytes per result)"
            )
        return notes

    def truncation(self) -> dict[str, int]:
        return {
            k: v
            for k, v in (
                ("chars_cut", self.chars_cut),
                ("outputs_omitted", self.outputs_omitted),
                ("images_omitted", self.images_omitted),
                ("cells_unread", self.cells_unread),
            )
            if v
        }


def render(output: dict[str, Any], budget: Budget) -> tuple[str, dict[str, Any]]:
    """One output as (text for the agent, structured form); images go into the budget."""
    kind = output.get("output_type")
    if budget.left <= 0:
        budget.outputs_omitted += 1
        return "[output omitted: result size limit reached]", {"type": kind, "omitted": True}
    if kind == "stream":
        text = budget.take_text(as_displayed(as_text(output.get("text"))))
        return text, {"type": "stream", "name": output.get("name"), "text": text}
    if kind == "error":
        trace = budget.take_text(strip_ansi("\n".join(as_text(t) for t in output.get("traceback") or [])))
        ename, evalue = output.get("ename", ""), strip_ansi(as_text(output.get("evalue")))
        return trace or f"{ename}: {evalue}", {
            "type": "error",
            "ename": ename,
            "evalue": evalue,
            "traceback": trace,
        }
    data = output.get("data") or {}
    shaped: dict[str, Any] = {"type": kind, "mime": list(data)}
    parts = []
    for mime in IMAGE_TYPES:
        if mime in data:
            slot = budget.take_image(mime, as_text(data[mime]))
            shaped["image"] = slot
            parts.append(f"[{mime} image {slot}]" if slot is not None else f"[{mime} image omitted]")
            break
    text_mime = next((m for m in TEXT_TYPES if m in data), None)
    if text_mime is None and "image/svg+xml" in data:
        text_mime = "image/svg+xml"
    if text_mime is not None and not (parts and text_mime == "text/plain" and _is_repr_of_figure(data)):
        text = budget.take_text(strip_ansi(as_text(data[text_mime])))
        shaped["text"] = text
        parts.append(text)
    return "\n".join(parts), shaped


def _is_repr_of_figure(data: dict[str, Any]) -> bool:
    # "<Figure size 640x480 with 1 Axes>" next to the image says nothing more.
    return as_text(data.get("text/plain")).startswith("<")
