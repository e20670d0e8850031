"""The agent hosts people point at a lab, run as they are: Claude Code and Codex CLI from npm.

Each host runs with ``HOME`` in a folder of the test's own (both keep their MCP servers and tokens
there) and with its calls home turned off: neither needs the internet for its ``mcp`` subcommands.
Sign-in runs in a pty (pexpect), as a person's terminal: the host prints its authorization URL, the
person (``person.Person``) allows it in Chromium, and the host gets its answer on its own loopback
listener, or pasted back where it asks for it (the person's browser on another machine).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pexpect
import pytest

from .lab import Lab
from .person import Consent, Person

HERE = Path(__file__).parent
BIN = HERE / "node_modules" / ".bin"
PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex"}

# What keeps the hosts off their vendors' servers (their documentation's settings for air-gapped use).
OFFLINE = {
    # Claude Code: no telemetry, error reports, update checks or other calls home.
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    # Codex CLI: no browser opened by itself, plain output.
    "BROWSER": "true",
    "NO_COLOR": "1",
}
SERVER = "jupyter"  # the name each host knows the lab by
URL = re.compile(r"https?://\S+?/authorize\?[^\s\x07\x1b]+")


def installed() -> Path:
    """The hosts' folder of executables, installed from the lock once (``npm ci``); skips the test,
    saying so, where npm cannot reach its registry."""
    if all((BIN / name).exists() for name in PACKAGES):
        return BIN
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm not found: Claude Code and Codex CLI cannot be installed for the host tests")
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error", "--fetch-retries=1"],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0 or not all((BIN / name).exists() for name in PACKAGES):
        pytest.skip(f"npm unreachable: the agent hosts could not be installed ({done.stderr.strip()[-300:]})")
    return BIN


@dataclass
class Host:
    """One agent host, with a home of its own; ``add``, ``sign_in`` and ``status`` as a person runs them."""

    home: Path
    command: ClassVar[str]
    title: ClassVar[str]
    paste_prompt: ClassVar[str]  # what it says when it asks for the callback URL
    transcript: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)

    @property
    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "CLAUDE", "CODEX"))}
        return {**keep, **OFFLINE, "HOME": str(self.home), "TERM": "dumb"}

    async def run(self, *args: str) -> str:
        """``<host> args``, its output once it ends (it must end well)."""
        proc = await asyncio.create_subprocess_exec(
            str(installed() / self.command),
            *args,
            env=self.env,
            cwd=self.home,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        out = (await asyncio.wait_for(proc.communicate(), 120))[0].decode(errors="replace")
        self.transcript.append(f"$ {self.command} {' '.join(args)}\n{out}")
        assert proc.returncode == 0, out
        return out

    def spawn(self, *args: str) -> pexpect.spawn:
        child = pexpect.spawn(
            str(installed() / self.command),
            list(args),
            env=self.env,
            cwd=str(self.home),
            encoding="utf-8",
            codec_errors="replace",
            timeout=90,
            dimensions=(50, 4000),  # one line for the URL
        )
        self.transcript.append(f"$ {self.command} {' '.join(args)} (in a pty)")
        return child

    async def answer(self, child: pexpect.spawn, person: Person, *, paste: bool) -> Consent:
        """Read the URL the host printed, have the person allow it, hand the host its answer: its own
        listener gets it, or (``paste``) the person's browser cannot reach it and it is pasted back.
        The host must then end well (signed in)."""
        try:
            if await child.expect([URL, pexpect.EOF], async_=True) == 1:
                raise AssertionError(f"{self.title} printed no authorization URL: {child.before}")
            consent = await person.answer(child.match.group(0), reach_host=not paste)
            if paste:
                await child.expect(self.paste_prompt, async_=True)
                child.sendline(consent.callback)
            await child.expect(pexpect.EOF, async_=True)
            child.close()
            assert child.exitstatus == 0, f"{self.title} did not sign in: {child.before}"
        finally:
            self.transcript.append(f"{child.before or ''}")
            child.close(force=True)
        return consent

    async def add(self, mcp_url: str) -> None:
        raise NotImplementedError

    async def connect(self, mcp_url: str, person: Person) -> Consent:
        """What a person's set-up does: add the lab by its URL alone, then sign in."""
        await self.add(mcp_url)
        return await self.sign_in(person)

    async def connected(self, lab: Lab) -> bool:
        """Whether the host says it is connected (and, where it cannot say, whether its token works)."""
        raise NotImplementedError

    def access_token(self) -> str:
        """The access token the host keeps for the lab, read from where it keeps it."""
        raise NotImplementedError

    async def sign_in(self, person: Person, *, paste: bool = False) -> Consent:
        raise NotImplementedError

    async def status(self) -> str:
        raise NotImplementedError


class ClaudeCode(Host):
    command = "claude"
    title = "Claude Code"
    paste_prompt = "paste the redirect URL"

    async def add(self, mcp_url: str) -> None:
        await self.run("mcp", "add", "--scope", "user", "--transport", "http", SERVER, mcp_url)

    async def sign_in(self, person: Person, *, paste: bool = False) -> Consent:
        return await self.answer(self.spawn("mcp", "login", SERVER, "--no-browser"), person, paste=paste)

    async def connected(self, lab: Lab) -> bool:
        return await self.status() == "Connected"

    async def status(self) -> str:
        """What ``claude mcp list`` says of the lab: "Connected", "Needs authentication", ..."""
        out = await self.run("mcp", "list")
        line = next(line for line in out.splitlines() if line.startswith(f"{SERVER}:"))
        return line.rsplit(" - ", 1)[-1].lstrip("✔✗!⚠ ").strip()

    def access_token(self) -> str:
        """The access token Claude Code keeps for the lab (``~/.claude/.credentials.json``)."""
        stored = json.loads((self.home / ".claude" / ".credentials.json").read_text())
        (entry,) = [v for k, v in stored.get("mcpOAuth", {}).items() if k.startswith(f"{SERVER}|")]
        return entry["accessToken"]


class Codex(Host):
    command = "codex"
    title = "Codex CLI"
    paste_prompt = "Callback URL"

    async def connect(self, mcp_url: str, person: Person) -> Consent:
        """``codex mcp add``: it starts the sign-in itself when the server asks for OAuth."""
        return await self.answer(self.spawn("mcp", "add", SERVER, "--url", mcp_url), person, paste=False)

    async def sign_in(self, person: Person, *, paste: bool = False) -> Consent:
        return await self.answer(self.spawn("mcp", "login", SERVER, "--no-browser"), person, paste=paste)

    async def connected(self, lab: Lab) -> bool:
        """Codex has no health check: its list says how it signs in, and its token must work."""
        return await self.status() == "OAuth" and await lab.accepts(self.access_token())

    async def status(self) -> str:
        """The ``Auth`` column of ``codex mcp list`` for the lab: "OAuth" once signed in."""
        out = await self.run("mcp", "list")
        line = next(line for line in out.splitlines() if line.startswith(f"{SERVER} "))
        return line.split()[-1]

    def access_token(self) -> str:
        """The access token Codex keeps for the lab (``~/.codex/.credentials.json`` without a keyring)."""
        stored = json.loads((self.home / ".codex" / ".credentials.json").read_text())
        (entry,) = [v for v in stored.values() if v.get("server_name") == SERVER]
        return entry["access_token"]
