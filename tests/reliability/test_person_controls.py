"""The person's controls against a hostile agent (issue 18), as a property over random interleavings.

Two agents (MCP sessions) edit notebooks, ask to run code and to change files, some calls waiting for
the person (policy ``ask``); the person approves, denies or approves the rest of a turn, and reverts
journal entries (the panel's REST API); another process on the machine swaps files for links (to
secrets, out of the root, dangling), renames and deletes them. After every step:

- only approved content ran: every marker agent code wrote was on a card the person approved,
  byte-for-byte, or sent in a call a rest-of-turn approval covers (same agent, tool and notebook);
- nothing was written outside the root or to a denied file, and no secret reached a response;
- memory stays within the configured bounds: the journal's text within ``journal_bytes``, waiting
  approvals per agent within their cap, ``GET /api/mcp/journal`` bounded;
- no HTTP 5xx, and no absolute server path in anything the server answered.

``PROPSUITE_EXAMPLES`` runs more interleavings than CI's (e.g. 200 for a night).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import time
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from . import figures
from .controls import (
    BIG,
    FILES,
    LINK_TARGETS,
    NOTEBOOKS,
    RAN_ENV,
    new_marker,
    statement,
)
from .world import World

EXAMPLES = int(os.environ.get("PROPSUITE_EXAMPLES", "20"))
STEPS = 14
AGENTS = (0, 1)
SHOWN = 20_000  # characters of code a card shows (people/approvals.py SHOWN_CHARS)
FILE_PATHS = (*FILES, BIG, "files/new.txt", "files/link.txt/o.txt", "files/link.txt/new.txt", "secret.pem")
FOLDERS = ("keys", ".ssh", ".kube", "files")
NEW_NAMES = ("files/renamed.txt", "kubex", "files/keys2", "files/link.txt")
THEN = (
    "wait",
    "wait",
    "approve",
    "deny",
    "approve the rest of the turn",
    "approve as the agent edits the cell",
)
DECISIONS = ("approve", "deny", "approve the rest of the turn", "approve as the agent edits the cell")
READS = (*FILES, "kubex/config", "files/keys2/server.pem", "files/link.txt/o.txt")


@pytest.fixture
def jp_server_config(jp_server_config, tmp_path):
    jp_server_config.MCPExtensionApp.policy_file = str(tmp_path / "state" / "policy.json")
    jp_server_config.MCPExtensionApp.approval_timeout = 40.0
    jp_server_config.MCPExtensionApp.journal_bytes = 500_000  # small enough for a flood to reach
    jp_server_config.MCPExtensionApp.approval_turn_calls = 3  # small enough for an interleaving to use up
    jp_server_config.MCPExtensionApp.approval_turn_seconds = 8.0  # and to outlast
    jp_server_config.ContentsManager.allow_hidden = True  # the hostile case: .ssh, .kube reachable
    return jp_server_config


def counted(step: Callable[..., None]) -> Callable[..., None]:
    """A step that counts itself in the figures (which kinds of steps the interleavings held)."""

    @functools.wraps(step)
    def run(self: PersonControls, **kwargs: Any) -> None:
        self.w.stats[f"step {step.__name__}"] += 1
        step(self, **kwargs)

    return run


class PersonControls(RuleBasedStateMachine):
    """One interleaving: steps drawn by hypothesis, the world checked after each."""

    world: ClassVar[World]

    def __init__(self) -> None:
        super().__init__()
        self.w = self.world
        self.w.begin()

    # -- the agents ------------------------------------------------------------------------

    @rule(
        agent=st.sampled_from(AGENTS),
        notebook=st.sampled_from(NOTEBOOKS),
        shape=st.sampled_from(["plain", "bidi", "hidden tail"]),
        then=st.sampled_from(THEN),
    )
    @counted
    def agent_runs_code(self, agent: int, notebook: str, shape: str, then: str) -> None:
        """Finding 6b and 7: a card shows the code whole (or the call is refused), controls flagged."""
        shown = new_marker()
        code = statement(shown)
        markers = [shown]
        if shape == "bidi":
            code = f'm = "\u202e"; {code}  # "'
        elif shape == "hidden tail":  # what runs after the part a card shows
            hidden = new_marker()
            code = f"{code}\n#{'x' * SHOWN}\n{statement(hidden)}"
            markers.append(hidden)
        self.w.launch(agent, "execute_code", {"path": notebook, "code": code}, markers, then=then)

    @rule(
        agent=st.sampled_from(AGENTS),
        notebook=st.sampled_from(NOTEBOOKS),
        how=st.sampled_from(["execute_cells", "insert_and_execute", "all cells"]),
        then=st.sampled_from(THEN),
    )
    @counted
    def agent_runs_a_cell(self, agent: int, notebook: str, how: str, then: str) -> None:
        marker = new_marker()
        if how == "insert_and_execute":
            self.w.put(notebook, marker)
            self.w.launch(agent, how, {"path": notebook, "source": statement(marker)}, [marker], then=then)
            return
        cell_id = self.w.insert_cell(agent, notebook, marker)
        if how == "all cells":  # every cell of the notebook: whatever the test ever put in it
            markers = self.w.markers_in(notebook)
            self.w.launch(agent, "execute_cells", {"path": notebook, "all": True}, markers, then=then)
            return
        args = {"path": notebook, "cell_ids": [cell_id]}
        self.w.launch(agent, how, args, [marker], cell=(notebook, cell_id), then=then)

    @rule(agent=st.sampled_from(AGENTS), pick=st.integers(0, 20))
    @counted
    def agent_edits_a_cell_waiting_to_run(self, agent: int, pick: int) -> None:
        """Finding 1: the card shows one code, the agent then edits the cell (edits are not gated)."""
        cells = self.w.waiting_cells()
        if cells:
            self.w.edit_cell(agent, *cells[pick % len(cells)])

    @rule(agent=st.sampled_from(AGENTS), notebook=st.sampled_from(NOTEBOOKS), then=st.sampled_from(THEN))
    @counted
    def agent_restarts_the_kernel(self, agent: int, notebook: str, then: str) -> None:
        self.w.launch(agent, "restart_kernel", {"path": notebook}, [], then=then)

    @rule(
        agent=st.sampled_from(AGENTS),
        tool=st.sampled_from(["write_file", "edit_file", "delete_path", "rename_path"]),
        path=st.sampled_from(FILE_PATHS + FOLDERS),
        new_path=st.sampled_from(NEW_NAMES),
        then=st.sampled_from(THEN),
    )
    @counted
    def agent_changes_files(self, agent: int, tool: str, path: str, new_path: str, then: str) -> None:
        """Findings 3 to 5: files changed (later reverted) while the other process swaps them for
        links; folders deleted or renamed with the secrets they hold; a big file overwritten."""
        args: dict[str, Any] = {"path": path}
        if tool == "write_file":
            args.update(content=f"written by agent {agent} ({new_marker()})\n", overwrite=True)
        elif tool == "edit_file":
            args.update(old_string="second line", new_string=f"edited by agent {agent}")
        elif tool == "rename_path":
            args.update(new_path=new_path)
        self.w.launch(agent, tool, args, [], then=then)

    @rule(agent=st.sampled_from(AGENTS), path=st.sampled_from(READS))
    @counted
    def agent_reads_a_file(self, agent: int, path: str) -> None:
        self.w.call(agent, "read_file", {"path": path})

    @rule(
        agent=st.sampled_from(AGENTS), what=st.sampled_from(["long paths", "long code"]), n=st.integers(1, 12)
    )
    @counted
    def agent_floods(self, agent: int, what: str, n: int) -> None:
        """Finding 6: calls that wait (or are refused) holding megabytes each."""
        for _ in range(n):
            if what == "long paths":
                self.w.launch(agent, "write_file", {"path": f"files/{'p' * 200_000}.txt", "content": "x"}, [])
            else:
                shown, hidden = new_marker(), new_marker()
                code = f"{statement(shown)}\n#{'y' * 300_000}\n{statement(hidden)}"
                self.w.launch(agent, "execute_code", {"path": NOTEBOOKS[0], "code": code}, [shown, hidden])

    # -- the person --------------------------------------------------------------------------

    @rule(pick=st.integers(0, 20), decision=st.sampled_from(DECISIONS))
    @counted
    def person_decides(self, pick: int, decision: str) -> None:
        self.w.decide(pick, decision)

    @rule(pick=st.integers(0, 50), how=st.sampled_from(["entry", "agent since", "odd id"]))
    @counted
    def person_reverts(self, pick: int, how: str) -> None:
        self.w.revert(pick, how)

    # -- another process -----------------------------------------------------------------------

    @rule(
        how=st.sampled_from(["link", "hide", "rename", "delete", "write"]),
        path=st.sampled_from(FILES),
        link_to=st.sampled_from(LINK_TARGETS),
        new_path=st.sampled_from(FILES),
    )
    @counted
    def other_process(self, how: str, path: str, link_to: str, new_path: str) -> None:
        """Another process on the machine: a file becomes a link (to a secret, out of the root,
        dangling), or moves to a denied name with a link left in its place, is renamed, deleted or
        rewritten, under the server's feet."""
        other = self.w.other
        if how == "link":
            other.link(path, link_to)
        elif how == "hide":
            other.hide(path)
        elif how == "rename":
            other.rename(path, new_path)
        else:
            (other.delete if how == "delete" else other.write)(path)

    # -- after every step ----------------------------------------------------------------------

    @invariant()
    def the_controls_hold(self) -> None:
        self.w.check()

    def teardown(self) -> None:
        self.w.end()


