"""``jupyter mcp``: a real ``jupyter server`` in a subprocess, found through its runtime file, as a user
would find it; every printed set-up is used to connect."""

from __future__ import annotations

import http.server
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator

import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from ..support.oauth_flow import Flow, person_logged_in
from ..support.server_process import REPO as HERE
from ..support.server_process import TOKEN, free_port, server_on_a_free_port


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """A server with a configured token and a base URL, its own runtime dir and log."""
    work = tmp_path_factory.mktemp("cli")
    for name in ("root", "config", "data", "runtime", "ipython"):
        (work / name).mkdir()
    # Added to the installed config (which a --ServerApp.jpserver_extensions flag would replace).
    (work / "config" / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_mcp_ext": True}}})
    )
    # This package's config files, beside jupytext's own, in one directory as pip lays them out.
    config_d = work / "config" / "jupyter_server_config.d"
    config_d.mkdir()
    (config_d / "jupytext.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"jupyterlab_jupytext": True}}})
    )
    for installed in (HERE / "jupyter-config" / "jupyter_server_config.d").glob("*.json"):
        (config_d / installed.name).write_text(installed.read_text())
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(work / "config"),
        "JUPYTER_DATA_DIR": str(work / "data"),
        "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
        "IPYTHONDIR": str(work / "ipython"),
        "JUPYTER_PREFER_ENV_PATH": "0",  # the config dir above outranks the env's, as on a user's machine
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    for key in [k for k in env if k.startswith("JUPYTERHUB_")]:
        del env[key]
    with server_on_a_free_port(
        lambda port: ["--ip=127.0.0.1", f"--port={port}", "--no-browser",
         "--allow-root", f"--ServerApp.root_dir={work / 'root'}", "--ServerApp.base_url=/base/",
         f"--IdentityProvider.token={TOKEN}", "--ServerApp.port_retries=0"],
        env=env, cwd=work, log_path=lambda _port: work / "server.log",
    ) as (_, port):  # fmt: skip
        yield {
            "port": port,
            "env": env,
            "log": work / "server.log",
            "url": f"http://127.0.0.1:{port}/base/mcp",
        }


def jupyter_mcp(server: dict, *args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jupyter_mcp_ext.cli", *args],
        env={**server["env"], **(env or {})}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


async def tool_names(url: str, headers: dict[str, str]) -> list[str]:
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60))
    async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        return [t.name for t in (await client.list_tools()).tools]


def test_the_log_gives_the_full_endpoint_after_the_servers_own_urls_and_no_token(server):
    lines = server["log"].read_text().splitlines()
    endpoint = next(i for i, line in enumerate(lines) if "MCP endpoint:" in line)
    running = next(i for i, line in enumerate(lines) if "is running at" in line)
    assert endpoint > running
    assert f"MCP endpoint: {server['url']} " in lines[endpoint]
    # Agents sign in or get a token of their own: the log never tells anyone to send the Jupyter token.
    assert "sign in" in lines[endpoint] and "jupyter mcp token create" in lines[endpoint]
    assert TOKEN not in lines[endpoint] and "Authorization: token" not in lines[endpoint]


