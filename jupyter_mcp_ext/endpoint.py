"""Where agents reach the endpoint: the full ``/mcp`` URL of a server, under JupyterHub its public one.

Used by the start-up log line and by ``jupyter mcp``; stdlib only, so the command starts fast.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

PATH = "mcp"


def join(base: str, path: str = PATH) -> str:
    """``base`` (a URL or a path) with ``path`` appended under it."""
    return base.rstrip("/") + "/" + path


def hub_endpoint(base_url: str, env: Mapping[str, str] | None = None) -> str | None:
    """The endpoint as seen from outside a JupyterHub single-user server, if the Hub says where that is.

    ``JUPYTERHUB_PUBLIC_URL`` is this server's public URL (its prefix included);
    ``JUPYTERHUB_PUBLIC_HUB_URL`` only the Hub's, to which the server's prefix is added.
    """
    env = os.environ if env is None else env
    if public := env.get("JUPYTERHUB_PUBLIC_URL"):
        return join(public)
    prefix = env.get("JUPYTERHUB_SERVICE_PREFIX") or base_url
    if hub := env.get("JUPYTERHUB_PUBLIC_HUB_URL"):
        parts = urlsplit(hub)
        return urlunsplit((parts.scheme, parts.netloc, join(prefix), "", ""))
    return None


def under_hub(env: Mapping[str, str] | None = None) -> bool:
    return bool((os.environ if env is None else env).get("JUPYTERHUB_SERVICE_PREFIX"))


def server_endpoint(info: Mapping[str, Any], env: Mapping[str, str] | None = None) -> str:
    """The endpoint of a server described by its runtime file (``jupyter server list --json``)."""
    return hub_endpoint(info.get("base_url", "/"), env) or join(info["url"])


def startup_line(serverapp: Any) -> str:
    """What the server log says once it is up: the full URL and how to send the token.

    The token is shown as Jupyter shows it in its own URL lines: in full if it was generated for this
    run, as ``...`` if it came from configuration.
    """
    # Listening on all interfaces, the public URL names 0.0.0.0, which no client can reach.
    wildcard = serverapp.ip in ("", "0.0.0.0", "::")
    public = urlsplit(serverapp.local_url if wildcard else serverapp.public_url)
    url = hub_endpoint(serverapp.base_url) or urlunsplit(
        (public.scheme, public.netloc, join(serverapp.base_url), "", "")
    )
    provider = serverapp.identity_provider
    if under_hub():
        how = "send a Hub API token as 'Authorization: token <token>'"
    elif provider.token:
        shown = provider.token if provider.token_generated else "..."
        how = f"send the header 'Authorization: token {shown}'"
    else:
        how = "no token needed"
    return f"MCP endpoint: {url} ({how}; `jupyter mcp config claude|codex|cursor|vscode` prints a set-up)"
