"""A real JupyterHub on loopback for tests: DummyAuthenticator, SimpleLocalProcessSpawner and the npm
``configurable-http-proxy``, spawning single-user servers that load this worktree's extension.

The Hub is configured as the README's JupyterHub section says (custom scopes, the user role, the
authorizer), so the tests check what an admin following it gets. One ``Hub`` serves a test module.
"""

from __future__ import annotations

import contextlib
import html
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from jupyter_mcp_ext.auth.hub_discovery import hub_config

from ..support.server_main import PREFIX

ROOT = Path(__file__).resolve().parents[2]
PROXY_PREFIX = ROOT / ".ci" / ".proxy"  # git-ignored; .ci/run installs it, or find_proxy() does
PROXY_PACKAGE = "configurable-http-proxy@5"
AUTHORIZER = "jupyter_mcp_ext.auth.hub_authorizer.ScopedHubAuthorizer"

# The README's Hub configuration, verbatim in spirit: scopes, who gets them, what the browser may ask.
CUSTOM_SCOPES = {
    "custom:jupyter_server:read:*": {"description": "Read files and state on a server."},
    "custom:jupyter_server:write:*": {
        "description": "Change files on a server; not run code.",
        "subscopes": ["custom:jupyter_server:read:*"],
    },
    "custom:jupyter_server:execute:*": {
        "description": "Run code on a server.",
        "subscopes": ["custom:jupyter_server:write:*", "custom:jupyter_server:read:*"],
    },
}
USER_ROLE = {
    "name": "user",
    "scopes": ["self", "custom:jupyter_server:execute:*!user", "shares!user", "read:users:name"],
}

COLLABORATOR_SCOPES = [f"{scope}!user=alice" for scope in ("access:servers", *list(CUSTOM_SCOPES)[:2])]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def find_proxy() -> tuple[str | None, str]:
    """The proxy's command, installing it from npm once if needed; else None and why."""
    local = PROXY_PREFIX / "node_modules" / ".bin" / "configurable-http-proxy"
    if local.exists():
        return str(local), ""
    if shutil.which("configurable-http-proxy"):
        return shutil.which("configurable-http-proxy"), ""
    if not shutil.which("npm") or not shutil.which("node"):
        return None, "node/npm not found: cannot install configurable-http-proxy for the Hub tests"
    done = subprocess.run(
        ["npm", "install", "--prefix", str(PROXY_PREFIX), "--no-audit", "--fetch-retries=1", PROXY_PACKAGE],
        capture_output=True,
        text=True,
        timeout=180,
    )
    if done.returncode != 0 or not local.exists():
        return None, f"npm could not install {PROXY_PACKAGE}: {done.stderr.strip()[-500:]}"
    return str(local), ""


