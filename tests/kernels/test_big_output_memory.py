"""A big print is held by the server once, not three times (issue 21).

ipykernel sends a 24 MB print as one message. jupyter_server's activity watcher receives it on its
own subscription and copies it to ``bytes``; a subscription of ours would receive it a third time.
The extension receives on the watcher's stream without the copy, so what Python holds at the peak
of an agent's run is about what the notebook keeps, not a multiple of what the cell printed.
"""

from __future__ import annotations

import json
import sys
import tracemalloc

import pytest
import zmq
from jupyter_client.session import Session
from tornado.httpclient import AsyncHTTPClient

from jupyter_mcp_ext.kernels.messages import Budget, read
from jupyter_mcp_ext.kernels.output_model import OutputModel

from ..support.mcp_client import connect, ok

PRINTED = 24 * 1024 * 1024
ONE_MESSAGE = f"print('x' * {PRINTED})"
# Flushed every 128 kB: two hundred messages, each decoded whole (under a MB), waiting to be applied.
FLUSHED = f"for _ in range({PRINTED // 2**17}):\n    print('x' * {2**17 - 1}, flush=True)"
KEPT = 500_000


@pytest.fixture
def jp_server_config(jp_server_config):
    jp_server_config.MCPExtensionApp.max_document_output_bytes = KEPT
    return jp_server_config


async def _kernel(server_url: str, headers: dict[str, str]) -> dict:
    body = (await AsyncHTTPClient().fetch(f"{server_url}api/kernels", headers=headers)).body
    (kernel,) = json.loads(body)
    return kernel


@pytest.mark.parametrize("code", [ONE_MESSAGE, FLUSHED], ids=["one message", "flushed"])
async def test_a_big_print_is_held_once(server_url, jp_auth_header, make_notebook, code):
    path = make_notebook("flood.ipynb", cells=[code])
    async with connect(server_url, jp_auth_header) as agent:
        cell_id = (await ok(agent, "get_notebook", path=path))["cells"][0]["id"]
        await ok(agent, "execute_code", path=path, code="0")  # the kernel is up and linked
        before = await _kernel(server_url, jp_auth_header)
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            out = await ok(agent, "execute_cells", path=path, cell_ids=[cell_id], timeout=120)
            peak = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
        after = await _kernel(server_url, jp_auth_header)
    print(f"traced peak {peak / 1e6:.1f} MB for a {PRINTED / 1e6:.0f} MB print")
    assert out["status"] == "ok", out
    assert "Output limit reached" in str(out)  # the agent's bounded result says it was cut
    assert peak < 0.2 * PRINTED, f"{peak / 1e6:.1f} MB held for a {PRINTED / 1e6:.0f} MB print"
    # The server's own activity watcher still sees the kernel's messages on the shared stream.
    assert after["execution_state"] == "idle" and after["last_activity"] > before["last_activity"]


def test_waiting_messages_hold_no_more_than_the_run_keeps():
    """Decoded past its run's budget, a message carries no text, only the count of what it had."""
    session = Session(key=b"k")
    budget = Budget(1500)

    def frames(msg_type: str, content: dict) -> list[zmq.Frame]:
        msg = session.msg(msg_type, content, parent={"msg_id": "run"})
        return [zmq.Frame(f) for f in session.serialize(msg)]

    def text(msg_type: str, content: dict) -> dict:
        return read(session, frames(msg_type, content), 10**9, {"run"}, {"run": budget})["content"]

    assert text("stream", {"name": "stdout", "text": "a" * 1000}) == {"name": "stdout", "text": "a" * 1000}
    assert text("stream", {"name": "stdout", "text": "b" * 1000}) == {
        "name": "stdout",
        "text": "b" * 500,
        "omitted": 500,
    }
    big = text("stream", {"name": "stdout", "text": "c" * 3_000_000})  # decoded from a view: no copy
    assert big["text"] == "" and big["omitted"] >= 3_000_000
    text("clear_output", {"wait": False})  # a cleared cell has its room again
    assert text("stream", {"name": "stdout", "text": "d" * 1000})["text"] == "d" * 1000
    assert read(session, frames("stream", {"name": "stdout", "text": "e"}), 10, {"other"}) is None


def test_a_finished_run_keeps_its_output_once():
    """The streams' working copies go when the run ends: a finished run's text is held once."""
    model = OutputModel(10**9)
    model.apply("stream", {"name": "stdout", "text": "x" * 1_000_000 + "\n"})
    model.apply("stream", {"name": "stdout", "text": "y" * 1_000_000})  # an open last line
    model.finish()
    refs = sys.getrefcount(model.outputs[0]["text"])
    assert refs == 2  # the output's, and getrefcount's argument: no working copy besides
