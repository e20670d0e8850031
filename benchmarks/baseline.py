"""The baseline: this extension as it was at a commit (ecc2a08, before the person-side work), to
measure today's code beside it in one run.

The commit's ``jupyter_mcp_ext`` package is taken with ``git archive`` from this checkout's repository
into a cache folder (``~/.cache/jupyter-mcp-ext-bench/<commit>``, built once) and put first on the
baseline server's ``PYTHONPATH``, ahead of the installed (editable) copy. Everything else is shared:
the same interpreter, the same jupyter_server, collaboration, pycrdt and MCP SDK, the same
``jupyter_server_config.d``. So the two servers differ only in this extension's code, which is the
comparison the targets ask for.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

from tests.support.server import JupyterServer

BASELINE = "ecc2a08"
REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "jupyter-mcp-ext-bench"


def baseline_tree(commit: str = BASELINE) -> Path:
    """A folder holding the commit's ``jupyter_mcp_ext`` package (and nothing else), built once."""
    full = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", f"{commit}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    folder = CACHE / full
    if (folder / "jupyter_mcp_ext" / "__init__.py").exists():
        return folder
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", full, "jupyter_mcp_ext"],
        check=True,
        capture_output=True,
    ).stdout
    partial = folder.with_name(folder.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(partial, filter="data")
    partial.rename(folder)  # whole or absent: a run cut short builds it again
    return folder


def baseline_server(commit: str = BASELINE) -> JupyterServer:
    """A bench server (with the CPU floor's handler) whose ``jupyter_mcp_ext`` is the commit's."""
    server = JupyterServer(extensions=["benchmarks.floor"], prefix="jupyter-mcp-bench-base-")
    server.python_path = [str(baseline_tree(commit))]
    return server
