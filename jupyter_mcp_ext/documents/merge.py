"""Carrying an agent's whole-text write onto a text a person kept editing, and the smallest edits.

An agent sends a whole new text computed from the version it read (the base). Splicing the current
text into the agent's text would undo whatever a person typed since that read, so the agent's change
(base -> its text) is carried onto the current text instead, three-way. Differences come from
diff-match-patch at the character level, cleaned up to word and line boundaries; two changes
conflict when they overlap or touch in the base, unless they are the same change or meet at a line
boundary. A revert is the same merge turned round (``undo``): the change's result is the base.

Characters, not lines: a line merge (``merge3``, diff3) calls it a conflict when the person adds a
line right after the one the agent changed, or finishes line 1 while the agent edits line 2 (no
unchanged line between them). Tried on the issue's stories, merge3 refused two of three; this merge
keeps both sides whenever they touch different characters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from diff_match_patch import diff_match_patch

_SHOWN, _SHOWN_CHARS = 3, 600  # conflicts shown in an error, characters of each
_DIFF_TIMEOUT = 0.2  # seconds one diff may take before it settles for a coarser (still exact) answer


@dataclass(frozen=True)
class Edit:
    """Replace ``[start, end)`` (Python characters of the text it applies to) with ``text``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Conflict:
    """A part both sides changed: where it is in the current text, and what it says now."""

    first_line: int  # 1-based, in the current text
    last_line: int
    current: str  # the current text of those lines


@dataclass
class Merged:
    """The outcome of a three-way merge; ``edits`` are only meaningful when there is no conflict."""

    text: str
    edits: list[Edit] = field(default_factory=list)  # to the current text, in order, disjoint
    kept: list[tuple[int, int]] = field(default_factory=list)  # lines of concurrent edits kept (in text)
    conflicts: list[Conflict] = field(default_factory=list)


def _dmp() -> diff_match_patch:
    dmp = diff_match_patch()
    dmp.Diff_Timeout = _DIFF_TIMEOUT
    return dmp


def hunks(old: str, new: str, *, semantic: bool = False) -> list[Edit]:
    """The changes turning ``old`` into ``new``, as edits of ``old``.

    ``semantic`` widens them to what a reader would call one change (word and line boundaries), so
    a rewritten line is one hunk and not scattered letters that happen to match.
    """
    if old == new:
        return []
    dmp = _dmp()
    diffs = dmp.diff_main(old, new)
    if semantic:
        dmp.diff_cleanupSemantic(diffs)
    else:  # fewest operations: no splice that keeps one stray letter of a word it rewrites
        dmp.diff_cleanupEfficiency(diffs)
    out: list[Edit] = []
    at = 0
    start, removed = -1, 0
    added: list[str] = []
    for op, chunk in diffs:
        if op == 0:
            if start >= 0:
                out.append(Edit(start, start + removed, "".join(added)))
                start, removed, added = -1, 0, []
            at += len(chunk)
            continue
        if start < 0:
            start = at
        if op < 0:
            removed += len(chunk)
            at += len(chunk)
        else:
            added.append(chunk)
    if start >= 0:
        out.append(Edit(start, start + removed, "".join(added)))
    return out


def edits(old: str, new: str) -> list[Edit]:
    """The smallest edits (several hunks where needed) that turn ``old`` into ``new``."""
    return hunks(old, new)


def merge(base: str, ours: str, current: str, *, strict_points: bool = False) -> Merged:
    """Carry ``base -> ours`` onto ``current`` (which is ``base`` plus someone else's changes).

    ``strict_points``: text ours inserts conflicts with any change of theirs at that point, even
    whole lines (by default both go in, ours first). A revert sets it: it puts back what an agent
    deleted, and cannot know on which side of a person's new text at that spot it belongs.
    """
    if ours in (base, current):
        return Merged(current)
    if current == base:
        return Merged(ours, edits(current, ours))
    mine = hunks(base, ours, semantic=True)
    theirs = hunks(base, current, semantic=True)
    # At one point, an insertion of whole new lines goes after a change that ends there.
    tagged = sorted(
        [(h.start, h.end, _new_lines(h), 0, n, h) for n, h in enumerate(mine)]
        + [(h.start, h.end, _new_lines(h), 1, n, h) for n, h in enumerate(theirs)]
    )
    result = Merged(current)
    delta = 0  # current position minus base position, past the person's changes seen so far
    at = 0
    while at < len(tagged):
        cluster = [tagged[at][3::2]]  # (side, hunk)
        end = tagged[at][1]
        at += 1
        while at < len(tagged) and _joins(base, cluster, end, tagged[at][3::2], strict_points):
            cluster.append(tagged[at][3::2])
            end = max(end, tagged[at][1])
            at += 1
        ours_part = [h for side, h in cluster if side == 0]
        theirs_part = [h for side, h in cluster if side == 1]
        grown = sum(len(h.text) - (h.end - h.start) for h in theirs_part)
        if not theirs_part:
            result.edits += [Edit(h.start + delta, h.end + delta, h.text) for h in ours_part]
        elif ours_part and ours_part != theirs_part:
            start = cluster[0][1].start + delta
            result.conflicts.append(_conflict(current, start, end + delta + grown))
        delta += grown
    if result.conflicts:
        return result
    result.edits = [fine for rough in result.edits for fine in _refine(current, rough)]
    result.text = apply(current, result.edits)
    result.kept = _kept_lines(current, result.edits, theirs)
    return result


