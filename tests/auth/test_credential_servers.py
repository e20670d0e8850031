"""Two servers of one person (different root folders, base_url ``/``, one Jupyter data folder): an
agent's credential works at the server that issued it and nowhere else, and a revocation stays
revoked whatever the other server keeps or writes, across restarts of either."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from jupyter_mcp_ext.auth.tokens import TokenStore

from ..support.mcp_client import RAW_HEADERS, RAW_INITIALIZE
from ..support.server_process import TOKEN, server_on

PERSON = {"Authorization": f"token {TOKEN}"}


@contextmanager
def lab(work: Path, root: str) -> Iterator[str]:
    """A server of its own folders (``work/root``: root, config, runtime, state) but for Jupyter's
    data folder, ``work/data``, which every such server shares."""
    own = work / root
    own.mkdir(exist_ok=True)
    (work / "data").mkdir(exist_ok=True)
    if not (own / "data").exists():
        (own / "data").symlink_to(work / "data", target_is_directory=True)
    with server_on(own) as url:
        yield url


async def mint(http: httpx.AsyncClient, url: str, name: str, policy: str = "read-only") -> tuple[str, str]:
    made = await http.post(f"{url}api/mcp/agents", json={"name": name, "policy": policy}, headers=PERSON)
    assert made.status_code == 201, made.text
    return made.json()["agent"]["id"], made.json()["token"]


async def status_at(http: httpx.AsyncClient, url: str, token: str) -> int:
    """What an agent sending ``token`` gets when it opens a session at ``url``'s /mcp."""
    answer = await http.post(
        f"{url}mcp", json=RAW_INITIALIZE, headers={**RAW_HEADERS, "Authorization": f"Bearer {token}"}
    )
    return answer.status_code


async def listed(http: httpx.AsyncClient, url: str) -> list[str]:
    answer = await http.get(f"{url}api/mcp/agents", headers=PERSON)
    return [a["name"] for a in answer.json()["agents"]]


# Four server starts, each bounded by server_process (90 s).
@pytest.mark.timeout(4 * 90 + 60)
async def test_a_token_works_only_where_it_was_minted_and_a_revocation_survives_the_other_server(tmp_path):
    async with httpx.AsyncClient(timeout=30) as http:
        with lab(tmp_path, "a") as a:
            with lab(tmp_path, "b") as b:
                agent_id, token = await mint(http, a, "Reader")
                _, kept = await mint(http, a, "Keeper")
                assert await status_at(http, a, token) == 200
                assert await status_at(http, b, token) == 401
                assert await listed(http, b) == []
            with lab(tmp_path, "b") as b:  # B restarted: it still does not take A's agent
                assert await status_at(http, b, token) == 401

                revoked = await http.delete(f"{a}api/mcp/agents/{agent_id}", headers=PERSON)
                assert revoked.status_code == 200, revoked.text
                assert await status_at(http, a, token) == 401
                assert await status_at(http, b, token) == 401
                await mint(http, b, "B's own")  # B writes its credentials
                assert await listed(http, b) == ["B's own"]
        with lab(tmp_path, "a") as a:  # A restarted (on another port) after B wrote: the revocation holds
            assert await status_at(http, a, token) == 401
            assert await listed(http, a) == ["Keeper"] and await status_at(http, a, kept) == 200


