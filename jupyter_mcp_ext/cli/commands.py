"""``jupyter mcp``: find the running servers' MCP endpoints, print a set-up for an agent host, check one.

jupyter mcp                              list the endpoints of running servers (their runtime files)
jupyter mcp config claude|codex|cursor|vscode|json [--url URL] [--token T] [--name N]
jupyter mcp check [--url URL] [--token T]   connect, list the tools, run nothing
jupyter mcp token create --name N --policy read-only|ask|full | list | revoke ID

A token goes only to the server that issued it: a running server's token (its runtime file) to that
server's URL, JupyterHub's ``JUPYTERHUB_API_TOKEN`` to this single-user server's own URL. Any other
``--url`` gets no token unless ``--token`` is given. A set-up printed by ``config`` carries no token
unless ``--token`` gives an agent token, and Claude Code's never does: it would be on a command line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from . import host_setups, tokens
from .endpoint import PATH, hub_endpoint, info_near, join, panel_info, server_endpoint

HOSTS = host_setups.HOSTS
SIGN_IN = (
    "The host asks you to sign in on first use (OAuth: you allow it in JupyterLab; Codex: `codex mcp login "
    "jupyter`). A host or script that can only send a header: `jupyter mcp token create --name <agent>`, "
    "then pass --token <that token>."
)


@dataclass
class Target:
    url: str
    token: str


def running_servers() -> list[dict[str, Any]]:
    """The servers ``jupyter server list`` shows, newest first.

    Read from their runtime files as ``jupyter_server.serverapp.list_running_servers`` does, without
    importing it: that module costs seconds of CPU per command (see the package's docstring).
    """
    from jupyter_core.paths import jupyter_runtime_dir
    from jupyter_server.utils import check_pid

    servers = []
    for file in Path(jupyter_runtime_dir()).glob("jpserver-*.json"):
        try:
            info = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # gone, or being written
            continue
        if isinstance(info, dict) and isinstance(info.get("pid"), int) and check_pid(info["pid"]):
            servers.append(info)
    return sorted(servers, key=lambda s: s.get("pid", 0), reverse=True)


def _hub_token() -> str:
    return os.environ.get("JUPYTERHUB_API_TOKEN", "")


def _under(url: str, base: str) -> bool:
    """Whether ``url`` is on the server at ``base``: scheme and host exact, its path under the base's."""
    u, b = urlsplit(url), urlsplit(base)
    same_host = (u.scheme.lower(), u.netloc.lower()) == (b.scheme.lower(), b.netloc.lower())
    return same_host and (u.path.rstrip("/") + "/").startswith(b.path.rstrip("/") + "/")


def hub_own_bases(env: Mapping[str, str] | None = None) -> list[str]:
    """The base URLs of this JupyterHub single-user server: the only ones the Hub's token goes to.

    The Hub gives a single-user server (and so its terminals) ``JUPYTERHUB_SERVICE_PREFIX``, its
    internal ``JUPYTERHUB_SERVICE_URL``, and, where configured, ``JUPYTERHUB_PUBLIC_URL``,
    ``JUPYTERHUB_PUBLIC_HUB_URL`` or ``JUPYTERHUB_HOST`` (subdomains): the public host.
    """
    env = os.environ if env is None else env
    prefix = env.get("JUPYTERHUB_SERVICE_PREFIX")
    if not prefix:
        return []
    urls = [hub_endpoint(prefix, env, path="")]
    if service := env.get("JUPYTERHUB_SERVICE_URL"):
        urls.append(join(service, ""))
    if host := env.get("JUPYTERHUB_HOST"):
        urls.append(join(host.rstrip("/") + "/" + prefix.lstrip("/"), ""))
    return [u for u in urls if u]


def _token_for(url: str, servers: list[dict[str, Any]]) -> str:
    """The token that server issued, if ``url`` is on a running server or on this Hub server.

    Any path under the server's base URL counts, so an endpoint moved by ``MCPExtensionApp.path``
    (or its panel API) gets the token too.
    """
    for server in servers:
        bases = {server["url"], server_endpoint(server, path="")}
        if server.get("token") and any(_under(url, base) for base in bases):
            return server["token"]
    if _hub_token() and any(_under(url, base) for base in hub_own_bases()):
        return _hub_token()
    return ""


def endpoint_of(server: dict[str, Any]) -> str:
    """A running server's endpoint, at the path its panel API reports (``MCPExtensionApp.path``)."""
    info = panel_info(server["url"], _token_for(server["url"], [server]))
    return server_endpoint(server, path=info["path"] if info else PATH)


def pick(url: str | None, token: str | None) -> Target:
    """The endpoint to set up or check: ``--url``, else the newest running server; and its token.

    A token goes only to the server that issued it (module docstring); an explicit ``--token`` goes
    where it is told.
    """
    servers = running_servers()
    if url:
        if token is not None:
            return Target(url, token)
        found = _token_for(url, servers)
        if not found:
            print(
                f"No token is sent to {url}: it is not the URL of a running Jupyter server here nor of this "
                "JupyterHub server; pass --token to send one.",
                file=sys.stderr,
            )
        return Target(url, found)
    if not servers:
        raise SystemExit(
            "No running Jupyter server found (none in `jupyter --runtime-dir`). Start one with "
            "`jupyter lab` (as root: `jupyter lab --allow-root`), or pass --url."
        )
    if len(servers) > 1:
        print(f"{len(servers)} servers are running; using the newest. Pass --url to choose.", file=sys.stderr)
    endpoint = endpoint_of(servers[0])
    return Target(endpoint, token if token is not None else _token_for(endpoint, servers[:1]))


def config_text(host: str, target: Target, name: str = "jupyter") -> str:
    """A set-up for ``host``, ready to paste (the panel's Connect section shows the same)."""
    return host_setups.config_text(host, target.url, target.token, name)


class _Refuse(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the token would follow a redirect to another host: answer with the 3xx instead


_NO_REDIRECTS = urllib.request.build_opener(_Refuse)


def _probe(target: Target) -> str | None:
    """What stops a client at the HTTP level, in words; None if the endpoint answers MCP."""
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "ping"}).encode()
    request = urllib.request.Request(target.url, data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    if target.token:
        request.add_header("Authorization", f"token {target.token}")
    try:
        with _NO_REDIRECTS.open(request, timeout=15):
            return None
    except urllib.error.HTTPError as err:
        if err.code == 400:  # a ping outside a session: the endpoint is there and speaks MCP
            return None
        text = err.read().decode("utf-8", "replace")
        try:
            message = json.loads(text)["error"]["message"]
        except (ValueError, KeyError, TypeError):  # not our JSON-RPC error: some other page
            return (
                f"{target.url} answered HTTP {err.code} with no MCP error: the jupyter_mcp_ext extension is not "
                "loaded there, or the path is wrong. `jupyter server extension list` should show it enabled; "
                "`jupyter mcp` prints the right URL."
            )
        return f"{target.url} answered HTTP {err.code}: {message}"
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        return (
            f"Cannot reach {target.url} ({reason}). Is the server running? `jupyter mcp` lists running ones."
        )


async def _handshake(target: Target) -> list[str]:
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"token {target.token}"} if target.token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60))
    async with http, Client(streamable_http_client(target.url, http_client=http), mode="legacy") as client:
        return [tool.name for tool in (await client.list_tools()).tools]


