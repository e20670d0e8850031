"""Agent credentials as a property over random interleavings (hypothesis), on two servers of one
person sharing one data folder: each an ``AgentAuthorizationServer`` over a ``TokenStore`` on the same
database, as ``jupyter lab`` in two root folders builds them.

Steps: the person mints a token in the panel; an agent signs in (registration, authorize, the
person's Allow as the consent page grants it, the code exchange, each naming its ``resource``); it
refreshes (sometimes naming the other server's MCP URL), reuses a spent refresh token, revokes a token
(RFC 7009); the person revokes an agent or changes its policy; a server restarts, its old process
still writing with what it held. After every step:

- a token works at the server that issued it and nowhere else, while its credential and grant live;
- a revoked credential, a retired access token or a spent refresh token is never accepted again, by
  a restarted server or by a process holding an older picture;
- a grant holds at most one access and one refresh token however often it refreshes.

``PROPSUITE_EXAMPLES`` runs more interleavings than CI's.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from mcp.server.auth.provider import AuthorizationParams, AuthorizeError, TokenError
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from jupyter_mcp_ext.auth import resource
from jupyter_mcp_ext.auth.provider import AgentAuthorizationServer
from jupyter_mcp_ext.auth.tokens import MAX_GRANTS, TokenStore

from . import figures

EXAMPLES = int(os.environ.get("PROPSUITE_EXAMPLES", "30"))
STEPS = 25
SERVERS = ("a", "b")
URLS = {"a": "http://127.0.0.1:8888/mcp", "b": "http://127.0.0.1:8889/mcp"}  # one base_url, two roots
REDIRECT = "http://127.0.0.1:33418/callback"
POLICIES = ("full", "ask", "read-only")


@dataclass
class Token:
    value: str
    server: str
    credential: str
    kind: str  # "token", "access", "refresh"
    grant: str = ""  # the sign-in it belongs to ("" for a minted token)
    live: bool = True


@dataclass
class Model:
    """What a person would expect: which tokens work, and where."""

    tokens: list[Token] = field(default_factory=list)
    revoked: set[str] = field(default_factory=set)  # credential ids

    def end(self, pred: Any) -> None:
        for t in self.tokens:
            if pred(t):
                t.live = False


class Credentials(RuleBasedStateMachine):
    folder: ClassVar[Path]
    stats: ClassVar[dict[str, int]] = {"interleavings": 0, "steps": 0}

    @initialize()
    def start(self) -> None:
        Credentials.stats["interleavings"] += 1
        self.loop = asyncio.new_event_loop()
        self.path = self.folder / f"agents-{Credentials.stats['interleavings']}.sqlite"
        self.servers = {s: self._start(s) for s in SERVERS}
        self.stale: list[tuple[str, AgentAuthorizationServer]] = []  # old processes, still writing
        self.model = Model()
        self.clients = 0

    def teardown(self) -> None:
        for server in [*self.servers.values(), *(p for _, p in self.stale)]:
            server.store.close()
        self.loop.close()

    def _start(self, name: str) -> AgentAuthorizationServer:
        store = TokenStore(self.path, "/mcp", server=name)
        return AgentAuthorizationServer(store, "/oauth/consent")

    def _at(self, name: str, named: str | None, call: Any) -> Any:
        """``call`` (a coroutine function of the provider) as an OAuth request to ``name`` runs it."""

        async def request() -> Any:
            resource.begin(URLS[name], named)
            return await call(self.servers[name])

        return self.loop.run_until_complete(request())

    # -- the person ------------------------------------------------------------------------

    @rule(server=st.sampled_from(SERVERS), policy=st.sampled_from(POLICIES))
    def person_mints(self, server: str, policy: str) -> None:
        credential, value = self.servers[server].store.mint("Script", "alice", policy)
        self.model.tokens.append(Token(value, server, credential.id, "token"))

    @rule(data=st.data())
    def agent_signs_in(self, data: st.DataObject) -> None:
        server = data.draw(st.sampled_from(SERVERS))
        again = self.clients and data.draw(st.booleans())  # the same client asks again
        client_id = f"client-{self.clients if again else self.clients + 1}"
        self.clients += 0 if again else 1
        named = data.draw(st.sampled_from([URLS[server], URLS[server] + "/", None, URLS[other(server)]]))
        client = OAuthClientInformationFull(
            client_id=client_id,
            client_name="Agent",
            redirect_uris=[AnyUrl(REDIRECT)],
            token_endpoint_auth_method="none",
        )
        provider = self.servers[server]

        async def sign_in(p: AgentAuthorizationServer) -> Any:
            p.store.clients.setdefault(client_id, client.model_dump(mode="json", exclude_none=True))
            params = AuthorizationParams(
                state="s",
                scopes=[],
                code_challenge="c" * 43,
                redirect_uri=AnyUrl(REDIRECT),
                redirect_uri_provided_explicitly=True,
                resource=named,
            )
            try:
                page = await p.authorize(client, params)
            except AuthorizeError as e:
                assert e.error == "invalid_target" and URLS[server] in (e.error_description or "")
                return None
            consent = p.take_consent(page.split("request=")[1])
            assert consent is not None
            answer = p.grant(consent, "alice", "Alice", data.draw(st.sampled_from(POLICIES)), [])
            code = answer.split("code=")[1].split("&")[0]
            loaded = await p.load_authorization_code(client, code)
            assert loaded is not None
            return await p.exchange_authorization_code(client, loaded)

        got = self._at(server, named, sign_in)
        if named == URLS[other(server)]:
            assert got is None, "authorize accepted another server's MCP URL"
            return
        credential = provider.store.lookup(got.access_token, ("access",))
        assert credential is not None
        grant = provider.store.family_of(got.access_token)
        for kind, value in (("access", got.access_token), ("refresh", got.refresh_token)):
            self.model.tokens.append(Token(value, server, credential.id, kind, grant))
        grants = list(
            dict.fromkeys(
                t.grant
                for t in reversed(self.model.tokens)
                if t.live and t.credential == credential.id and t.grant
            )
        )
        for retired in grants[MAX_GRANTS:]:  # past the bound, the grants refreshed longest ago end
            self.model.end(lambda t, g=retired: t.grant == g)

    @rule(data=st.data())
    def person_revokes_an_agent(self, data: st.DataObject) -> None:
        live = list(  # in the order they came (ids are random: sorting them would draw differently)
            dict.fromkeys(
                (t.server, t.credential) for t in self.model.tokens if t.credential not in self.model.revoked
            )
        )
        if not live:
            return
        server, credential = data.draw(st.sampled_from(live))
        other_said = self.servers[other(server)].store.revoke(credential)
        assert not other_said, "a server revoked another server's agent"
        assert self.servers[server].store.revoke(credential)
        self.model.revoked.add(credential)
        self.model.end(lambda t: t.credential == credential)

    @rule(data=st.data(), policy=st.sampled_from(POLICIES))
    def person_changes_a_policy(self, data: st.DataObject, policy: str) -> None:
        if not self.model.tokens:
            return
        token = data.draw(st.sampled_from(self.model.tokens))
        store = data.draw(
            st.sampled_from([self.servers[token.server].store, *(p.store for _, p in self.stale)])
        )
        store.set_policy(token.credential, policy)  # a stale process's write must not bring it back

    # -- the agent ---------------------------------------------------------------------------

    @rule(data=st.data())
    def agent_refreshes(self, data: st.DataObject) -> None:
        refresh = [t for t in self.model.tokens if t.kind == "refresh" and t.live]
        if not refresh:
            return
        token = data.draw(st.sampled_from(refresh))
        named = data.draw(st.sampled_from([URLS[token.server], None, URLS[other(token.server)]]))
        client = OAuthClientInformationFull(client_id="x", redirect_uris=[AnyUrl(REDIRECT)])

        async def refresh_it(p: AgentAuthorizationServer) -> Any:
            loaded = await p.load_refresh_token(client, token.value)
            assert loaded is not None, "a live refresh token was refused"
            try:
                return await p.exchange_refresh_token(client, loaded, [])
            except TokenError as e:
                assert e.error == "invalid_target" and named == URLS[other(token.server)]
                return None

        client.client_id = self.servers[token.server].store.lookup(token.value, ("refresh",)).client_id
        got = self._at(token.server, named, refresh_it)
        if got is None:
            return  # refused for its resource: nothing was spent
        self.model.end(lambda t: t.grant == token.grant and t.server == token.server)
        for kind, value in (("access", got.access_token), ("refresh", got.refresh_token)):
            self.model.tokens.append(Token(value, token.server, token.credential, kind, token.grant))

    @rule(data=st.data())
    def agent_reuses_a_spent_refresh_token(self, data: st.DataObject) -> None:
        spent = [t for t in self.model.tokens if t.kind == "refresh" and not t.live]
        if not spent:
            return
        token = data.draw(st.sampled_from(spent))
        assert self.servers[token.server].store.rotate(token.value) is None
        if token.credential not in self.model.revoked:  # a copy in other hands: its grant ends
            self.model.end(lambda t: t.grant == token.grant and t.server == token.server)

    @rule(data=st.data())
    def agent_revokes_a_token(self, data: st.DataObject) -> None:
        oauth = [t for t in self.model.tokens if t.kind in ("access", "refresh")]
        if not oauth:
            return
        token = data.draw(st.sampled_from(oauth))
        self.servers[token.server].store.revoke_token(token.value)
        if token.kind == "refresh" and token.live:
            self.model.end(lambda t: t.grant == token.grant and t.server == token.server)
        token.live = False

    # -- the servers -------------------------------------------------------------------------

    @precondition(lambda self: len(self.stale) < 4)
    @rule(server=st.sampled_from(SERVERS))
    def server_restarts(self, server: str) -> None:
        self.stale.append((server, self.servers[server]))
        self.servers[server] = self._start(server)

    @rule(data=st.data())
    def an_old_process_writes(self, data: st.DataObject) -> None:
        if not self.stale:
            return
        server, old = data.draw(st.sampled_from(self.stale))
        credential, value = old.store.mint("From the old process", "alice", "ask")
        old.store.save()
        self.model.tokens.append(Token(value, server, credential.id, "token"))

    # -- what must hold ----------------------------------------------------------------------

    @invariant()
    def tokens_work_where_issued_while_live_and_nowhere_else(self) -> None:
        if not hasattr(self, "model"):
            return
        Credentials.stats["steps"] += 1
        for t in self.model.tokens:
            kinds = ("refresh",) if t.kind == "refresh" else ("token", "access")
            here = self.servers[t.server].store.lookup(t.value, kinds)
            assert (here is not None) == t.live, (
                f"{t.kind} token of {t.credential}: live={t.live}, found={here}"
            )
            assert self.servers[other(t.server)].store.lookup(t.value, kinds) is None, "accepted elsewhere"
            for name, stale in self.stale:
                found = stale.store.lookup(t.value, kinds)
                assert found is None or (name == t.server and t.live), "a stale process accepted a dead token"

    @invariant()
    def a_grant_holds_two_tokens_at_most(self) -> None:
        if not hasattr(self, "model"):
            return
        db = self.servers["a"].store._db
        worst = db.execute(
            "SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM tokens WHERE family != '' GROUP BY family)"
        ).fetchone()[0]
        assert worst <= 2, f"a grant holds {worst} tokens"

    @invariant()
    def revoked_agents_are_listed_nowhere(self) -> None:
        if not hasattr(self, "model"):
            return
        for server in self.servers.values():
            assert not {c.id for c in server.store.mine()} & self.model.revoked


def other(server: str) -> str:
    return "b" if server == "a" else "a"


def test_credentials_hold_across_two_servers_on_one_data_folder(tmp_path):
    Credentials.folder = tmp_path
    run_state_machine_as_test(
        Credentials,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
            print_blob=True,
        ),
    )
    figures.count("credential interleavings tried", Credentials.stats["interleavings"])
    figures.count("credential steps checked", Credentials.stats["steps"])
