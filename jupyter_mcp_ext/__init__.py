"""jupyter-mcp-ext: MCP for agents, served by Jupyter Server at ``<base_url>/mcp``.

The extension app is imported on first use, not with the package: ``jupyter mcp`` (``cli``) would
otherwise load all of Jupyter Server, seconds of CPU per command (jsonschema's format checkers
compile an RFC 3987 grammar at import).
"""

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .app import MCPExtensionApp

__all__ = ["MCPExtensionApp", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "MCPExtensionApp":
        from .app import MCPExtensionApp

        return MCPExtensionApp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _jupyter_server_extension_points() -> list[dict]:
    from .app import MCPExtensionApp

    return [{"module": "jupyter_mcp_ext", "app": MCPExtensionApp}]
