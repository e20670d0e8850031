"""A second hostile review of the person's controls (after issue 18's fixes): each test is a hole an
agent could use with MCP calls alone, closed."""

from __future__ import annotations

import os

import pytest
from mcp.shared.exceptions import MCPError
from traitlets.config import Config

from .mcp_client import connect


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path) -> Config:
    jp_server_config.MCPExtensionApp.policy_file = str(tmp_path / "state" / "policy.json")
    return jp_server_config


def _names_root(message: str, root: os.PathLike[str]) -> bool:
    return str(root) in message or os.path.realpath(root) in message


async def test_reading_a_broken_notebook_as_a_resource_never_names_the_server_folder(
    server_url, jp_auth_header, jp_root_dir
):
    (jp_root_dir / "broken.ipynb").write_text("{not json", encoding="utf-8")
    async with connect(server_url, jp_auth_header) as agent:
        with pytest.raises(MCPError) as raised:
            await agent.read_resource("notebook:///broken.ipynb")
    message = str(raised.value)
    assert "broken.ipynb" in message and "Unreadable" in message, message
    assert not _names_root(message, jp_root_dir), message


async def test_the_capabilities_resource_names_no_file_of_the_server(server_url, jp_auth_header, tmp_path):
    async with connect(server_url, jp_auth_header) as agent:
        text = (await agent.read_resource("jupyter://capabilities")).contents[0].text
    assert '"max_result_bytes"' in text
    assert str(tmp_path) not in text and "policy_file" not in text, text
