"""Remote kernels: the server runs with ``--gateway-url`` against a real Jupyter Kernel Gateway on
loopback (token-protected), and cells run there exactly as they do in local kernels."""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from traitlets.config import Config

from ..support.mcp_client import connect, ok
from ..support.runs import (
    first_run_on_the_slow_kernel,
    idle_cell,
    restart_mid_run_leaves_the_cell_idle_with_an_error,
    start_sleeper,
    write_slow_kernelspec,
)
from ..support.yclient import YPeer
from .test_execution import outputs_text

if importlib.util.find_spec("kernel_gateway") is None:
    pytest.skip("jupyter_kernel_gateway is not installed (pip install -e '.[test]')", allow_module_level=True)

from jupyter_server.gateway.gateway_client import GatewayClient


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Gateway:
    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token

    def kernels(self) -> list[dict[str, Any]]:
        return httpx.get(f"{self.url}/api/kernels", headers={"Authorization": f"token {self.token}"}).json()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """``jupyter kernelgateway`` on 127.0.0.1, a random port, a token; stopped after the module."""
    port, token = _free_port(), secrets.token_hex(16)
    home = tmp_path_factory.mktemp("gateway")
    log = (home / "gateway.log").open("wb")
    # Besides python3, a kernel slow to start (as a remote kernel's pod or a heavy environment is).
    write_slow_kernelspec(home / "share" / "kernels")
    jupyter_path = os.pathsep.join(p for p in (str(home / "share"), os.environ.get("JUPYTER_PATH")) if p)
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(home / "runtime"), JUPYTER_PATH=jupyter_path)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernel_gateway",
            "--KernelGatewayApp.ip=127.0.0.1",
            f"--KernelGatewayApp.port={port}",
            "--KernelGatewayApp.port_retries=0",
            f"--KernelGatewayApp.auth_token={token}",
            "--JupyterWebsocketPersonality.list_kernels=True",
        ],
        cwd=home,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # a loaded machine: the gateway took 50 s to answer once
        while True:
            request = urllib.request.Request(f"{url}/api", headers={"Authorization": f"token {token}"})
            try:
                with urllib.request.urlopen(request, timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"kernelgateway did not start:\n{(home / 'gateway.log').read_text()}")
            time.sleep(0.1)
        yield Gateway(url, token)
    finally:
        GatewayClient.clear_instance()  # the servers of this module are gone; later ones have no gateway
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture
def jp_server_config(jp_server_config: Config, gateway: Gateway) -> Config:
    """The server talks to the gateway with its token.

    ``GatewayClient`` is a process-wide singleton the server adopts: an earlier server's (no gateway)
    must not be reused. Ours is cleared when the gateway stops, after the last server's cleanup.
    """
    GatewayClient.clear_instance()
    jp_server_config.GatewayClient.url = gateway.url
    jp_server_config.GatewayClient.auth_token = gateway.token
    return jp_server_config


async def test_cells_run_in_the_remote_kernel_and_the_person_sees_them(
    server_url: str, jp_auth_header: dict[str, str], make_notebook: Any, jp_serverapp: Any, gateway: Gateway
) -> None:
    assert jp_serverapp.gateway_config.gateway_enabled
    path = make_notebook("remote.ipynb", cells=["x = 20"])
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        connect(server_url, jp_auth_header) as agent,
    ):
        await ok(agent, "execute_cells", path=path, all=True)
        data = await ok(
            agent,
            "insert_and_execute",
            path=path,
            source="import os\nfor i in range(2):\n    print('line', i, flush=True)\nx * 2 + 2",
        )
        assert data["status"] == "ok"
        outputs = data["cells"][0]["outputs"]
        assert outputs[0]["text"] == "line 0\nline 1\n" and outputs[1]["text"] == "42"
        await person.wait_for(
            lambda nb: (
                len(nb.ycells) == 2
                and nb.ycells[1].get("execution_count") == 2
                and nb.ycells[1].get("execution_state") == "idle"
            )
        )
        assert outputs_text(person.notebook.ycells[1]) == "line 0\nline 1\n"
        # The kernel is the gateway's, bound to the notebook's session.
        async with httpx.AsyncClient(headers=jp_auth_header) as http:
            sessions = (await http.get(f"{server_url}api/sessions")).json()
        kernel_id = sessions[0]["kernel"]["id"]
        assert kernel_id in [k["id"] for k in gateway.kernels()]
        # User expressions (no cell, no count) work over the gateway too.
        variables = (await ok(agent, "inspect_variables", path=path, names=["x"]))["variables"]
        assert variables["x"]["type"] == "int"
        errored = await ok(agent, "execute_code", path=path, code="1/0")
        assert errored["status"] == "error" and errored["error"]["ename"] == "ZeroDivisionError"


