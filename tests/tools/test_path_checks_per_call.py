"""Path checks are made again on every call (issue 21 made them cheaper, never remembered).

What a call resolves (where the file really is, links followed) is used for that call only; the
deny-list's answer is kept per path text, which no change on disk can alter. So a path that was
fine on one call and is a link to a secret on the next is refused on the next.
"""

from __future__ import annotations

from ..support.mcp_client import connect, fails, ok


async def test_a_path_allowed_once_is_refused_once_it_leads_to_a_secret(
    server_url, jp_auth_header, jp_root_dir
):
    (jp_root_dir / ".env").write_text("API_KEY=s3cr3t")
    notes = jp_root_dir / "notes.txt"
    notes.write_text("ordinary")
    async with connect(server_url, jp_auth_header) as agent:
        assert "ordinary" in (await ok(agent, "read_file", path="notes.txt"))["content"]
        notes.unlink()
        notes.symlink_to(".env")  # the same name, now a link to a secret
        message = await fails(agent, "read_file", path="notes.txt")
        assert "denied_files" in message and "s3cr3t" not in message
        notes.unlink()
        notes.symlink_to("/etc/hostname")  # now out of the root
        assert "outside" in await fails(agent, "read_file", path="notes.txt")


async def test_a_notebook_path_that_becomes_a_link_to_a_secret_is_refused(
    server_url, jp_auth_header, jp_root_dir, make_notebook
):
    path = make_notebook("work.ipynb", cells=["x = 1"])
    secret = make_notebook("aws_credentials.ipynb", cells=["key = 'AKIA'"])
    async with connect(server_url, jp_auth_header) as agent:
        cell = (await ok(agent, "get_notebook", path=path))["cells"][0]["id"]
        await ok(agent, "update_cell", path=path, cell_id=cell, source="x = 2")
        (jp_root_dir / "work.ipynb").rename(jp_root_dir / "old.ipynb")
        (jp_root_dir / "work.ipynb").symlink_to(secret)
        for tool, extra in (("get_notebook", {}), ("insert_cells", {"cells": [{"source": "y"}]})):
            assert "denied_files" in await fails(agent, tool, path=path, **extra)