@pytest.mark.timeout(900)  # a failure's shrinking replays interleavings; a pass takes about a minute
async def test_the_person_controls_hold_under_random_interleavings(
    server_url, jp_auth_header, jp_root_dir, jp_serverapp, tmp_path, monkeypatch
):
    monkeypatch.setenv(RAN_ENV, str(tmp_path / "ran.log"))  # kernels start later and inherit it
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    world = await World.open(server_url, jp_auth_header, jp_root_dir, tmp_path, app, len(AGENTS))
    started = time.monotonic()
    try:
        PersonControls.world = world
        await asyncio.to_thread(
            run_state_machine_as_test,
            PersonControls,
            settings=settings(
                max_examples=EXAMPLES,
                stateful_step_count=STEPS,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
                print_blob=True,
            ),
        )
    finally:
        await world.close()
    figures.count("person-control interleavings tried", world.stats["interleavings"])
    figures.count("person-control steps checked", world.stats["steps"])
    figures.worst("worst server memory growth over person-control interleavings (MB)", world.worst_rss / 1e6)
    figures.note(
        f"person controls: {world.stats['interleavings']} interleavings, {world.stats['steps']} steps "
        f"({json.dumps({k: v for k, v in world.stats.items() if k not in ('interleavings', 'steps')})}) "
        f"in {time.monotonic() - started:.0f} s; worst memory growth {world.worst_rss / 1e6:.1f} MB, "
        f"journal held at most {world.worst['journal bytes']:,} of {app.journal_bytes:,} bytes, "
        f"GET /api/mcp/journal at most {world.worst['journal response']:,} bytes, "
        f"at most {world.worst['waiting per agent']} approvals waiting for one agent"
    )