class Hub:
    """A running JupyterHub: ``url`` is the public proxy address; ``api(...)`` calls its REST API.

    ``discovery``: the README's Hub recipe for agent hosts' sign-in, the service that answers OAuth
    discovery at the host root (``jupyter_mcp_ext.auth.hub_discovery``) and its proxy route.
    ``agent_recheck_seconds``: how long a server trusts the Hub's answer about an agent's person
    (``HubAgentRights.recheck_seconds``); None leaves the default. ``roles`` and ``groups``: more
    of the Hub's roles and groups (``load_roles``, ``load_groups``), for a test's collaborators.
    ``server_args``: more command-line options for every single-user server (e.g.
    ``--MCPExtensionApp.access_token_lifetime=5``).
    """

    def __init__(
        self,
        workdir: Path,
        proxy: str,
        *,
        discovery: bool = False,
        agent_recheck_seconds: float | None = None,
        roles: Sequence[dict[str, Any]] = (),
        groups: dict[str, dict[str, Any]] | None = None,
        server_args: Sequence[str] = (),
    ) -> None:
        self.workdir = workdir
        self.proxy = proxy
        self.discovery = discovery
        self.agent_recheck_seconds = agent_recheck_seconds
        self.roles, self.groups = list(roles), groups or {}
        self.server_args = list(server_args)
        self.admin_token = secrets.token_hex(16)
        self.log_path = workdir / "hub.log"
        self._choose_ports()
        self.process: subprocess.Popen[bytes] | None = None
        self.pids: dict[str, int] = {}  # spawned servers, in case the Hub leaves one behind

    def _choose_ports(self) -> None:
        """Free ports for the proxy, the Hub and the proxy's API (chosen again if one was taken before
        the Hub bound it: other test processes start servers meanwhile), and the config naming them."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._write_config(self.proxy)

    def _write_config(self, proxy: str) -> None:
        server_config = self.workdir / "jupyter_server_config.py"
        state = self.workdir / "state"
        server_config.write_text(
            textwrap.dedent(
                f"""
                import os
                state = os.path.join({str(state)!r}, os.environ["JUPYTERHUB_USER"])
                os.makedirs(state, exist_ok=True)
                c.SQLiteYStore.db_path = os.path.join(state, "ystore.db")
                c.BaseFileIdManager.db_path = os.path.join(state, "file_id.db")
                c.YDocExtension.session_store_path = os.path.join(state, "sessions.json")
                c.YDocExtension.document_save_delay = 0.5
                c.YDocExtension.file_poll_interval = 0.5
                """
            )
        )
        # The README's one line that enables the scopes, as a Hub admin writes it.
        args = [f"--ServerApp.authorizer_class={AUTHORIZER}", f"--config={server_config}"]
        if os.geteuid() == 0:
            args.append("--allow-root")
        if self.agent_recheck_seconds is not None:
            args.append(f"--HubAgentRights.recheck_seconds={self.agent_recheck_seconds}")
        args += self.server_args
        config = {
            "JupyterHub.ip": "127.0.0.1",
            "JupyterHub.port": self.port,
            "JupyterHub.hub_ip": "127.0.0.1",
            "JupyterHub.hub_port": free_port(),
            "JupyterHub.db_url": f"sqlite:///{self.workdir / 'hub.sqlite'}",
            "JupyterHub.cookie_secret_file": str(self.workdir / "cookie_secret"),
            "JupyterHub.authenticator_class": "dummy",
            "JupyterHub.spawner_class": "simple",
            "JupyterHub.custom_scopes": CUSTOM_SCOPES,
            "JupyterHub.services": [{"name": "tests", "api_token": self.admin_token}],
            "JupyterHub.load_roles": [
                USER_ROLE,
                {
                    "name": "tests",
                    "scopes": ["admin:users", "admin:servers", "tokens", "groups"],
                    "services": ["tests"],
                },
                # A collaborator by role (not by share): the Hub passes roles, not shares, to browser sessions.
                {"name": "alice-collaborators", "scopes": COLLABORATOR_SCOPES, "users": ["dave"]},
                *self.roles,
            ],
            "JupyterHub.load_groups": self.groups,
            "Authenticator.allow_all": True,
            "ConfigurableHTTPProxy.api_url": f"http://127.0.0.1:{free_port()}",
            "ConfigurableHTTPProxy.command": [proxy],
            # Through tests/support/server_main.py, which defers a grammar jsonschema compiles at import.
            "Spawner.cmd": [*PREFIX, "jupyterhub.singleuser"],
            "Spawner.args": args,
            "Spawner.oauth_client_allowed_scopes": ["custom:jupyter_server:execute:*!server"],
            # The spawned servers import this worktree's package, whatever is installed.
            "Spawner.environment": {
                "PYTHONPATH": str(ROOT),
                "JUPYTERHUB_SINGLEUSER_EXTENSION": "1",
                "JUPYTERHUB_ACTIVITY_INTERVAL": "1",  # report activity to the Hub every second
            },
            "Spawner.start_timeout": 120,
            # A stopped single-user server can hang at exit on a non-daemon thread: escalate quickly.
            "LocalProcessSpawner.interrupt_timeout": 3,
            "LocalProcessSpawner.term_timeout": 2,
            "Spawner.http_timeout": 120,
            "SimpleLocalProcessSpawner.home_dir_template": str(self.workdir / "home" / "{username}"),
        }
        if self.discovery:
            recipe = hub_config(free_port())
            for service in recipe["JupyterHub.services"]:
                service["environment"] = {"PYTHONPATH": str(ROOT)}
            config["JupyterHub.services"] += recipe["JupyterHub.services"]
            config["Proxy.extra_routes"] = recipe["Proxy.extra_routes"]
        lines = ["c = get_config()  # noqa"]
        for key, value in config.items():
            lines.append(f"c.{key} = {value!r}")
        (self.workdir / "jupyterhub_config.py").write_text("\n".join(lines) + "\n")

    def env(self) -> dict[str, str]:
        """The Hub's environment: this checkout importable (tests/support/server_main.py starts its processes)."""
        return {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }

    def home(self, user: str) -> Path:
        return self.workdir / "home" / user

    # -- life ------------------------------------------------------------------------------

    def start(self, timeout: float = 90, tries: int = 3) -> None:
        """Start the Hub and wait until it answers; on ports other processes took first, again on
        other ones (up to ``tries`` times)."""
        for attempt in range(1, tries + 1):
            try:
                return self._start(timeout)
            except RuntimeError:
                if attempt == tries or not self.port_taken():
                    raise
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)  # the proxy, if it outlived the Hub
                self._choose_ports()

    def _start(self, timeout: float) -> None:
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [*PREFIX, "jupyterhub", "-f", str(self.workdir / "jupyterhub_config.py")],
            cwd=self.workdir,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its proxy and user servers go in one group, stopped together
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterHub exited ({self.process.returncode}):\n{self.log_tail()}")
            if self.port_taken():  # the proxy may live on without its public port
                raise RuntimeError(f"A port of the Hub's was taken:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/hub/api/", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise TimeoutError(f"JupyterHub did not answer in {timeout} s:\n{self.log_tail()}")

    def stop(self) -> None:
        """Stop each spawned server through the API, then the Hub (SIGTERM; its group killed if
        stuck), then kill any server process the Hub left behind."""
        if self.process is None or self.process.poll() is not None:
            return
        for name in list(self.pids):
            with contextlib.suppress(httpx.HTTPError):
                self.api("DELETE", f"users/{name}/server", timeout=20)
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        for pid in [self.process.pid, *self.pids.values()]:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)  # each spawned server leads a session of its own

    def port_taken(self) -> bool:
        log = self.log_tail(400).lower()
        return "address already in use" in log or "eaddrinuse" in log

    def log_tail(self, lines: int = 60) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    # -- REST API --------------------------------------------------------------------------

    def api(self, method: str, path: str, token: str | None = None, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"token {token or self.admin_token}"}
        kwargs.setdefault("timeout", 30)
        return httpx.request(method, f"{self.url}/hub/api/{path}", headers=headers, **kwargs)

    def add_user(self, name: str) -> None:
        response = self.api("POST", f"users/{name}")
        assert response.status_code in (201, 409), response.text

    def start_server(self, name: str, timeout: float = 120) -> str:
        """Spawn the user's default server and wait until it is ready; returns its public URL."""
        response = self.api("POST", f"users/{name}/server")
        assert response.status_code in (201, 202, 400), response.text  # 400: already running
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            server = self.api("GET", f"users/{name}").json()["servers"].get("")
            if server and server.get("ready"):
                self.pids[name] = server["state"]["pid"]
                url = f"{self.url}/user/{name}/"
                self._until_routed(url, deadline)
                return url
            time.sleep(0.5)
        raise TimeoutError(f"{name}'s server did not start in {timeout} s:\n{self.log_tail()}")

    def browser(self, user: str, server_url: str) -> httpx.Client:
        """A browser's session on a server: log in to the Hub, open JupyterLab, consent to the OAuth
        request the server makes (the Hub asks when the server is not one's own)."""
        browser = httpx.Client(follow_redirects=True, timeout=30)
        browser.get(f"{self.url}/hub/login")
        form = {"username": user, "password": "any", "_xsrf": browser.cookies["_xsrf"]}
        assert (
            browser.post(f"{self.url}/hub/login", params={"next": "/hub/home"}, data=form).status_code == 200
        )
        page = browser.get(f"{server_url}lab")
        if "/oauth2/authorize" in str(page.url):
            fields: dict[str, list[str]] = {}
            for name, value in re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page.text):
                fields.setdefault(name, []).append(html.unescape(value))
            page = browser.post(page.url, data=fields)
        assert page.status_code == 200 and str(page.url).startswith(f"{server_url}lab"), (
            page.url,
            page.text[:500],
        )
        return browser

    def _until_routed(self, url: str, deadline: float) -> None:
        """Until the proxy sends ``url`` to the server itself: its unauthenticated ``api`` answers."""
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                response = httpx.get(f"{url}api", timeout=5, follow_redirects=False)
                if response.status_code == 200 and "version" in response.json():
                    return
            time.sleep(0.3)
        raise TimeoutError(f"the proxy never routed {url}:\n{self.log_tail()}")

    def token_from_command_line(self, user: str) -> str:
        """What ``jupyterhub token <user>`` prints on the Hub's machine (its config, its database)."""
        done = subprocess.run(
            [*PREFIX, "jupyterhub", "token", "-f", str(self.workdir / "jupyterhub_config.py"), user],
            cwd=self.workdir,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip().splitlines()[-1]

    def token(self, user: str, scopes: Sequence[str] = ("inherit",), note: str = "agent") -> str:
        """An API token for ``user`` as ``POST /hub/api/users/<user>/tokens`` mints it."""
        response = self.api("POST", f"users/{user}/tokens", json={"scopes": list(scopes), "note": note})
        assert response.status_code == 201, response.text
        return response.json()["token"]
