"""Notebooks as MCP resources: URIs that survive any file name and refuse any escape, reads of the live
notebook, a capabilities resource, and subscriptions that fire when a person or an agent edits."""

from __future__ import annotations

import asyncio
import json
import time
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import nbformat
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from jupyter_mcp_ext.tools.resources import BadURI, notebook_uri, path_of

from ..integration.test_hardening import loop_watchdog
from ..support.mcp_client import STATELESS, connect, ok
from ..support.yclient import YPeer

NAMES = [
    "plain.ipynb",
    "nested folder/分析.ipynb",
    "odd/a+b (1) & c=d;e,f'g!h$i@j:k*.ipynb",
    "100%.ipynb",
    "q?hash#.ipynb",
    "tilde~dash-dot.under_score.ipynb",
]


def test_uris_follow_rfc_3986():
    assert notebook_uri("nested folder/分析.ipynb") == "notebook:///nested%20folder/%E5%88%86%E6%9E%90.ipynb"
    for name in NAMES:
        assert path_of(notebook_uri(name)) == name
    # A client that expands {+path} itself keeps sub-delimiters as they are; that is the same notebook.
    assert path_of("notebook:///odd/a+b%20(1)%20&%20c=d;e,f'g!h$i@j:k*.ipynb") == NAMES[2]


@pytest.mark.parametrize(
    "uri",
    [
        "notebook:///../secret.ipynb",
        "notebook:///a/../../secret.ipynb",
        "notebook:///a/%2E%2E/secret.ipynb",
        "notebook:///./a.ipynb",
        "notebook:////etc/secret.ipynb",
        "notebook:///a//b.ipynb",
        "notebook:///a%2Fb.ipynb",
        "notebook:///a%5Cb.ipynb",
        "notebook:///a%00.ipynb",
        "notebook:///a%zz.ipynb",
        "notebook:///a%4.ipynb",
        "notebook:///a%FF.ipynb",
        "notebook:///a b.ipynb",
        "notebook:///a.ipynb?x=1",
        "notebook:///a.ipynb#cell",
        "notebook:///notes.txt",
        "notebook:///",
        "notebook://host/a.ipynb",
        "file:///a.ipynb",
    ],
)
def test_malformed_or_escaping_uris_are_refused(uri):
    with pytest.raises(BadURI):
        path_of(uri)


async def test_agent_lists_and_reads_notebooks_by_uri(server_url, jp_auth_header, make_notebook, jp_root_dir):
    for name in NAMES[:3]:
        make_notebook(name, cells=[f"print({name!r})"])
    make_notebook(".hidden/secret.ipynb", cells=["secret = 1"])
    outside = jp_root_dir.parent / "outside.ipynb"
    outside.write_text("{}")
    async with connect(server_url, jp_auth_header) as agent:
        listed = {r.uri: r for r in (await agent.list_resources()).resources}
        assert set(listed) == {"jupyter://capabilities", *(notebook_uri(n) for n in NAMES[:3])}
        templates = (await agent.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["notebook:///{+path}"]

        for name in NAMES[:3]:
            read = await agent.read_resource(notebook_uri(name))
            notebook = json.loads(read.contents[0].text)
            assert read.contents[0].mime_type == "application/x-ipynb+json"
            assert "".join(notebook["cells"][0]["source"]) == f"print({name!r})"

        for bad, says in [
            ("notebook:///../outside.ipynb", "'..'"),
            ("notebook:///nested folder/x.ipynb", "percent-encoded"),
            ("notebook:///.hidden/secret.ipynb", "hidden"),
            ("notebook:///missing.ipynb", "No notebook"),
        ]:
            with pytest.raises(MCPError, match=says):
                await agent.read_resource(bad)


async def test_reading_an_open_notebook_gives_what_the_person_sees(server_url, jp_auth_header, make_notebook):
    path = make_notebook("live.ipynb", cells=["x = 1"])
    async with (
        YPeer(server_url, jp_auth_header, path) as person,
        connect(server_url, jp_auth_header) as agent,
    ):
        person.insert_text(0, 5, "  # not saved yet")
        await person.flush()
        notebook = json.loads((await agent.read_resource(notebook_uri(path))).contents[0].text)
    assert notebook["cells"][0]["source"] == "x = 1  # not saved yet"


async def test_capabilities_report_versions_limits_kernels_and_collaboration(server_url, jp_auth_header):
    async with connect(server_url, jp_auth_header) as agent:
        read = await agent.read_resource("jupyter://capabilities")
    caps = json.loads(read.contents[0].text)
    assert caps["schema_version"] == 1
    assert set(caps["versions"]) == {"jupyter_server", "jupyter_mcp_ext"}
    assert caps["collaboration"]["enabled"] is True
    assert caps["settings"]["max_result_bytes"] == 64_000 and "room_idle_timeout" in caps["settings"]
    assert "python3" in [k["name"] for k in caps["kernelspecs"]]


def huge_notebook() -> nbformat.NotebookNode:
    """Small cells around cells with MBs of outputs (a stream, an image, a traceback) and of source."""
    v4 = nbformat.v4
    cells = [
        v4.new_markdown_cell("# Title"),
        v4.new_code_cell("print('x' * 2**20)", outputs=[v4.new_output("stream", text="x" * 2**20 + "\n")]),
        v4.new_code_cell(
            "plot()",
            outputs=[
                v4.new_output("display_data", {"image/png": "iVBOR" * 200_000, "text/plain": "<Figure>"})
            ],
        ),
        v4.new_code_cell(
            "fail()",
            outputs=[v4.new_output("error", ename="E", evalue="bad", traceback=["line\n" * 100_000])],
        ),
        v4.new_code_cell("s = '" + "a" * 2**20 + "'"),
        v4.new_code_cell(
            "ticks()", outputs=[v4.new_output("stream", text=f"tick {n}\n") for n in range(3000)]
        ),
        v4.new_code_cell(
            "y = 2",
            execution_count=3,
            outputs=[v4.new_output("execute_result", {"text/plain": "2"}, execution_count=3)],
        ),
    ]
    return v4.new_notebook(
        cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}}
    )


