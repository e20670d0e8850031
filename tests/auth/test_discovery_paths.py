"""A server that owns its host answers every discovery URL an MCP client builds from its MCP URL,
each authorization server document naming the issuer the client derived (RFC 8414), so a client
that finds no resource metadata and takes the MCP URL for the issuer still signs in.

The same paths through JupyterHub's proxy and the Hub's discovery service: tests/hub/test_hub_agents.py.
"""

from __future__ import annotations

import httpx
import pytest
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    validate_metadata_issuer,
)
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from traitlets.config import Config


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    jp_server_config.MCPExtensionApp.oauth = True
    return jp_server_config


@pytest.mark.parametrize("issuer_path", ["mcp", "oauth"])
async def test_each_authorization_server_url_the_sdk_builds_answers_with_its_issuer(server_url, issuer_path):
    issuer = f"{server_url}{issuer_path}"
    urls = build_oauth_authorization_server_metadata_discovery_urls(issuer, f"{server_url}mcp")
    assert len(urls) == 3  # /.well-known/<kind><path> twice, then <path>/.well-known/openid-configuration
    urls.append(f"{issuer}/.well-known/oauth-authorization-server")
    async with httpx.AsyncClient(timeout=30) as http:
        for url in urls:
            got = await http.get(url)
            assert got.status_code == 200, (url, got.status_code, got.text[:300])
            meta = OAuthMetadata.model_validate_json(got.content)
            validate_metadata_issuer(meta, issuer)
            assert str(meta.token_endpoint) == f"{server_url}oauth/token", url


async def test_each_resource_metadata_url_the_sdk_builds_from_the_mcp_url_answers(server_url):
    urls = build_protected_resource_metadata_discovery_urls(None, f"{server_url}mcp")
    urls = [urls[0], f"{server_url}mcp/.well-known/oauth-protected-resource"]  # the root one is the host's
    async with httpx.AsyncClient(timeout=30) as http:
        for url in urls:
            got = await http.get(url)
            assert got.status_code == 200, (url, got.status_code, got.text[:300])
            prm = ProtectedResourceMetadata.model_validate_json(got.content)
            assert str(prm.resource) == f"{server_url}mcp", url
            assert [str(a) for a in prm.authorization_servers] == [f"{server_url}oauth"], url
