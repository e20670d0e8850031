"""Searching text with an agent's regular expression without letting it stall the server.

Python's ``re`` backtracks without limit and holds the interpreter while it does: ``(=+)+$`` on a
line of 30 ``=`` and one other character runs for minutes, and the whole Jupyter server (every tab,
kernel message and save) waits. Here patterns run in the ``regex`` package, which releases the
interpreter while it matches (``concurrent=True``) and stops at a deadline (``timeout=``), on a small
thread pool of its own, so the event loop keeps serving and a hostile pattern costs at most
``SEARCH_SECONDS`` of one thread.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import regex

from ..errors import ToolError

SEARCH_SECONDS = 2.0  # time one search may spend matching, whatever the notebook's size
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="jupyter-mcp-ext search")

Match = tuple[int, int, str]  # (index of the text, line number from 1, the line)


async def search_lines(
    pattern: str, texts: list[str], *, is_regex: bool, limit: int
) -> tuple[list[Match], bool]:
    """Lines of ``texts`` that match, at most ``limit`` (and whether there were more).

    Case-insensitive unless the pattern has a capital letter. A ToolError says what to change when
    the pattern is invalid or takes longer than ``SEARCH_SECONDS``.
    """
    flags = regex.V0 | (0 if any(ch.isupper() for ch in pattern) else regex.IGNORECASE)
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(_POOL, _scan, pattern, is_regex, flags, texts, limit)
    except regex.error as err:
        raise ToolError(
            f"Invalid regular expression: {err}. Pass regex=false to search for the text as is."
        ) from err
    except TimeoutError:
        raise ToolError(
            f"The regular expression took too long (over {SEARCH_SECONDS:g} s) on this notebook and was "
            "stopped. Simplify it (nested repeats such as (a+)+ backtrack without end), or pass "
            "regex=false to search for the text as is."
        ) from None


def _scan(pattern: str, is_regex: bool, flags: int, texts: list[str], limit: int) -> tuple[list[Match], bool]:
    # In a worker thread: the texts are plain strings read on the loop before.
    deadline = time.monotonic() + SEARCH_SECONDS
    matcher = regex.compile(pattern if is_regex else regex.escape(pattern), flags)
    found: list[Match] = []
    for i, text in enumerate(texts):
        for n, line in enumerate(text.splitlines(), start=1):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            # Measured: a search that times out takes about twice its timeout (regex 2026.11); half
            # of what is left keeps the whole search within the budget.
            if matcher.search(line, timeout=left / 2, concurrent=True):
                if len(found) >= limit:
                    return found, True
                found.append((i, n, line))
    return found, False