# The review's reproductions as interleavings of the same steps: run every time, whatever
# hypothesis draws (a stateful test takes no explicit examples).
KNOWN: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "1: the agent edits the cell its waiting run shows": [
        ("agent_runs_a_cell", {"agent": 0, "notebook": NOTEBOOKS[0], "how": "execute_cells", "then": "wait"}),
        ("agent_edits_a_cell_waiting_to_run", {"agent": 0, "pick": 0}),
        ("person_decides", {"pick": 0, "decision": "approve"}),
    ],
    "2: the rest of a turn reaches another notebook": [
        (
            "agent_runs_code",
            {"agent": 0, "notebook": NOTEBOOKS[0], "shape": "plain", "then": "approve the rest of the turn"},
        ),
        ("agent_runs_code", {"agent": 0, "notebook": NOTEBOOKS[1], "shape": "plain", "then": "wait"}),
    ],
    "3: a revert writes through a link to a secret": [
        (
            "agent_changes_files",
            {"agent": 0, "tool": "edit_file", "path": FILES[0], "new_path": NEW_NAMES[0], "then": "approve"},
        ),
        ("other_process", {"how": "hide", "path": FILES[0], "link_to": "secret.pem", "new_path": FILES[1]}),
        ("person_reverts", {"pick": 0, "how": "entry"}),
    ],
    "3: a revert of a delete follows a dangling link out of the root": [
        (
            "agent_changes_files",
            {"agent": 0, "tool": "write_file", "path": FILES[2], "new_path": NEW_NAMES[0], "then": "approve"},
        ),
        (
            "agent_changes_files",
            {
                "agent": 0,
                "tool": "delete_path",
                "path": FILES[2],
                "new_path": NEW_NAMES[0],
                "then": "approve",
            },
        ),
        (
            "other_process",
            {"how": "link", "path": FILES[2], "link_to": "outside, dangling", "new_path": FILES[1]},
        ),
        ("person_reverts", {"pick": 0, "how": "entry"}),
    ],
    "5: a big file overwritten, then reverted": [
        (
            "agent_changes_files",
            {"agent": 0, "tool": "write_file", "path": BIG, "new_path": NEW_NAMES[0], "then": "approve"},
        ),
        ("person_reverts", {"pick": 0, "how": "entry"}),
    ],
}


@pytest.mark.timeout(300)
async def test_the_reviews_interleavings_hold(
    server_url, jp_auth_header, jp_root_dir, jp_serverapp, tmp_path, monkeypatch
):
    monkeypatch.setenv(RAN_ENV, str(tmp_path / "ran.log"))
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    world = await World.open(server_url, jp_auth_header, jp_root_dir, tmp_path, app, len(AGENTS))
    PersonControls.world = world

    def replay(steps: list[tuple[str, dict[str, Any]]]) -> None:
        machine = PersonControls()
        try:
            machine.the_controls_hold()
            for name, arguments in steps:
                getattr(machine, name)(**arguments)
                machine.the_controls_hold()
        finally:
            machine.teardown()

    failed = {}
    try:
        for finding, steps in KNOWN.items():
            try:
                await asyncio.to_thread(replay, steps)
            except AssertionError as err:
                failed[finding] = str(err).splitlines()[0]
    finally:
        await world.close()
    assert not failed, json.dumps(failed, indent=1)
