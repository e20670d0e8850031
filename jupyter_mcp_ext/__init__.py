"""jupyter-mcp-ext: MCP for agents, served by Jupyter Server at ``<base_url>/mcp``."""

from ._version import __version__
from .app import MCPExtensionApp

__all__ = ["MCPExtensionApp", "__version__"]


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "jupyter_mcp_ext", "app": MCPExtensionApp}]