def stall_of(read: Callable[[Any], Any], arg: Any) -> float:
    """The loop's stall if ``read`` ran on it in one go: its CPU time on this thread (the least of
    three, as a collection or a busy machine only adds to it)."""
    stalls = []
    for _ in range(3):
        began = time.thread_time()
        read(arg)
        stalls.append(time.thread_time() - began)
    return min(stalls)


async def test_reading_a_huge_notebook_is_bounded_says_what_was_cut_and_keeps_the_server_responsive(
    server_url, jp_auth_header, jp_root_dir, ydoc_extension
):
    original = huge_notebook()
    (jp_root_dir / "huge.ipynb").write_text(nbformat.writes(original))
    async with connect(server_url, jp_auth_header) as agent:
        for where in ("on disk", "open in a room"):
            if where == "open in a room":
                await ok(agent, "read_cells", path="huge.ipynb", start=0, end=1)
                doc = await ydoc_extension.get_document(
                    path="huge.ipynb", content_type="notebook", file_format="json", copy=False
                )
                whole = stall_of(lambda d: json.dumps(d.get()), doc)
            else:
                file = jp_root_dir / "huge.ipynb"
                whole = stall_of(lambda f: json.dumps(nbformat.reads(f.read_text(), as_version=4)), file)
            async with loop_watchdog() as lags:
                text = (await agent.read_resource(notebook_uri("huge.ipynb"))).contents[0].text
            assert len(text.encode()) <= 64_000, (where, len(text.encode()))
            # No stall of the server's loop comes near what reading the notebook in one go on it
            # takes (both are CPU time on this machine, so a loaded machine scales both alike). On
            # disk the floor is jupyter_server's own read of the file, about a sixth of it.
            assert max(lags) < whole / 3, (
                f"{where}: the read stalled the server {max(lags) * 1000:.0f} ms, "
                f"reading it in one go takes {whole * 1000:.0f} ms"
            )
            notebook = nbformat.reads(text, as_version=4)
            nbformat.validate(notebook)  # still a notebook a client can load
            cells = notebook.cells
            assert [c.id for c in cells] == [c.id for c in original.cells], where
            assert "read_cells" in notebook.metadata["jupyter_mcp_ext"]["cut"]
            assert notebook.metadata["kernelspec"]["name"] == "python3"
            ticks = cells[5].outputs  # thousands of outputs: the first ones, then how many more
            assert ticks[0].text == "tick 0\n" and "more outputs cut" in ticks[-1].text
            for n in (0, 6):  # small cells come whole
                assert cells[n].source == original.cells[n].source
            assert cells[6].outputs[0]["data"]["text/plain"] == "2"
            stream, image, error = cells[1].outputs[0], cells[2].outputs[0], cells[3].outputs[0]
            assert stream.text.startswith("xxx") and f"cell_ids=['{cells[1].id}']" in stream.text
            assert "image/png" not in image.data and "image/png" in image.data["text/plain"]
            assert error.ename == "E" and "cut" in error.traceback[0]
            assert cells[4].source.startswith("s = 'aaa") and "characters of source cut" in cells[4].source


