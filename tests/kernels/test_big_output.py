"""A big output does not hurt the person: it goes into the notebook in small steps (issue 14).

A cell printing 20 MB reaches the server as one kernel message; the notebook keeps its first
``max_document_output_bytes``. Written as one transaction, that is one multi-megabyte update the
server applies, stores and sends to every tab while nothing else runs. Here a person's tab watches
the updates arrive: the text grows in steps (each at most half as long as what is there, since a
commit costs about the text's length anyway), and together they are the whole kept output.
"""

from __future__ import annotations

import time

import pytest
from pycrdt import TransactionEvent

from jupyter_mcp_ext.kernels.chunks import STEP_BYTES, steps

from ..support.mcp_client import connect, ok
from ..support.yclient import YPeer

KEPT = 2_000_000


@pytest.fixture
def jp_server_config(jp_server_config):
    jp_server_config.MCPExtensionApp.max_document_output_bytes = KEPT
    return jp_server_config


def test_steps_keep_the_edits_and_their_order():
    text = "x" * (3 * STEP_BYTES + 5)
    ops = [("text", 0, "ab", text), ("append", {"output_type": "stream", "name": "stderr", "text": text})]
    parts = steps(ops, [0])
    assert all(
        sum(len(op[3]) if op[0] == "text" else len(op[1]["text"]) for op in p) <= STEP_BYTES for p in parts
    )
    # A long text takes longer pieces (each commit costs about the text's length anyway): few steps.
    long = steps([("text", 0, "", "y" * 8_000_000)], [2_000_000])
    assert len(long) == 4 and len(long[0][0][3]) == 1_000_000
    assert "".join(op[3] for part in long for op in part) == "y" * 8_000_000
    flat = [op for part in parts for op in part]
    assert flat[0] == ("text", 0, "ab", text[:STEP_BYTES])  # the old tail is replaced once, first
    assert "".join(op[3] for op in flat if op[0] == "text" and op[1] == 0) == text
    appended = next(i for i, op in enumerate(flat) if op[0] == "append")
    rest = "".join(op[3] for op in flat[appended + 1 :])
    assert flat[appended][1]["text"] + rest == text and {op[1] for op in flat[appended + 1 :]} == {1}


async def test_a_20_mb_print_reaches_the_person_in_small_updates(server_url, jp_auth_header, make_notebook):
    path = make_notebook("big.ipynb", cells=["print('x' * 20_000_000)"])
    sizes: list[int] = []
    async with (
        connect(server_url, jp_auth_header) as agent,
        YPeer(server_url, jp_auth_header, path) as person,
    ):
        cell_id = (await ok(agent, "get_notebook", path=path))["cells"][0]["id"]

        def seen(event: TransactionEvent) -> None:
            sizes.append(len(event.update))

        person.ydoc.observe(seen)
        start = time.monotonic()
        await ok(agent, "execute_cells", path=path, cell_ids=[cell_id], timeout=120)

        def whole(nb) -> bool:  # the run's last step sets the count
            return nb.ycells[0].get("execution_count") is not None

        await person.wait_for(whole, timeout=60)
        took = time.monotonic() - start
        kept = len(str(person.notebook.ycells[0]["outputs"][0]["text"]))
    print(f"{len(sizes)} updates, largest {max(sizes)} bytes, {kept} characters kept, {took:.1f} s")
    assert kept >= KEPT // 2
    assert sum(sizes) >= kept  # everything arrived, and in updates of a step each
    assert len(sizes) >= 8 and max(sizes) <= KEPT // 3, sizes  # not one 2 MB update
    assert all(size <= 2 * STEP_BYTES for size in sizes[:4]), sizes  # the start of it comes in small
