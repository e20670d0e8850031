"""Where agents reach the endpoint: the full ``/mcp`` URL of a server, under JupyterHub its public one.

Used by the start-up log line and by ``jupyter mcp``; stdlib only, so the command starts fast.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

PATH = "mcp"


def join(base: str, path: str = PATH) -> str:
    """``base`` (a URL or a path) with ``path`` appended under it."""
    return base.rstrip("/") + "/" + path


def hub_endpoint(base_url: str, env: Mapping[str, str] | None = None, path: str = PATH) -> str | None:
    """The endpoint as seen from outside a JupyterHub single-user server, if the Hub says where that is.

    ``JUPYTERHUB_PUBLIC_URL`` is this server's public URL (its prefix included);
    ``JUPYTERHUB_PUBLIC_HUB_URL`` only the Hub's, to which the server's prefix is added.
    """
    env = os.environ if env is None else env
    if public := env.get("JUPYTERHUB_PUBLIC_URL"):
        return join(public, path)
    prefix = env.get("JUPYTERHUB_SERVICE_PREFIX") or base_url
    if hub := env.get("JUPYTERHUB_PUBLIC_HUB_URL"):
        parts = urlsplit(hub)
        return urlunsplit((parts.scheme, parts.netloc, join(prefix, path), "", ""))
    return None


def under_hub(env: Mapping[str, str] | None = None) -> bool:
    return bool((os.environ if env is None else env).get("JUPYTERHUB_SERVICE_PREFIX"))


def server_endpoint(info: Mapping[str, Any], env: Mapping[str, str] | None = None, path: str = PATH) -> str:
    """The endpoint of a server described by its runtime file (``jupyter server list --json``), ours
    served at ``path`` under its base URL (``MCPExtensionApp.path``)."""
    return hub_endpoint(info.get("base_url", "/"), env, path) or join(info["url"], path)


def panel_info(url: str, token: str = "", timeout: float = 5.0) -> dict[str, Any] | None:
    """``/api/mcp/info`` of the server at ``url`` (its base URL): where our endpoint is and what else
    routes it. None if nothing there answers it (not running, an older version, a wrong token)."""
    request = urllib.request.Request(join(url, "api/mcp/info"))
    if token:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            info = json.loads(response.read())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and isinstance(info.get("path"), str) else None


def info_near(endpoint: str, token: str = "") -> dict[str, Any] | None:
    """The panel info of the server serving ``endpoint``, found by trying its parent URLs as base URLs."""
    parts = urlsplit(endpoint)
    segments = parts.path.rstrip("/").split("/")
    for cut in range(len(segments) - 1, 0, -1):
        base = urlunsplit((parts.scheme, parts.netloc, "/".join(segments[:cut]) + "/", "", ""))
        info = panel_info(base, token)
        if info is not None and join(urlsplit(base).path, info["path"]) == parts.path.rstrip("/"):
            return info
    return None


def startup_line(serverapp: Any, path: str = PATH, oauth: bool = True) -> str:
    """What the server log says once it is up: the full URL, and how agents get a credential.

    Never the person's Jupyter token: it opens everything the person can, so the log no longer tells
    anyone to hand it to an agent. Hosts that speak MCP's OAuth sign in (the person allows them in
    JupyterLab); a host or script that can only send a fixed header gets a minted agent token.
    """
    # Listening on all interfaces, the public URL names 0.0.0.0, which no client can reach.
    wildcard = serverapp.ip in ("", "0.0.0.0", "::")
    public = urlsplit(serverapp.local_url if wildcard else serverapp.public_url)
    url = hub_endpoint(serverapp.base_url, path=path) or urlunsplit(
        (public.scheme, public.netloc, join(serverapp.base_url, path), "", "")
    )
    if not serverapp.identity_provider.auth_enabled:
        how = "no credentials needed"
    elif oauth:
        how = "agent hosts sign in on first use; for a fixed header, `jupyter mcp token create`"
    else:
        how = "agents send a token from `jupyter mcp token create`"
    return f"MCP endpoint: {url} ({how}; `jupyter mcp config claude|codex|cursor|vscode` prints a set-up)"
