"""The redirect URI rule as properties: whatever text a client sends, what the rule lets through is
the place a browser would go, on the allow-list, without user-info or fragment, and reading it again
changes nothing (so comparing two normalised URIs compares two places)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import AnyUrl

from jupyter_mcp_ext.auth.redirect_uris import LOOPBACK, PRIVATE_USE, normalise

PIECES = st.sampled_from(
    [
        *("http://", "https://", "HTTP://", "com.example.app:", "intent://", "view-source:", "javascript:"),
        *("127.0.0.1", "localhost", "[::1]", "evil.example", "127.0.0.1.evil.example", "0x7f000001"),
        *("@", "\\", ":", ":8888", "/", "/cb", "?x=1", "#f", "%40", "%2F", ".", "..", " ", "\t", "\u202e"),
    ]
)


@settings(max_examples=800, deadline=None)
@given(st.lists(PIECES, min_size=1, max_size=8).map("".join))
@example("http://evil.example\\@127.0.0.1/cb")
@example("https://localhost:8888@evil.example/phish")
@example("http://127.0.0.1%40evil.example/cb")
def test_what_passes_is_where_a_browser_goes_and_is_allowed(text: str) -> None:
    try:
        uri = normalise(text)
    except ValueError:
        return
    assert normalise(uri) == uri
    parsed = AnyUrl(uri)
    assert parsed.username is None and parsed.password is None and parsed.fragment is None
    if parsed.scheme == "http":
        assert parsed.host in LOOPBACK
    else:
        assert parsed.scheme == "https" or PRIVATE_USE.fullmatch(parsed.scheme), uri


@pytest.mark.parametrize(
    ("given_uri", "kept"),
    [
        ("HTTP://LocalHost:33418/cb", "http://localhost:33418/cb"),
        ("http://127.1/cb", "http://127.0.0.1/cb"),
        ("https://Agents.Example.com:443/cb", "https://agents.example.com/cb"),
    ],
)
def test_a_uri_is_kept_as_a_browser_reads_it(given_uri: str, kept: str) -> None:
    assert normalise(given_uri) == kept
