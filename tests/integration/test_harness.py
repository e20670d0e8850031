"""The test harness itself: a real server with collaboration, and YPeer as a browser tab."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import nbformat
import pytest

from ..support.yclient import PeerDisconnected, YPeer


async def _wait_on_disk(file: Path, sources: list[str], timeout: float = 10.0) -> None:
    """Poll the file: the disk has no change events to observe."""
    deadline = time.monotonic() + timeout
    found: list[str] = []
    while time.monotonic() < deadline:
        try:
            found = [cell.source for cell in nbformat.read(file, as_version=4).cells]
        except Exception:  # caught mid-write
            found = []
        if found == sources:
            return
        await anyio.sleep(0.1)
    raise AssertionError(f"{file} has {found!r}, expected {sources!r}")


async def test_two_peers_see_each_others_edits(
    server_url: str, jp_auth_header: dict[str, str], make_notebook: Any
) -> None:
    path = make_notebook("dir/nb one.ipynb", cells=["a = 1", {"cell_type": "markdown", "source": "# T"}])
    async with (
        YPeer(server_url, jp_auth_header, path) as alice,
        YPeer(server_url, jp_auth_header, path) as bob,
    ):
        assert alice.room_id == bob.room_id
        assert alice.sources() == bob.sources() == ["a = 1", "# T"]
        assert bob.notebook.get_cell(1)["cell_type"] == "markdown"

        alice.notebook.set_cell(0, source="a = 10")
        await bob.wait_for(lambda nb: str(nb.ycells[0]["source"]) == "a = 10")

        bob.insert_text(1, 3, "é😀 ")  # multi-byte text, typed mid-line
        await alice.wait_for(lambda nb: str(nb.ycells[1]["source"]) == "# Té😀 ")

        # Bob joined last, so Alice hears about his presence (not the other way round).
        user = await alice.wait_for(
            lambda _: [s["user"] for s in alice.remote_states().values() if "user" in s]
        )
        assert user[0]["name"] == bob.user["name"]


async def test_peer_edit_reaches_disk(
    server_url: str, jp_auth_header: dict[str, str], make_notebook: Any, jp_root_dir: Path
) -> None:
    path = make_notebook("nb.ipynb", cells=["x = 1"], minor=4)
    async with YPeer(server_url, jp_auth_header, path) as peer:
        peer.notebook.set_cell(0, source="x = 2")
        await _wait_on_disk(jp_root_dir / path, ["x = 2"])
    assert nbformat.read(jp_root_dir / path, as_version=4).nbformat_minor == 4


async def test_server_side_document_and_peer_share_edits(
    server_url: str,
    jp_auth_header: dict[str, str],
    make_notebook: Any,
    ydoc_extension: Any,
    jp_root_dir: Path,
) -> None:
    path = make_notebook("shared.ipynb", cells=["first", "second"])
    async with YPeer(server_url, jp_auth_header, path) as peer:
        ynb = await ydoc_extension.get_document(
            path=path, content_type="notebook", file_format="json", copy=False, create=True
        )
        assert [str(c["source"]) for c in ynb.ycells] == ["first", "second"]

        peer.notebook.set_cell(1, source="second, edited by the peer")
        await peer.flush()  # after this the server must already have it
        assert str(ynb.ycells[1]["source"]) == "second, edited by the peer"

        with ynb.ydoc.transaction():
            ynb.set_cell(0, source="first, edited on the server")
            # A full nbformat cell: create_ycell adds no execution_count/outputs by itself.
            ynb.ycells.append(ynb.create_ycell(nbformat.v4.new_code_cell("third")))
        await peer.wait_for(lambda nb: nb.cell_number == 3)
        assert peer.sources() == [
            "first, edited on the server",
            "second, edited by the peer",
            "third",
        ]
        await _wait_on_disk(jp_root_dir / path, peer.sources())


async def test_peer_joins_a_room_created_server_side(
    server_url: str, jp_auth_header: dict[str, str], make_notebook: Any, ydoc_extension: Any
) -> None:
    """What an agent does when no browser has the notebook open yet."""
    path = make_notebook("agent.ipynb", cells=["one"])
    ynb = await ydoc_extension.get_document(
        path=path, content_type="notebook", file_format="json", copy=False, create=True
    )
    with ynb.ydoc.transaction():
        ynb.set_cell(0, source="one, before any browser")
    async with YPeer(server_url, jp_auth_header, path) as peer:
        assert peer.sources() == ["one, before any browser"]


async def test_missing_file_closes_the_room(server_url: str, jp_auth_header: dict[str, str]) -> None:
    """The session PUT hands out a file id even for a missing file; the room then says 4404."""
    peer = YPeer(server_url, jp_auth_header, "nope.ipynb")
    with pytest.raises(PeerDisconnected):
        async with peer:
            pass
    assert peer.close_code == 4404