def undo(before: str, after: str, current: str) -> Merged:
    """Take the change ``before -> after`` back out of ``current``, keeping every later edit that
    does not touch it: the same merge, with the change's result as base and its origin as ours.
    Strict at points: text put back beside a person's new text would be a guess at its side."""
    return merge(after, before, current, strict_points=True)


def _new_lines(h: Edit) -> bool:
    """A pure insertion of lines after a point (``"\\nmore"``): it can follow any change ending there."""
    return h.start == h.end and h.text.startswith("\n")


def _joins(base: str, cluster: list[tuple[int, Edit]], end: int, nxt: tuple[int, Edit], strict: bool) -> bool:
    """Whether ``nxt`` (side, hunk) belongs with the changes before it: it overlaps them or touches
    them, unless the meeting point is a line boundary on one side (new lines after, or whole lines
    before); with ``strict``, an insertion of ours touching a change of theirs always joins."""
    side, hunk = nxt
    if hunk.start < end:
        return True
    if hunk.start > end:
        return False
    if hunk in [h for _, h in cluster]:  # the same change on both sides
        return True
    ending = [(s, h) for s, h in cluster if h.end == end]
    if strict:
        for other_side, h in ending:
            ours = h if side else hunk
            if other_side != side and ours.start == ours.end:
                return True
    if _new_lines(hunk):
        return False
    return not all(_whole_lines(base, h) for _, h in ending)


def _whole_lines(base: str, h: Edit) -> bool:
    """Whether ``h`` inserts or replaces whole lines, so what starts right after it is another line."""
    if h.start == h.end:
        return h.text.endswith("\n")
    at_line_start = h.start == 0 or base[h.start - 1] == "\n"
    return at_line_start and base[h.end - 1] == "\n" and (not h.text or h.text.endswith("\n"))


def apply(text: str, changes: list[Edit]) -> str:
    """``text`` with disjoint, ordered edits applied (a pure-string twin of the shared-text splice)."""
    parts, at = [], 0
    for e in changes:
        parts += [text[at : e.start], e.text]
        at = e.end
    parts.append(text[at:])
    return "".join(parts)


def describe_conflicts(conflicts: list[Conflict], by: str = "") -> str:
    """What an agent needs to redo its change: where both sides changed, and what is there now.

    ``by`` is " by <name>" when the other side is known, else "".
    """
    shown = []
    for c in conflicts[:_SHOWN]:
        where = lines_text([(c.first_line, c.last_line)])
        now = c.current if len(c.current) <= _SHOWN_CHARS else c.current[:_SHOWN_CHARS] + "…"
        shown.append(f"{where} now reads:\n{now}\n")
    more = f" (and {len(conflicts) - _SHOWN} more places)" if len(conflicts) > _SHOWN else ""
    return f"your change and an edit made{by} since your read touch the same place{more}; " + "".join(shown)


def lines_text(spans: list[tuple[int, int]]) -> str:
    """``[(2, 2), (5, 7)]`` -> ``"line 2, lines 5-7"``."""
    return ", ".join(f"line {a}" if a == b else f"lines {a}-{b}" for a, b in spans)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _refine(current: str, rough: Edit) -> list[Edit]:
    """Shrink one replacement to the characters that really change, so cursors nearby stay put."""
    return [
        Edit(rough.start + e.start, rough.start + e.end, e.text)
        for e in edits(current[rough.start : rough.end], rough.text)
    ]


def _conflict(current: str, start: int, end: int) -> Conflict:
    line_start = current.rfind("\n", 0, start) + 1
    line_end = current.find("\n", max(start, end - 1))
    line_end = len(current) if line_end < 0 else line_end
    return Conflict(
        line_of(current, start), line_of(current, max(start, end - 1)), current[line_start:line_end]
    )


def _kept_lines(current: str, applied: list[Edit], theirs: list[Edit]) -> list[tuple[int, int]]:
    """Where the person's changes sit in the merged text, as line ranges (for the tool's answer)."""
    merged = apply(current, applied)
    spans = []
    delta_base = 0
    for h in theirs:
        start = h.start + delta_base  # in current
        delta_base += len(h.text) - (h.end - h.start)
        if _new_lines(h):
            start += 1  # the lines it adds, not the end of the line before
        shift = sum(len(e.text) - (e.end - e.start) for e in applied if e.end <= start)
        pos = start + shift
        spans.append((line_of(merged, pos), line_of(merged, pos + max(len(h.text) - 1, 0))))
    out: list[tuple[int, int]] = []
    for first, last in spans:
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(last, out[-1][1]))
        else:
            out.append((first, last))
    return out
