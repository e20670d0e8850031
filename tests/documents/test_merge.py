"""The three-way merge, the smallest splices and the revision memory, without a server.

What a person typing while an agent rewrites a text must see: their keystrokes kept, the agent's
change landed (or refused as a whole), and their cursor left where it was outside the change.
"""

from __future__ import annotations

import random

import pytest
from pycrdt import Doc, Text

from jupyter_mcp_ext.documents.merge import Edit, apply, describe_conflicts, edits, merge
from jupyter_mcp_ext.documents.revisions import Revisions, revision
from jupyter_mcp_ext.documents.splices import apply_edits, splice

ME = ("ada", "session-1")


def shared(text: str) -> Text:
    doc = Doc()
    doc["t"] = source = Text(text)
    return source


# -- merging ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "agent", "person", "expected"),
    [
        # the agent changes another line; the person finished line 1
        ("a = 1\nb = 2\n", "a = 1\nb = 20\n", "a = 1  # mine\nb = 2\n", "a = 1  # mine\nb = 20\n"),
        # the person adds a line right after the last line, which the agent changed (diff3 refuses this)
        ("a = 1\nb = 2", "a = 1\nb = 20", "a = 1\nb = 2\nc = 3", "a = 1\nb = 20\nc = 3"),
        # ... and the other way round
        ("a = 1\nb = 2", "a = 1\nb = 2\nc = 3", "a = 1\nb = 20", "a = 1\nb = 20\nc = 3"),
        # the same line, different places: a rename early on, a comment typed at the end
        (
            "result = compute(a, b)\n",
            "result = calc(a, b)\n",
            "result = compute(a, b)  # check\n",
            "result = calc(a, b)  # check\n",
        ),
        # both made the same change
        ("x = 1\n", "x = 2\n", "x = 2\n", "x = 2\n"),
        # the agent deletes a line, the person adds one right after it
        (
            "a = 1\nb = 2\nc = 3\n",
            "a = 1\nc = 3\n",
            "a = 1\nb = 2\nnew = 4\nc = 3\n",
            "a = 1\nnew = 4\nc = 3\n",
        ),
        # a line inserted above the one the agent changes
        ("a\nb\n", "a\nB\n", "a\nnew\nb\n", "a\nnew\nB\n"),
        # the agent changed nothing: whatever is there now stays
        ("a\n", "a\n", "a\nmore typing\n", "a\nmore typing\n"),
    ],
)
def test_changes_in_different_places_are_both_kept(base, agent, person, expected):
    merged = merge(base, agent, person)
    assert not merged.conflicts
    assert merged.text == expected
    assert apply(person, merged.edits) == expected


@pytest.mark.parametrize(
    ("base", "agent", "person", "line"),
    [
        ("x = 1\n", "x = 2\n", "x = 10\n", "x = 10"),  # both changed the same number
        (
            "print(a)\nfoo(bar)\n",
            "print(a)\nbaz(qux)\n",
            "print(a)\nfoo(baXr)\n",
            "foo(baXr)",
        ),  # typed inside a rewrite
        (
            "keep\ndrop me\n",
            "keep\n",
            "keep\ndrop me, no!\n",
            "drop me, no!",
        ),  # the agent deletes what the person edits
        ("a\n", "a\nagent\n", "a\nperson\n", None),  # both append (kept in order: no conflict)
    ],
)
def test_changes_at_the_same_place_conflict_and_show_what_is_there_now(base, agent, person, line):
    merged = merge(base, agent, person)
    if line is None:
        assert merged.text == "a\nagent\nperson\n" and not merged.conflicts
        return
    assert merged.edits == [] or merged.conflicts
    (conflict,) = merged.conflicts
    assert conflict.current == line
    message = describe_conflicts(merged.conflicts, " by Grace")
    assert line in message and "by Grace" in message and f"line {conflict.first_line}" in message


def test_surrogate_pairs_and_combining_characters_at_the_merge_points():
    base = "label = 'cafe\u0301'\nicon = '😀'\n"
    # The person puts a skin-toned thumbs-up right after the emoji and an accent after the label.
    person = "label = 'cafe\u0301\u0300'\nicon = '😀👍🏽'\n"
    # The agent renames both variables: its changes touch neither spot.
    agent = "name = 'cafe\u0301'\nsymbol = '😀'\n"
    merged = merge(base, agent, person)
    assert merged.text == "name = 'cafe\u0301\u0300'\nsymbol = '😀👍🏽'\n"
    source = shared(person)
    apply_edits(source, person, merged.edits)  # UTF-8 byte offsets in pycrdt
    assert str(source) == merged.text
    # An agent change right at the emoji the person just typed after is a conflict, not a guess.
    clash = merge(base, "label = 'cafe\u0301'\nicon = '😀😀'\n", person)
    assert clash.conflicts and "👍🏽" in clash.conflicts[0].current


def test_any_two_edits_on_different_lines_merge_exactly():
    rng = random.Random(7)
    alphabet = "abc xyz=()😀é\u0301\t"
    for _ in range(300):
        lines = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(6)]
        base = "\n".join(lines)
        p, a = rng.sample(range(6), 2)
        typed = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5)))
        at = rng.randint(0, len(lines[p]))
        person_lines = list(lines)
        person_lines[p] = lines[p][:at] + typed + lines[p][at:]
        agent_lines = list(lines)
        agent_lines[a] = rng.choice(["", "new text", lines[a][::-1] + "!"])
        expected = list(lines)
        expected[p], expected[a] = person_lines[p], agent_lines[a]
        merged = merge(base, "\n".join(agent_lines), "\n".join(person_lines))
        assert not merged.conflicts, (base, agent_lines, person_lines)
        assert merged.text == "\n".join(expected)


