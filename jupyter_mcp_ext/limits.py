"""The numbers an operator tunes, in one place, read by the tools and the output shaper."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Bounds on what one tool call may read, write or return."""

    max_result_bytes: int = 64_000
    """Total bytes of text and images returned by one call."""
    max_output_chars: int = 8_000
    """Characters kept of any one output (stream text, traceback, text/plain)."""
    max_images: int = 4
    """Images returned by one call; the rest are counted, not sent."""
    max_source_chars: int = 1_000_000
    """Largest cell source (or sum of sources in one insert) an agent may write."""
    default_timeout: float = 120.0
    """Seconds an execution call waits for its cells when the agent gives no timeout."""
    max_timeout: float = 600.0
    """Upper bound on the timeout an agent may ask for; the cell itself is not bounded."""
