"""The Hub authorizer's first import path, kept for the configurations that name it:
``c.ServerApp.authorizer_class = "jupyter_mcp_ext.hub_authorizer.ScopedHubAuthorizer"``.
It lives in ``auth/hub_authorizer.py``."""

from .auth.hub_authorizer import ScopedHubAuthorizer

__all__ = ["ScopedHubAuthorizer"]
