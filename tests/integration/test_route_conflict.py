"""Another extension routing ``<base_url>/mcp`` (as datalayer's jupyter-mcp-server does, ``mcp/?``):
a real ``jupyter server`` in a subprocess with a small extension of the test's own, loaded before or
after ours (extensions load in the order of their names), enabled by a config file."""

from __future__ import annotations

import io
import json
import os
import subprocess
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from jupyter_mcp_ext import cli

from ..cli.test_cli import tool_names
from ..support.server_process import REPO as HERE
from ..support.server_process import TOKEN, server_on_a_free_port

# The other extension: it answers GET and POST on <base_url>/mcp with a page of its own.
OTHER = """
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join


class OtherMCPHandler(JupyterHandler):
    def get(self):
        self.finish("the other MCP server")

    post = get

    def check_xsrf_cookie(self):
        pass


def _jupyter_server_extension_points():
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp):
    route = url_path_join(serverapp.web_app.settings["base_url"], "mcp/?")
    serverapp.web_app.add_handlers(".*$", [(route, OtherMCPHandler)])
"""

# Named to load before jupyter_mcp_ext ("a..." < "jupyter...") or after it ("z..." > "jupyter...").
FIRST, AFTER = "a_other_mcp", "z_other_mcp"


@contextmanager
def server(work: Path, other: str | None, *args: str) -> Iterator[dict]:
    """A server with ``other`` (if any) enabled beside ours, and what the installed config enables."""
    for name in ("root", "config", "data", "runtime", "ipython", "modules"):
        (work / name).mkdir()
    config_d = work / "config" / "jupyter_server_config.d"
    config_d.mkdir()
    for installed in (HERE / "jupyter-config" / "jupyter_server_config.d").glob("*.json"):
        (config_d / installed.name).write_text(installed.read_text())
    if other:
        (work / "modules" / f"{other}.py").write_text(OTHER)
        enable = {"ServerApp": {"jpserver_extensions": {other: True}}}
        (config_d / f"{other}.json").write_text(json.dumps(enable))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("JUPYTERHUB_")},
        "JUPYTER_CONFIG_DIR": str(work / "config"),
        "JUPYTER_DATA_DIR": str(work / "data"),
        "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
        "IPYTHONDIR": str(work / "ipython"),
        "JUPYTER_PREFER_ENV_PATH": "0",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(work / "modules"), os.environ.get("PYTHONPATH", "")]),
    }
    log_path = work / "server.log"
    with server_on_a_free_port(
        lambda port: ["--ip=127.0.0.1", f"--port={port}", "--no-browser",
         "--allow-root", f"--ServerApp.root_dir={work / 'root'}", "--ServerApp.base_url=/base/",
         f"--IdentityProvider.token={TOKEN}", "--ServerApp.port_retries=0", *args],
        env=env, cwd=work, log_path=lambda _port: log_path,
    ) as (_, port):  # fmt: skip
        yield {"base": f"http://127.0.0.1:{port}/base/", "env": env, "log": log_path}


def jupyter_mcp(srv: dict, *args: str) -> subprocess.CompletedProcess[str]:
    """``jupyter mcp ARGS`` with the server's environment (its runtime folder, no Hub), run in this process:
    a new interpreter would spend 2-3 CPU-s importing what this one has (tests/cli/test_cli.py runs the command
    itself). In a thread, as ``check`` runs its own event loop; the environment is put back after."""
    out, err = io.StringIO(), io.StringIO()

    def run() -> int:
        with redirect_stdout(out), redirect_stderr(err):
            return cli.main(list(args))

    with pytest.MonkeyPatch.context() as patch, ThreadPoolExecutor(1) as thread:
        for name in set(os.environ) - set(srv["env"]):
            patch.delenv(name)
        for name, value in srv["env"].items():
            patch.setenv(name, value)
        code = thread.submit(run).result(timeout=120)
    return subprocess.CompletedProcess(["jupyter", "mcp", *args], code, out.getvalue(), err.getvalue())


def get(url: str) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read().decode()


def errors(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith("[E ")]


@pytest.mark.parametrize("other", [FIRST, AFTER])
def test_another_extension_on_mcp_is_named_in_the_log_the_panel_and_the_check(tmp_path, other):
    with server(tmp_path, other) as srv:
        assert "no MCP panel" not in srv["log"].read_text()  # the venv has it
        (line,) = errors(srv["log"])  # one clear error, whichever loaded first
        assert f"{other}.OtherMCPHandler (extension {other})" in line and "/base/mcp" in line
        assert "c.MCPExtensionApp.path = 'jupyter-mcp'" in line
        assert f"jupyter server extension disable {other}" in line

        info = json.loads(get(srv["base"] + "api/mcp/info"))
        (conflict,) = info["conflicts"]
        assert conflict["handler"] == f"{other}.OtherMCPHandler" and conflict["extension"] == other
        assert conflict["answers"] is (other == FIRST) and conflict["message"] in line

        checked = jupyter_mcp(srv, "check")
        if other == FIRST:  # theirs answers: a handshake would have talked to it
            assert checked.returncode == 1 and checked.stdout.startswith("FAIL Another extension"), checked
            assert get(srv["base"] + "mcp") == "the other MCP server"
        else:  # ours answers, theirs is unreachable: worth a word, not a failure
            assert checked.returncode == 0, checked
            assert checked.stdout.startswith("WARN Another extension") and "\nOK   " in checked.stdout


async def test_moving_our_endpoint_ends_the_conflict_and_everything_hands_out_the_new_url(tmp_path):
    with server(tmp_path, FIRST, "--MCPExtensionApp.path=/jupyter-mcp/") as srv:
        url = srv["base"] + "jupyter-mcp"
        assert errors(srv["log"]) == []
        assert f"MCP endpoint: {url} " in srv["log"].read_text()
        info = json.loads(get(srv["base"] + "api/mcp/info"))
        assert info["url"] == url and info["path"] == "jupyter-mcp" and info["conflicts"] == []
        assert url in jupyter_mcp(srv).stdout
        checked = jupyter_mcp(srv, "check")
        assert checked.returncode == 0 and checked.stdout.startswith(f"OK   {url}:"), checked
        assert "list_notebooks" in await tool_names(url, {"Authorization": f"token {TOKEN}"})
        assert get(srv["base"] + "mcp") == "the other MCP server"  # theirs keeps its path


def test_a_path_that_is_not_a_url_path_is_refused_with_the_setting_named():
    from jupyter_mcp_ext.app import MCPExtensionApp

    with pytest.raises(Exception, match=r"MCPExtensionApp.path must be a URL path"):
        MCPExtensionApp(path="my mcp")


def test_a_lab_without_the_panel_says_so_at_start_in_the_panel_info_and_in_the_check(tmp_path):
    # As after `pip install -e .` without Node.js: JupyterLab finds no jupyter-mcp-ext labextension.
    (tmp_path / "empty").mkdir()
    with server(tmp_path, None, f"--LabApp.labextensions_path={tmp_path / 'empty'}") as srv:
        (line,) = [line for line in srv["log"].read_text().splitlines() if "no MCP panel" in line]
        assert line.startswith("[W ") and "Node.js" in line and str(tmp_path / "empty") in line
        (notice,) = json.loads(get(srv["base"] + "api/mcp/info"))["notices"]
        assert notice in line
        checked = jupyter_mcp(srv, "check")
        assert checked.returncode == 0 and f"WARN {notice}\nOK   " in checked.stdout, checked