async def test_a_cell_read_over_several_slices_is_read_again_if_it_changed_meanwhile() -> None:
    """A cell of thousands of outputs is read over several slices; outputs inserted during a pause
    must not shift the rest under the read (an output given twice, or one skipped)."""
    from jupyter_ydoc import YNotebook
    from pycrdt import Map, Text

    from jupyter_mcp_ext.tools.notebook_json import notebook_json

    doc = YNotebook()
    doc.set(nbformat.v4.new_notebook(cells=[huge_notebook().cells[5]]))
    youtputs = doc.ycells[0]["outputs"]
    inserted = 0

    async def person_runs_more() -> None:
        nonlocal inserted
        while True:
            await asyncio.sleep(0)
            youtputs.insert(
                0, Map({"output_type": "stream", "name": "stdout", "text": Text(f"new {inserted}\n")})
            )
            inserted += 1

    churn = asyncio.create_task(person_runs_more())
    try:
        text = await notebook_json(doc, None, 64_000)
    finally:
        churn.cancel()
    assert inserted > 1  # the read paused, and the cell changed meanwhile
    texts = [
        o["text"] for o in json.loads(text)["cells"][0]["outputs"] if "[…" not in o["text"]
    ]  # not cut ones
    new = [t for t in texts if t.startswith("new")]
    assert new == [f"new {n}\n" for n in reversed(range(len(new)))]
    assert texts[len(new) :] == [f"tick {n}\n" for n in range(len(texts) - len(new))]


async def test_a_notebook_of_thousands_of_cells_is_read_in_part_with_where_to_go_on(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("long.ipynb", cells=[f"x{n} = {n}  # a line of code" for n in range(3000)])
    async with connect(server_url, jp_auth_header) as agent:
        text = (await agent.read_resource(notebook_uri(path))).contents[0].text
    assert len(text.encode()) <= 64_000
    notebook = nbformat.reads(text, as_version=4)
    given = len(notebook.cells)
    assert 100 < given < 3000
    assert [c.source for c in notebook.cells] == [f"x{n} = {n}  # a line of code" for n in range(given)]
    assert f"read_cells with start={given}" in notebook.metadata["jupyter_mcp_ext"]["cut"]


@asynccontextmanager
async def listening_client(
    server_url: str, headers: dict[str, str]
) -> AsyncIterator[tuple[Client, list[str]]]:
    """A handshake-era client that records the URIs of resource-updated notifications it receives."""
    updated: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(message.params.uri)

    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60))
    transport = streamable_http_client(f"{server_url}mcp", http_client=http)
    async with http, Client(transport, mode="legacy", message_handler=on_message) as client:
        yield client, updated


async def wait_until(condition, timeout: float = 5.0) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await asyncio.sleep(0.05)


async def test_subscriber_hears_of_a_persons_and_an_agents_edits(server_url, jp_auth_header, make_notebook):
    path = make_notebook("watched folder/nb.ipynb", cells=["x = 1"])
    uri = notebook_uri(path)
    async with (
        listening_client(server_url, jp_auth_header) as (client, updated),
        YPeer(server_url, jp_auth_header, path) as person,
    ):
        assert client.server_capabilities.resources.subscribe
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated in 2026, still the handshake-era way
            await client.subscribe_resource(uri)
        await asyncio.sleep(0.4)  # nothing changed: nothing is sent
        assert updated == []

        person.insert_text(0, 5, "0")
        person.insert_text(0, 6, "0")  # two keystrokes, one notification
        await person.flush()
        await wait_until(lambda: updated == [uri])

        cell_id = (await ok(client, "get_notebook", path=path))["cells"][0]["id"]
        await ok(client, "update_cell", path=path, cell_id=cell_id, source="x = 2")
        await wait_until(lambda: len(updated) == 2)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.unsubscribe_resource(uri)
        person.insert_text(0, 0, "# ")
        await person.flush()
        await asyncio.sleep(0.8)
        assert len(updated) == 2


async def test_subscriber_hears_of_a_change_on_disk_when_no_room_is_open(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook("disk.ipynb", cells=["x = 1"])
    async with listening_client(server_url, jp_auth_header) as (client, updated):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.subscribe_resource(notebook_uri(path))
        await asyncio.sleep(0.3)  # the watcher has seen the file as it was
        make_notebook("disk.ipynb", cells=["x = 2"])
        await wait_until(lambda: updated == [notebook_uri(path)])


async def test_stateless_client_listens_for_updates(server_url, jp_auth_header, make_notebook):
    path = make_notebook("listen.ipynb", cells=["x = 1"])
    uri = notebook_uri(path)
    async with (
        connect(server_url, jp_auth_header, STATELESS) as client,
        YPeer(server_url, jp_auth_header, path) as person,
        client.listen(resource_subscriptions=[uri]) as subscription,
    ):
        person.insert_text(0, 5, "0")
        await person.flush()
        with anyio.fail_after(5):
            event = await anext(aiter(subscription))
        assert event.uri == uri
