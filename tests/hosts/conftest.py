"""Fixtures of the host tests: each test's host (Claude Code, then Codex CLI) in a home of its own,
and the person, logged in to the module's lab in a fresh Chromium."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from .hosts import ClaudeCode, Codex, Host, installed
from .lab import Lab
from .person import Person, person_in, with_token

HOSTS = [ClaudeCode, Codex]


@pytest.fixture(params=HOSTS, ids=[h.command for h in HOSTS])
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Host]:
    installed()
    made: Host = request.param(tmp_path / "home")
    yield made
    print("\n".join(made.transcript))  # shown by pytest when the test fails


@pytest.fixture
async def person(lab: Lab) -> AsyncIterator[Person]:
    async with person_in(with_token(lab.url, lab.token)) as someone:
        yield someone