def test_a_person_typing_is_never_lost_whatever_the_agent_does():
    """Random keystrokes against random agent rewrites: either the merge keeps every keystroke and
    the agent's change, or it refuses; it never quietly drops either side."""
    rng = random.Random(11)
    for _ in range(300):
        base = "".join(rng.choice("ab \n") for _ in range(rng.randint(0, 30)))
        at = rng.randint(0, len(base))
        typed = "".join(rng.choice("XYZ") for _ in range(rng.randint(1, 4)))
        person = base[:at] + typed + base[at:]
        s = rng.randint(0, len(base))
        e = rng.randint(s, len(base))
        agent = base[:s] + rng.choice(["", "Q", "QQ\n"]) + base[e:]
        merged = merge(base, agent, person)
        if merged.conflicts:
            continue
        assert typed in merged.text  # the keystrokes, together
        assert merged.text == apply(person, merged.edits)
        # the person's text outside the agent's edits is untouched: removing the agent's edits'
        # effect is impossible to check in general, so check the edits never cover the typed span
        typed_span = range(at, at + len(typed))
        assert all(e.end <= typed_span.start or e.start >= typed_span.stop for e in merged.edits)


# -- the smallest splices ------------------------------------------------------------------


def test_edits_are_several_small_hunks_not_one_span():
    assert edits("hello world foo", "jello world fox") == [Edit(0, 1, "j"), Edit(14, 15, "x")]


def test_a_cursor_in_an_untouched_part_stays_on_its_character():
    old = "first = 1\nmiddle = 2\nlast = 3\n"
    new = "first = 10\nmiddle = 2\nlast = 30\n"
    source = shared(old)
    cursor = source.sticky_index(old.index("middle") + 3)  # a person's caret inside "middle"
    splice(source, old, new)
    assert str(source) == new
    assert new[cursor.get_index()] == "d"  # still between "mid" and "dle"
    # One prefix/suffix span (the old way) replaced "1\nmiddle = 2\nlast = 3" and moved the caret.


def test_splices_count_utf8_bytes():
    old = "\u03b1😀β\né\u0301 = 1\n"
    new = "\u03b1😀β!\né\u0301 = 2\n"
    source = shared(old)
    splice(source, old, new)
    assert str(source) == new


# -- revisions ---------------------------------------------------------------------------


def test_the_last_text_served_is_the_base_of_the_next_write_per_session_then_per_user():
    revisions = Revisions()
    scope = ("cell", "nb.ipynb", "c1")
    first = revisions.served(ME, scope, "x = 1")
    assert first == revision("x = 1") and len(first) == 8
    revisions.served(("ada", "session-2"), scope, "x = 2")
    assert revisions.base(ME, scope) == (first, "x = 1")  # each session its own
    assert revisions.base(("ada", "new-session"), scope)[1] == "x = 2"  # a new session: the user's last
    assert revisions.base(("grace", ""), scope) == (None, None)
    assert revisions.base(("grace", ""), scope, first)[1] == "x = 1"  # a revision names a text for anyone
    assert revisions.base(ME, ("cell", "nb.ipynb", "c2"), first)[1] is None  # but only in its own cell


def test_a_revision_the_client_wrote_over_means_its_own_write():
    """A percent script re-sent with its old markers: the agent's own earlier write is no person's
    edit, so the next write starts from it (texts an agent wrote hold no one else's typing)."""
    revisions = Revisions()
    scope = ("cell", "nb.ipynb", "c1")
    read = revisions.served(ME, scope, "n = 0")
    wrote = revisions.served(ME, scope, "n = 1", replacing=read)
    assert revisions.base(ME, scope, read) == (wrote, "n = 1")
    assert revisions.base(("grace", ""), scope, read) == (read, "n = 0")  # only for that client
    back = revisions.served(ME, scope, "n = 0", replacing=wrote)  # a cycle back to the first text
    assert revisions.base(ME, scope, read) == (back, "n = 0")


def test_memory_is_bounded_and_the_least_recently_used_go_first():
    revisions = Revisions(max_bytes=20_000)
    scope = lambda n: ("cell", "nb.ipynb", f"c{n}")  # noqa: E731
    for n in range(40):
        revisions.served(ME, scope(n), f"{n}" * 1000)
    assert revisions.used_bytes <= 20_000
    assert revisions.base(ME, scope(39))[1] == "39" * 1000
    assert revisions.base(ME, scope(0))[1] is None
    revisions.served(ME, ("file", "big.txt"), "x" * 50_000)  # larger than the whole budget: not kept
    assert revisions.base(ME, ("file", "big.txt"))[1] is None and revisions.used_bytes <= 20_000


def test_a_sessions_reads_go_when_it_ends_and_its_users_stay():
    revisions = Revisions()
    scope = ("cell", "nb.ipynb", "c1")
    read = revisions.served(ME, scope, "x = 1")
    assert revisions.sessions == {ME[1]}
    revisions.forget_session(ME[1])
    assert revisions.sessions == set()
    assert revisions.base(ME, scope) == (read, "x = 1")  # from its user's last read
    revisions.forget_session("never-seen")  # nothing to forget: nothing happens