def check(target: Target) -> int:
    # Another extension on our path: it may be what answers, so a passing handshake would prove nothing.
    info = info_near(target.url, target.token) or {}
    conflicts = info.get("conflicts", [])
    for conflict in conflicts:
        print(f"{'FAIL' if conflict['answers'] else 'WARN'} {conflict['message']}")
    for notice in info.get("notices", []):  # e.g. JupyterLab has no MCP panel
        print(f"WARN {notice}")
    if any(conflict["answers"] for conflict in conflicts):
        return 1
    problem = _probe(target)
    if problem is None:
        try:
            tools = asyncio.run(_handshake(target))
        except Exception as err:
            problem = f"{target.url} accepted the connection but the MCP handshake failed: {err!r}"
    if problem is not None:
        print(f"FAIL {problem}")
        return 1
    print(f"OK   {target.url}: {len(tools)} tools ({', '.join(tools[:6])}, ...); nothing was run.")
    return 0


def list_endpoints() -> int:
    servers = running_servers()
    if not servers:
        print("No running Jupyter servers. Start one with `jupyter lab` (as root: add --allow-root).")
        return 0
    print("MCP endpoints of running Jupyter servers:")
    for server in servers:  # never the server's token: it opens everything, an agent gets its own
        print(f"{endpoint_of(server)} :: {server.get('root_dir', '')}")
    print(
        "Agent hosts sign in on first use: `jupyter mcp config claude|codex|cursor|vscode|json` prints a "
        "set-up. A host or script that can only send a header: `jupyter mcp token create --name <agent>`."
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jupyter mcp", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command")
    for name, help_text in [
        ("config", "print a set-up for an agent host"),
        ("check", "connect and list tools"),
    ]:
        sub = commands.add_parser(name, help=help_text)
        if name == "config":
            sub.add_argument("host", choices=HOSTS)
            sub.add_argument(
                "--name", default="jupyter", help="the server's name in the host (default: jupyter)"
            )
        sub.add_argument("--url", help="the MCP endpoint (default: the newest running server's)")
        sub.add_argument(
            "--token",
            help="config: an agent token to put in the set-up (default: none, the host signs in); "
            "check: the token to send (default: the running server's)",
        )
    commands.add_parser("list", help="list the MCP endpoints of running servers (the default)")
    tokens.add_parser(commands)
    args = parser.parse_args(argv)
    if args.command == "token":
        target = pick(args.url, args.token)
        return tokens.run(args, target.url, target.token)
    if args.command == "config":
        target = pick(args.url, args.token)
        if args.token is None:  # agent hosts sign in through the browser (OAuth): no token in their config
            target = Target(target.url, "")
            print(SIGN_IN, file=sys.stderr)
        elif args.host == "claude":
            print(
                "Claude Code's set-up carries no token (it would be on a command line): it signs in. For a "
                "fixed agent token, put what `jupyter mcp config json --token ...` prints in its .mcp.json.",
                file=sys.stderr,
            )
        print(config_text(args.host, target, args.name))
        return 0
    if args.command == "check":
        return check(pick(args.url, args.token))
    return list_endpoints()
