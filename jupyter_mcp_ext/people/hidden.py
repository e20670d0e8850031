"""Characters that change how text looks without showing themselves: bidi overrides, zero-width
marks, control codes.

An approval card that renders them faithfully shows a person something other than what runs
(``m = "<U+202E>";import os;os.system("id")#"`` looks like a harmless string). The panel shows each
one as a marked token (``ui/src/views/visible.tsx`` holds the same set); the server flags texts that
hold any, so the card can warn before anyone reads it.
"""

from __future__ import annotations

import re
import unicodedata

# Not in a Unicode category of their own but drawn as nothing: Hangul fillers, and the variation
# selectors of the supplement (never in code; used to smuggle data in "invisible" text).
_INVISIBLE_LETTERS = "\u115f\u1160\u3164\uffa0"
_SUPPLEMENT = re.compile("[\U000e0100-\U000e01ef]")
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})  # controls, format, line/paragraph separators
_PLAIN = re.compile(r"[\t\n\x20-\x7e]*")  # the common case: printable ASCII needs no lookup


def is_hidden(char: str, *, line_breaks: bool = False) -> bool:
    """Whether ``char`` is invisible or steers the display; ``\\n`` and ``\\t`` are fine in code
    (``line_breaks`` False) but not in a name or a path."""
    if char in "\n\t":
        return line_breaks
    return (
        unicodedata.category(char) in _HIDDEN_CATEGORIES
        or char in _INVISIBLE_LETTERS
        or _SUPPLEMENT.match(char) is not None
    )


def has_hidden(text: str | None, *, line_breaks: bool = False) -> bool:
    """Whether any character of ``text`` is one a person would not see as it is."""
    if not text or _PLAIN.fullmatch(text):
        return False
    return any(is_hidden(c, line_breaks=line_breaks) for c in text)