async def test_interrupt_and_restart_the_remote_kernel(
    server_url: str, jp_auth_header: dict[str, str], make_notebook: Any
) -> None:
    path = make_notebook("control.ipynb")
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        connect(server_url, jp_auth_header) as agent,
    ):
        await ok(agent, "execute_code", path=path, code="kept = 1")
        sleeper = await start_sleeper(agent, path)
        assert sleeper["status"] == "running"
        started = time.monotonic()
        await ok(agent, "interrupt_kernel", path=path)
        stopped = await ok(agent, "get_execution", execution_id=sleeper["execution_id"], wait=20)
        assert stopped["status"] == "interrupted" and stopped["error"]["ename"] == "KeyboardInterrupt"
        assert time.monotonic() - started < 10
        assert (await ok(agent, "execute_code", path=path, code="kept"))["cells"][0]["outputs"][0][
            "text"
        ] == "1"

        await restart_mid_run_leaves_the_cell_idle_with_an_error(agent, person, path)


class TestSlowRemoteKernelStart:
    """A remote kernel slower to answer than the idle timeout is starting, not idle: the idle culler
    shut it down under the agent's first run, as it did local kernels before (43153e9)."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config: Config) -> Config:
        jp_server_config.MCPExtensionApp.kernel_idle_timeout = 0.5
        return jp_server_config

    async def test_the_first_run_gets_its_result(
        self, server_url: str, jp_auth_header: dict[str, str], make_notebook: Any
    ) -> None:
        await first_run_on_the_slow_kernel(server_url, jp_auth_header, make_notebook)


def test_the_gateway_log_has_no_unauthorized_requests(gateway: Gateway, tmp_path_factory: Any) -> None:
    """Every request we made carried the gateway's token (the stock kernel client's websocket does not)."""
    logs = list(Path(tmp_path_factory.getbasetemp()).glob("gateway*/gateway.log"))
    assert logs and all(" 401 " not in log.read_text() for log in logs)


async def test_a_lost_connection_ends_the_run_with_a_clear_error_and_the_next_call_reconnects(
    server_url: str, jp_auth_header: dict[str, str], make_notebook: Any, jp_serverapp: Any
) -> None:
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    kernels = app.services.kernels
    path = make_notebook("lost.ipynb")
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        connect(server_url, jp_auth_header) as agent,
    ):
        await ok(agent, "execute_code", path=path, code="kept = 7")
        running = await start_sleeper(agent, path, seconds=2, timeout=0.3)
        (link,) = kernels._links.values()
        link.client._ws.close()  # as if the gateway or the network dropped it
        ended = await ok(agent, "get_execution", execution_id=running["execution_id"], wait=20)
        assert ended["status"] == "error" and ended["error"]["ename"] == "ConnectionError"
        cell = await idle_cell(person, running["cell_id"])
        assert [o.get("ename") for o in cell["outputs"]] == ["ConnectionError"]
        # The kernel lived on; the next call connects again and finds its variables.
        again = await ok(agent, "execute_code", path=path, code="kept")
        assert again["cells"][0]["outputs"][0]["text"] == "7"
        assert next(iter(kernels._links.values())) is not link


def test_a_huge_stream_message_is_decoded_only_as_far_as_it_is_kept() -> None:
    from jupyter_client.jsonutil import json_default
    from jupyter_client.session import Session

    from jupyter_mcp_ext.kernels.gateway_link import _large_stream

    session = Session()
    msg = session.msg("stream", {"name": "stdout", "text": "é\n" * 2_000_000})
    msg |= {"buffers": [], "channel": "iopub"}  # as jupyter_server relays it
    data = json.dumps(msg, default=json_default)
    decoded = _large_stream(data, 1000)
    assert decoded is not None and decoded["header"]["msg_id"] == msg["header"]["msg_id"]
    content = decoded["content"]
    assert content["name"] == "stdout" and content["text"] == "é\n" * 500
    assert abs(content["omitted"] - (6_000_000 - 1500)) < 6000  # an estimate, within 0.1%
