"""Where a path really is (documents/paths.real_path) is what ``os.path.realpath`` says, links in it
resolved on every call, found with one ``lstat`` per part of the path rather than of the root's path
too (issue 21)."""

from __future__ import annotations

import os

from jupyter_server.services.contents.filemanager import FileContentsManager

from jupyter_mcp_ext.documents.paths import real_path


def test_the_same_as_realpath_links_included(tmp_path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    root = tmp_path / "root"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "sub" / "a.ipynb").write_text("{}")
    (root / "file.txt").write_text("x")
    (root / "link.ipynb").symlink_to(root / "sub" / "a.ipynb")
    (root / "up").symlink_to(root)
    (root / "sub" / "out").symlink_to(outside)
    (tmp_path / "root-link").symlink_to(root)  # a root given through a link
    for given_root in (root, tmp_path / "root-link"):
        contents = FileContentsManager(root_dir=str(given_root))
        for api in (
            "",
            "sub/a.ipynb",
            "link.ipynb",
            "up/sub/a.ipynb",
            "sub/out/secret.txt",
            "missing.ipynb",
            "missing/deeper/x.ipynb",
            "file.txt/under",
            "sub/deeper",
        ):
            expected = os.path.realpath(os.path.join(str(given_root), *api.split("/")))
            assert real_path(api, contents) == expected, api
    (root / "link.ipynb").unlink()
    (root / "link.ipynb").symlink_to(outside / "secret.txt")  # a link changed: seen on the next call
    assert real_path("link.ipynb", FileContentsManager(root_dir=str(root))) == str(outside / "secret.txt")
