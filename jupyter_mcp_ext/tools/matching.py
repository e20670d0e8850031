"""Searching text with an agent's regular expression without letting it stall the server.

Python's ``re`` backtracks without limit and holds the interpreter while it does: ``(=+)+$`` on a
line of 30 ``=`` and one other character runs for minutes, and the whole Jupyter server (every tab,
kernel message and save) waits. Here patterns run in the ``regex`` package, which releases the
interpreter while it matches (``concurrent=True``) and stops at a deadline (``timeout=``), on a small
thread pool of its own, so the event loop keeps serving and a hostile pattern costs at most
``SEARCH_SECONDS`` of one thread.

Compiling has no deadline, and ``regex`` unrolls counted repeats: ``a{4294967294}`` asks for tens of
gigabytes (about 270 bytes per unrolled item, measured), enough for the kernel to kill the server.
A pattern whose repeats would unroll to more than ``MAX_UNROLLED`` items is refused before it is
compiled.
"""

from __future__ import annotations

import asyncio
import re
import time
from concurrent.futures import ThreadPoolExecutor

import regex

from ..errors import ToolError

SEARCH_SECONDS = 2.0  # time one search may spend matching, whatever the notebook's size
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="jupyter-mcp-ext search")

MAX_UNROLLED = 200_000  # items a pattern's counted repeats may unroll to: about 54 MB compiled
Match = tuple[int, int, str]  # (index of the text, line number from 1, the line)

_COUNT = re.compile(r"\{(\d*)(?:,(\d*))?\}")
_BRACED_ESCAPE = re.compile(r"\\[pPNxu]\{[^}]*\}")  # \p{L}, \N{name}, \x{263a}: not repeats


def unrolled_size(pattern: str) -> int:
    """About how many items ``pattern`` unrolls to when compiled: each counted repeat ``{n}``,
    ``{n,m}`` or ``{n,}`` multiplies what it repeats (nested groups multiply), the rest counts one."""
    groups = [0]  # the size of each open group so far
    last = 0  # the size of the item a repeat would apply to
    i = 0
    while i < len(pattern):
        c = pattern[i]
        item = 1
        if c == "\\":
            escape = _BRACED_ESCAPE.match(pattern, i)
            i = escape.end() if escape else i + 2
        elif c == "[":  # a character class is one item: skip to its closing bracket
            i += 2 if pattern[i + 1 : i + 2] == "]" else 3 if pattern[i + 1 : i + 3] == "^]" else 1
            while i < len(pattern) and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
            i += 1
        elif c == "(":
            groups.append(0)
            i += 1
            continue
        elif c == ")" and len(groups) > 1:
            item = max(groups.pop(), 1)
            i += 1
        elif c == "{" and (count := _COUNT.match(pattern, i)) and any(count.groups()):
            times = max(int(n) for n in count.groups() if n)
            groups[-1] += last * (times - 1)
            last *= times
            i = count.end()
            continue
        else:
            i += 1
        groups[-1] += item
        last = item
    return sum(groups)


async def search_lines(
    pattern: str, texts: list[str], *, is_regex: bool, limit: int
) -> tuple[list[Match], bool]:
    """Lines of ``texts`` that match, at most ``limit`` (and whether there were more).

    Case-insensitive unless the pattern has a capital letter. A ToolError says what to change when
    the pattern is invalid or takes longer than ``SEARCH_SECONDS``.
    """
    flags = regex.V0 | (0 if any(ch.isupper() for ch in pattern) else regex.IGNORECASE)
    if is_regex and (size := unrolled_size(pattern)) > MAX_UNROLLED:
        raise ToolError(
            f"The regular expression repeats too much: its counted repeats ({{n}}, {{n,m}}) unroll to about "
            f"{size:,} items, at most {MAX_UNROLLED:,}. Use smaller counts or + and *, or pass regex=false."
        )
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
