"""Whether JupyterLab can find the MCP panel: an editable install (``pip install -e .``) builds it only
where Node.js is on the PATH, and the build hook skips it silently otherwise (pip hides its warning).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

NAME = "jupyter-mcp-ext"


def panel_missing(serverapp: Any) -> str | None:
    """A warning if this server runs JupyterLab and none of its labextension folders holds the panel."""
    labs = serverapp.extension_manager.extension_apps.get("jupyterlab")
    if not labs:
        return None  # no JupyterLab here: no panel to miss
    lab = next(iter(labs))
    folders = [*getattr(lab, "extra_labextensions_path", []), *getattr(lab, "labextensions_path", [])]
    if any((Path(folder) / NAME / "package.json").is_file() for folder in folders):
        return None
    return (
        f"JupyterLab shows no MCP panel: the {NAME} labextension is in none of its folders "
        f"({', '.join(map(str, folders)) or 'none'}). An editable install (pip install -e .) builds it only "
        "where Node.js is on the PATH: install Node.js and run it again, or install the wheel. "
        "The MCP endpoint works without it."
    )
