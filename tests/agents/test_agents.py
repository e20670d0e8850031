"""Each MCP session is an agent of its own: named after its client, acting for a Jupyter user,
placed in the notebook and cell it works on, and forgotten when its session ends."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import anyio
import pytest
from jupyter_server.auth import User
from mcp_types import Implementation
from traitlets.config import Config

from jupyter_mcp_ext.agents.directory import AgentDirectory, initials, person_of

from ..support.mcp_client import STATELESS, connect, ok
from ..support.runs import start_sleeper

CLAUDE = Implementation(name="claude-code", version="2.1.0", title="Claude Code")
CODEX = Implementation(name="codex", version="0.9")


def directory(jp_serverapp: Any) -> Any:
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    return app.services.agents


async def until(condition, timeout: float = 15.0) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await asyncio.sleep(0.05)


async def test_an_agent_is_named_after_its_client_and_placed_where_it_works(
    server_url, jp_auth_header, make_notebook, jp_serverapp
):
    path = make_notebook("work/a.ipynb", cells=["x = 1", "y = 2"])
    agents = directory(jp_serverapp)
    seen: list[tuple[str, str]] = []
    agents.on_change(lambda agent, what: seen.append((agent.id, what)))
    async with connect(server_url, jp_auth_header, client_info=CLAUDE) as client:
        cells = (await ok(client, "get_notebook", path=path))["cells"]
        (agent,) = agents.all()
        record = agent.to_json()
        assert record["client"] == {"name": "claude-code", "version": "2.1.0", "title": "Claude Code"}
        assert record["display_name"] == "Claude Code (agent)" and record["initials"] == "CC"
        assert record["username"] == f"mcp-agent-{record['id']}" != record["user"]
        assert re.fullmatch(r"#[0-9a-f]{6}", record["color"])
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["since"])
        assert record["path"] == path and record["state"] == "idle"

        await ok(client, "update_cell", path=path, cell_id=cells[1]["id"], source="y = 3")
        assert (agent.cell_id, agent.state) == (cells[1]["id"], "idle")
        made = await ok(client, "insert_cells", path=path, cells=[{"source": "z = 4"}])
        assert agent.cell_id == made["cell_ids"][0]
        # Reading another cell does not move it: it is still where it last wrote.
        await ok(client, "read_cells", path=path)
        assert agent.cell_id == made["cell_ids"][0]
        assert agents.get(agent.id) is agent
    # The session ended (the client's DELETE): the agent left.
    await until(lambda: not agents.all())
    assert seen[0] == (agent.id, "joined") and seen[-1] == (agent.id, "left")
    assert "changed" in {what for _, what in seen}


async def test_an_agent_is_running_while_its_cell_runs(
    server_url, jp_auth_header, make_notebook, jp_serverapp
):
    path = make_notebook("run.ipynb", cells=["x = 1"])
    agents = directory(jp_serverapp)
    states: list[str] = []
    agents.on_change(lambda agent, what: states.append(agent.state))
    async with connect(server_url, jp_auth_header, client_info=CLAUDE) as client:
        running = await start_sleeper(client, path, seconds=3, timeout=2)
        assert "running" in states and states[-1] == "idle"
        (agent,) = agents.all()
        assert agent.cell_id == running["cell_id"]
        await ok(client, "get_execution", execution_id=running["execution_id"], wait=20)


async def test_two_sessions_are_two_agents_and_a_stateless_client_is_one(
    server_url, jp_auth_header, make_notebook, jp_serverapp
):
    path = make_notebook("b.ipynb", cells=["x = 1"])
    agents = directory(jp_serverapp)
    async with (
        connect(server_url, jp_auth_header, client_info=CLAUDE) as one,
        connect(server_url, jp_auth_header, client_info=CLAUDE) as two,
    ):
        await ok(one, "get_notebook", path=path)
        await ok(two, "get_notebook", path=path)
        first, second = agents.all()
        assert first.id != second.id and first.username != second.username
        assert (first.display_name, second.display_name) == ("Claude Code (agent)", "Claude Code 2 (agent)")
        assert first.session_id and second.session_id
    await until(lambda: not agents.all())

    async with connect(server_url, jp_auth_header, STATELESS, client_info=CODEX) as client:
        await ok(client, "get_notebook", path=path)
        await ok(client, "list_notebooks")
        (agent,) = agents.all()  # one per principal and client name, though no session ties its calls
        assert agent.session_id is None
        assert agent.client == {"name": "codex", "version": "0.9"}
        assert agent.display_name == "codex (agent)" and agent.initials == "C"


@pytest.fixture
def agent_settings() -> dict[str, Any]:
    """``MCPExtensionApp`` settings of a test; parametrize to change them."""
    return {}


@pytest.fixture
def jp_server_config(jp_server_config: Config, agent_settings: dict[str, Any]) -> Config:
    config = Config(jp_server_config)
    config.merge(Config({"MCPExtensionApp": agent_settings}))
    return config


@pytest.mark.parametrize(
    "agent_settings", [{"agent_idle_timeout": 1.0, "agent_name_suffix": " [bot of {user}]"}]
)
async def test_an_idle_agent_leaves_and_comes_back_with_its_next_call(
    server_url, jp_auth_header, make_notebook, jp_serverapp
):
    path = make_notebook("c.ipynb")
    agents = directory(jp_serverapp)
    async with connect(server_url, jp_auth_header, client_info=CLAUDE) as client:
        await ok(client, "get_notebook", path=path)
        (agent,) = agents.all()
        assert agent.display_name.startswith("Claude Code [bot of ") and agent.display_name.endswith("]")
        await until(lambda: not agents.all(), timeout=10)
        await ok(client, "get_notebook", path=path)
        (again,) = agents.all()
        assert again.id == agent.id


def test_under_jupyterhub_the_agent_is_named_for_its_person() -> None:
    hub = pytest.importorskip("jupyterhub.singleuser.extension")

    class Handler:
        def __init__(self, user: User) -> None:
            self.current_user = user

    alice = hub.JupyterHubUser({"name": "alice", "user_info": {"display_name": "Alice Liddell"}})
    assert person_of(Handler(alice)) == {
        "name": "alice",
        "display_name": "Alice Liddell",
        "color": None,
        "hub": True,
    }
    bob = hub.JupyterHubUser({"name": "bob", "display_name": "Bob", "color": "#123456"})
    assert person_of(Handler(bob))["display_name"] == "Bob" and person_of(Handler(bob))["color"] == "#123456"
    assert person_of(Handler(User(username="carol")))["hub"] is False
    assert person_of(None)["name"] == "anonymous"
    directory = AgentDirectory()
    agent = directory._new_agent(
        "0badcafe", "k", None, {"name": "claude-code", "title": "Claude Code"}, Handler(alice)
    )
    assert agent.display_name == "Claude Code (Alice Liddell's agent)" and agent.user == "alice"


def test_initials() -> None:
    assert [initials(n) for n in ("Claude Code", "claude-code", "GitHubCopilot", "")] == [
        "CC",
        "CC",
        "GH",
        "AI",
    ]
