"""Characters that change how text looks without showing themselves: bidi overrides, zero-width
marks, control codes.

An approval card that renders them faithfully shows a person something other than what runs
(``m = "<U+202E>";import os;os.system("id")#"`` looks like a harmless string). The panel shows each
one as a marked token (``ui/src/views/visible.tsx`` holds the same set); the server flags texts that
hold any, so the card can warn before anyone reads it. It also flags what the panel draws but a
person cannot read: combining marks stacked past any script's need, which draw over the lines around
them, and runs of variation selectors, which carry a payload behind one visible character.
"""

from __future__ import annotations

import re
import unicodedata

# Not in a Unicode category of their own but drawn as nothing: Hangul fillers, the combining grapheme
# joiner, Khmer's inherent vowels, and the variation selectors of the supplement (never in code; used
# to smuggle data in "invisible" text).
_INVISIBLE_LETTERS = "\u115f\u1160\u3164\uffa0\u034f\u17b4\u17b5"
_SUPPLEMENT = re.compile("[\U000e0100-\U000e01ef]")
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})  # controls, format, line/paragraph separators
_PLAIN = re.compile(r"[\t\n\x20-\x7e]*")  # the common case: printable ASCII needs no lookup
_MARKS = frozenset({"Mn", "Me"})  # combining marks, drawn on the character before them
_VARIATION = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]")
MAX_MARKS = 4  # combining marks in a row that text in any script needs (Hebrew points, Vietnamese)


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
    """Whether any character of ``text`` is one a person would not see as it is, or marks are
    stacked to draw over the lines around them or to carry data unseen (``stacked``)."""
    if not text or _PLAIN.fullmatch(text):
        return False
    return any(is_hidden(c, line_breaks=line_breaks) for c in text) or stacked(text)


def stacked(text: str) -> bool:
    """Whether ``text`` holds a run of combining marks longer than any script writes (``a`` and
    forty U+0336 draw over the lines above and below: "Zalgo" text), or two variation selectors in a
    row (one byte each of a payload hidden behind a visible character: nothing renders them)."""
    marks = selectors = 0
    for c in text:
        mark = unicodedata.category(c) in _MARKS
        marks = marks + 1 if mark else 0
        selectors = selectors + 1 if mark and _VARIATION.match(c) else 0
        if marks > MAX_MARKS or selectors > 1:
            return True
    return False
