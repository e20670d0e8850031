"""``tools/list`` follows Jupyter's authorizer: what the caller may not use is marked, or left out."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jupyter_server.auth import Authorizer
from traitlets.config import Config

from jupyter_mcp_ext.tools import ALL

from ..support.mcp_client import connect, fails


class ReadOnlyAuthorizer(Authorizer):
    """What a JupyterHub token with only the read scope amounts to."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return action == "read"


async def test_everything_is_listed_plainly_for_a_user_who_may_do_everything(server_url, jp_auth_header):
    async with connect(server_url, jp_auth_header) as client:
        tools = (await client.list_tools()).tools
    assert not [t.name for t in tools if "NOT PERMITTED" in t.description]


class TestReadOnly:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Config) -> Config:
        jp_server_config.ServerApp.authorizer_class = ReadOnlyAuthorizer
        return jp_server_config

    async def test_tools_the_caller_may_not_use_are_marked_with_the_permission(
        self, server_url, jp_auth_header
    ):
        async with connect(server_url, jp_auth_header) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            message = await fails(client, "write_file", path="a.txt", content="x")
        assert tools["write_file"].description.startswith("NOT PERMITTED for you (needs write contents). ")
        assert tools["execute_cells"].description.startswith(
            "NOT PERMITTED for you (needs execute kernels, write contents). "
        )
        assert tools["read_cells"].description == tools["read_cells"].description.lstrip("NOT")
        assert "may not write contents" in message  # the call is refused as the listing says
        # Marked tools say less, so a restricted agent's listing costs fewer bytes, not more.
        assert size([*tools.values()]) < size([spec.definition() for spec in ALL])


def size(tools: list[Any]) -> int:
    return len(json.dumps([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]))


class TestReadOnlyHidden:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Config) -> Config:
        jp_server_config.ServerApp.authorizer_class = ReadOnlyAuthorizer
        jp_server_config.MCPExtensionApp.hide_forbidden_tools = True
        return jp_server_config

    async def test_a_setting_leaves_them_out(self, server_url, jp_auth_header):
        async with connect(server_url, jp_auth_header) as client:
            names = {t.name for t in (await client.list_tools()).tools}
        assert {"get_notebook", "read_cells", "list_notebooks", "read_file", "list_kernels"} <= names
        assert not names & {"update_cell", "write_file", "execute_code", "execute_cells", "restart_kernel"}
