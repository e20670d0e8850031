"""``jupyter mcp token create|list|revoke``: manage agent tokens of a running server, through its panel API.

The server alone writes its credentials; this command asks it with the person's Jupyter token (from
the server's runtime file, or ``--token``), as the panel does. Stdlib only, so the command starts fast.
"""

from __future__ import annotations

import argparse
import json
import urllib.error
import urllib.request
from typing import Any

POLICIES = ("read-only", "ask", "full")


def add_parser(commands: Any) -> None:
    sub = commands.add_parser("token", help="mint, list or revoke agent tokens (they work at /mcp only)")
    actions = sub.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="mint a named agent token (shown once)")
    create.add_argument("--name", required=True, help="what people see the agent as, e.g. 'Nightly report'")
    create.add_argument("--policy", choices=POLICIES, default="ask", help="what it may do (default: ask)")
    actions.add_parser("list", help="list agent credentials")
    revoke = actions.add_parser("revoke", help="revoke an agent's credential (its sessions end at once)")
    revoke.add_argument("id", help="the agent's id, as `jupyter mcp token list` shows it")
    for parser in (create, actions.choices["list"], revoke):
        parser.add_argument("--url", help="the MCP endpoint (default: the newest running server's)")
        parser.add_argument("--token", help="the person's Jupyter token (default: the running server's)")


def _call(endpoint: str, token: str, method: str, path: str = "", body: Any = None) -> Any:
    url = endpoint.removesuffix("/mcp").rstrip("/") + "/api/mcp/agents" + path
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            return json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as err:
        text = err.read().decode("utf-8", "replace")
        try:
            message = json.loads(text).get("message") or text
        except (ValueError, AttributeError):
            message = text[:200]
        raise SystemExit(f"{url} answered HTTP {err.code}: {message}") from None
    except (urllib.error.URLError, OSError) as err:
        raise SystemExit(
            f"Cannot reach {url} ({getattr(err, 'reason', err)}). `jupyter mcp` lists servers."
        ) from None


def run(args: argparse.Namespace, endpoint: str, token: str) -> int:
    if args.action == "create":
        made = _call(endpoint, token, "POST", body={"name": args.name, "policy": args.policy})
        agent = made["agent"]
        print(f"Agent '{agent['name']}' ({agent['policy']}, id {agent['id']}); its token, shown this once:")
        print(made["token"])
        print(f"Send it to {endpoint} as the header 'Authorization: Bearer <token>'. It opens nothing else.")
        return 0
    if args.action == "revoke":
        done = _call(endpoint, token, "DELETE", "/" + args.id)
        print(f"Revoked {done['revoked']}; {done['sessions_ended']} live session(s) ended.")
        return 0
    agents = _call(endpoint, token, "GET")["agents"]
    if not agents:
        print("No agent credentials. `jupyter mcp token create --name NAME --policy ask` mints one.")
    for a in agents:
        used = a.get("last_used") or "never"
        print(
            f"{a['id']}  {a['name']!r:24} {a['policy']:9} via {a['client']}, for {a['user']}; "
            f"created {a['created']}, last used {used}, {len(a.get('sessions', []))} live session(s)"
        )
    return 0