class TestTwoStoresOnOneDataFolder:
    """The same, one level down: two stores sharing one database, as two servers' do."""

    def test_a_credential_belongs_to_its_server(self, tmp_path):
        a = TokenStore(tmp_path / "agents.sqlite", "/mcp", server="A")
        b = TokenStore(tmp_path / "agents.sqlite", "/mcp", server="B")
        credential, token = a.mint("Bot", "alice", "read-only")
        assert a.lookup(token) is credential and b.lookup(token) is None
        assert not b.revoke(credential.id) and b.set_policy(credential.id, "full") is None
        assert [c.id for c in a.mine()] == [credential.id] and b.mine() == []
        assert TokenStore(tmp_path / "agents.sqlite", "/mcp", server="B").lookup(token) is None
        assert TokenStore(tmp_path / "agents.sqlite", "/mcp", server="A").lookup(token).id == credential.id

    def test_a_revocation_is_final_for_a_process_holding_an_older_picture(self, tmp_path):
        """Two processes of one server (same root and base_url): what one revokes, the other
        neither accepts nor brings back when it writes."""
        first = TokenStore(tmp_path / "agents.sqlite", "/mcp", server="A")
        second = TokenStore(tmp_path / "agents.sqlite", "/mcp", server="A")
        credential, token = first.mint("Bot", "alice", "full")
        assert second.lookup(token).id == credential.id
        assert first.revoke(credential.id)
        assert second.lookup(token) is None
        second.set_policy(credential.id, "ask")
        second.mint("Other", "alice", "ask")
        second.save()
        again = TokenStore(tmp_path / "agents.sqlite", "/mcp", server="A")
        assert again.lookup(token) is None and [c.name for c in again.mine()] == ["Other"]

    def test_registered_clients_are_kept_per_server_and_one_process_does_not_drop_anothers(self, tmp_path):
        first = TokenStore(tmp_path / "agents.sqlite", "/mcp", server="A")
        second = TokenStore(tmp_path / "agents.sqlite", "/mcp", server="A")
        first.clients["x"] = {"client_id": "x"}
        first.save()
        second.clients["y"] = {"client_id": "y"}
        second.save()
        assert TokenStore(tmp_path / "agents.sqlite", "/mcp", server="A").clients.keys() == {"x", "y"}
        assert TokenStore(tmp_path / "agents.sqlite", "/mcp", server="B").clients == {}
        del first.clients["x"]
        first.save()
        assert TokenStore(tmp_path / "agents.sqlite", "/mcp", server="A").clients.keys() == {"y"}

    def test_the_old_json_file_is_adopted_once_by_the_server_of_its_path(self, tmp_path, caplog):
        legacy = tmp_path / "agents.json"
        old = {
            "credentials": [
                {"id": "c1", "name": "Old", "user": "alice", "user_display": "Alice", "policy": "ask",
                 "client": "token", "client_id": None, "resource": "/mcp", "created": 1.0},
                {"id": "c2", "name": "Elsewhere", "user": "alice", "user_display": "Alice", "policy": "ask",
                 "client": "token", "client_id": None, "resource": "/other/mcp", "created": 2.0},
            ],
            "tokens": {
                "h1": {"credential": "c1", "kind": "token", "expires": None, "family": ""},
                "h2": {"credential": "c2", "kind": "token", "expires": None, "family": ""},
            },
            "used": {},
            "clients": {"client-1": {"client_id": "client-1", "redirect_uris": ["http://127.0.0.1/cb"]}},
        }  # fmt: skip
        legacy.write_text(json.dumps(old))
        with caplog.at_level("INFO"):
            a = TokenStore(tmp_path / "agents.sqlite", "/mcp", server="A", legacy=legacy)
        assert [c.name for c in a.mine()] == ["Old"] and a.clients.keys() == {"client-1"}
        assert "must sign in again" in caplog.text
        assert not legacy.exists() and (tmp_path / "agents.json.migrated").exists()
        b = TokenStore(tmp_path / "agents.sqlite", "/mcp", server="B", legacy=legacy)
        assert b.mine() == []


def test_an_unreadable_store_says_so_and_the_server_still_signs_agents_in(tmp_path, caplog):
    path = tmp_path / "agents.sqlite"
    path.write_bytes(b"not a database" * 100)
    with caplog.at_level("ERROR"):
        store = TokenStore(path, "/mcp", server="A")
    assert "Cannot open MCP agent credentials" in caplog.text and "until this server stops" in caplog.text
    credential, token = store.mint("Bot", "alice", "ask")
    assert store.lookup(token) is credential
    assert path.read_bytes() == b"not a database" * 100  # left for the person to look at