def test_the_cli_starts_without_loading_jupyter_server():
    """``jupyter mcp`` finds servers by their runtime files: importing Jupyter Server's app instead
    costs seconds of CPU per command (jsonschema compiles an RFC 3987 grammar), the suite's biggest cost."""
    code = (
        "import sys, runpy; sys.argv = ['jupyter-mcp', '--help']\n"
        "try: runpy.run_module('jupyter_mcp_ext.cli', run_name='__main__')\n"
        "except SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('jupyter_server.serverapp', 'jupyter_mcp_ext.app'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


def test_jupyter_mcp_lists_the_running_servers_endpoints(server):
    listed = jupyter_mcp(server)
    assert listed.returncode == 0, listed.stderr
    assert server["url"] in listed.stdout and "sign in" in listed.stdout
    assert "jupyter mcp token create" in listed.stdout and TOKEN not in listed.stdout


async def test_the_claude_code_command_has_no_token_and_connects_after_sign_in(server):
    printed = jupyter_mcp(server, "config", "claude")
    assert printed.returncode == 0, printed.stderr
    argv = shlex.split(printed.stdout)
    assert argv == ["claude", "mcp", "add", "--transport", "http", "jupyter", server["url"]]
    assert TOKEN not in printed.stdout and "sign in" in printed.stderr  # no token on a command line
    # What Claude Code does with the URL alone: the OAuth flow, the person allowing it in Jupyter.
    async with httpx.AsyncClient(follow_redirects=False, timeout=30) as agent:
        flow = Flow(argv[6].removesuffix("mcp"), agent)
        refused = await agent.post(argv[6], json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401 and "resource_metadata" in refused.headers["WWW-Authenticate"]
        await flow.discover()
        client = await flow.register(client_name="Claude Code")
        async with person_logged_in(flow.server_url, TOKEN) as person:
            tokens = await flow.tokens(person, client)
    assert "list_notebooks" in await tool_names(
        argv[6], {"Authorization": f"Bearer {tokens['access_token']}"}
    )


@pytest.mark.parametrize("host", ["cursor", "vscode", "json", "codex"])
async def test_every_hosts_set_up_has_no_token_or_the_agent_token_given_and_connects(server, host):
    plain = jupyter_mcp(server, "config", host)
    assert plain.returncode == 0 and TOKEN not in plain.stdout and "Authorization" not in plain.stdout
    made = jupyter_mcp(server, "token", "create", "--name", f"{host} agent", "--policy", "full")
    agent_token = next(line for line in made.stdout.splitlines() if line.startswith("jmcp_"))
    printed = jupyter_mcp(server, "config", host, "--token", agent_token)
    assert printed.returncode == 0, printed.stderr
    text = "\n".join(line for line in printed.stdout.splitlines() if not line.startswith(("//", "#")))
    if host == "codex":
        entry = tomllib.loads(text)["mcp_servers"]["jupyter"]
        url, headers = entry["url"], entry["http_headers"]
    else:
        parsed = json.loads(text)
        entry = (parsed.get("servers") or parsed["mcpServers"])["jupyter"]
        url, headers = entry["url"], entry["headers"]
        assert host == "cursor" or entry["type"] == "http"
    assert url == server["url"]
    assert "list_notebooks" in await tool_names(url, headers)


def test_check_connects_lists_tools_and_runs_nothing(server):
    checked = jupyter_mcp(server, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("OK") and "tools" in checked.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--token", "wrong"], "not accepted"),
        (["--token", ""], "needs authorization"),
        (["--url", "http://127.0.0.1:{port}/elsewhere/mcp"], "extension is not loaded"),
        (["--url", "http://127.0.0.1:{free}/mcp"], "Cannot reach"),
    ],
    ids=["wrong-token", "no-token", "wrong-path", "no-server"],
)
def test_check_says_what_is_wrong(server, args, says):
    args = [a.format(port=server["port"], free=free_port()) for a in args]
    checked = jupyter_mcp(server, "check", *args)
    assert checked.returncode == 1
    assert checked.stdout.startswith("FAIL") and says in checked.stdout, checked.stdout


def test_under_jupyterhub_the_urls_carry_the_hubs_public_host_and_prefix(server):
    hub = {"JUPYTERHUB_SERVICE_PREFIX": "/base/", "JUPYTERHUB_PUBLIC_HUB_URL": "https://hub.example.org/"}
    printed = jupyter_mcp(server, "config", "json", env=hub)
    assert json.loads(printed.stdout)["mcpServers"]["jupyter"]["url"] == "https://hub.example.org/base/mcp"
    public = {
        "JUPYTERHUB_SERVICE_PREFIX": "/base/",
        "JUPYTERHUB_PUBLIC_URL": "https://hub.example.org/user/ann/",
    }
    printed = jupyter_mcp(server, "config", "json", env=public)
    assert (
        json.loads(printed.stdout)["mcpServers"]["jupyter"]["url"] == "https://hub.example.org/user/ann/mcp"
    )


def test_the_server_answers_the_printed_url_over_plain_http(server):
    request = urllib.request.Request(server["url"], method="POST", data=b"{}")
    request.add_header("Authorization", f"token {TOKEN}")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    try:
        urllib.request.urlopen(request, timeout=10)
        status = 200
    except urllib.error.HTTPError as err:
        status = err.code
    assert status in (200, 400)  # the MCP endpoint, not a 404
    assert re.match(r"http://127\.0\.0\.1:\d+/base/mcp$", server["url"])


def test_jupytexts_server_extension_leaves_the_contents_manager_alone(server):
    log = server["log"].read_text()
    assert "jupyter_mcp_ext | extension was successfully loaded" in log
    assert "Jupytext Server Extension" not in log  # it would derive its own contents manager


@pytest.fixture
def listener() -> Iterator[dict]:
    """Another server on loopback that records the Authorization header of each request it gets."""
    seen: list[tuple[str, str | None]] = []

    class Record(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append((self.path, self.headers.get("Authorization")))
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Record)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield {"base": f"http://127.0.0.1:{httpd.server_address[1]}", "seen": seen}
    finally:
        httpd.shutdown()
        httpd.server_close()


def hub_env(listener: dict) -> dict[str, str]:
    """A JupyterHub single-user server's environment (its terminals get the same), served at the listener."""
    return {
        "JUPYTERHUB_API_TOKEN": "hub-token-9c1",
        "JUPYTERHUB_SERVICE_PREFIX": "/user/ann/",
        "JUPYTERHUB_SERVICE_URL": f"{listener['base']}/user/ann/",
    }


def test_the_hubs_token_goes_to_no_other_server(server, listener):
    other = f"{listener['base']}/user/eve/mcp"
    checked = jupyter_mcp(server, "check", "--url", other, env=hub_env(listener))
    assert listener["seen"] == [("/user/eve/mcp", None)]  # not the Hub's token
    assert checked.returncode == 1 and "No token is sent to" in checked.stderr
    printed = jupyter_mcp(server, "config", "json", "--url", other, env=hub_env(listener))
    assert "hub-token-9c1" not in printed.stdout
    assert json.loads(printed.stdout)["mcpServers"]["jupyter"]["headers"] == {}
    assert "No token is sent to" in printed.stderr


def test_the_hubs_token_goes_to_this_hub_servers_own_url_and_a_given_token_anywhere(server, listener):
    jupyter_mcp(server, "check", "--url", f"{listener['base']}/user/ann/mcp", env=hub_env(listener))
    jupyter_mcp(server, "check", "--url", f"{listener['base']}/elsewhere/mcp", "--token", "given")
    assert listener["seen"] == [("/user/ann/mcp", "token hub-token-9c1"), ("/elsewhere/mcp", "token given")]


async def test_token_create_list_revoke_through_the_running_server(server):
    made = jupyter_mcp(server, "token", "create", "--name", "Nightly report", "--policy", "read-only")
    assert made.returncode == 0, made.stderr
    token = next(line for line in made.stdout.splitlines() if line.startswith("jmcp_"))
    assert "shown this once" in made.stdout and "Bearer" in made.stdout
    names = await tool_names(server["url"], {"Authorization": f"Bearer {token}"})
    assert "get_notebook" in names
    listed = jupyter_mcp(server, "token", "list")
    assert "'Nightly report'" in listed.stdout and "read-only" in listed.stdout and token not in listed.stdout
    agent_id = next(line for line in listed.stdout.splitlines() if "'Nightly report'" in line).split()[0]
    revoked = jupyter_mcp(server, "token", "revoke", agent_id)
    assert revoked.returncode == 0 and f"Revoked {agent_id}" in revoked.stdout
    request = urllib.request.Request(server["url"], method="POST", data=b"{}")
    request.add_header("Authorization", f"Bearer {token}")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=15)
    assert refused.value.code == 401
    assert "'Nightly report'" not in jupyter_mcp(server, "token", "list").stdout
    wrong = jupyter_mcp(server, "token", "create", "--name", "x", "--token", "wrong")
    assert wrong.returncode != 0 and "403" in wrong.stderr
