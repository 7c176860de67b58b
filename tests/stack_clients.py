"""Clients of the shared local stack over HTTP, for the tests that drive it as people and
agents do: a pool user with a token, the admin API, the MCP endpoint, the token
endpoint."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES

from tests.tls import TLS

ALL_SCOPES = [GRANT_SCOPES[g] for g in ALL_GRANTS]


def person(stack: Any, name: str, scopes: list[str] = ALL_SCOPES) -> tuple[str, str]:
    """A pool user and an access token for them: (sub, token)."""
    sub = stack.aws.create_user(name)
    token = stack.gateway.local_issuer.issue_access_token(
        sub=sub, client_id=stack.aws.provisioned.people_client_id, scopes=scopes, username=name
    )
    return sub, token


def admin(stack: Any, token: str, workspace: str) -> httpx2.Client:
    return httpx2.Client(
        base_url=f"{stack.info['api_url']}/w/{workspace}/admin",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
        verify=TLS,
    )


def mcp_tools(stack: Any, token: str, workspace: str) -> set[str]:
    async def listing() -> set[str]:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=30, verify=TLS
        )
        url = f"{stack.info['api_url']}/w/{workspace}/mcp"
        async with (
            http,
            Client(streamable_http_client(url, http_client=http), cache=None) as client,
        ):  # type: ignore[arg-type]
            return {tool.name for tool in (await client.list_tools()).tools}

    return asyncio.run(listing())


def mcp_status(stack: Any, token: str, workspace: str) -> int:
    response = httpx2.post(
        f"{stack.info['api_url']}/w/{workspace}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2025-11-25"},
        verify=TLS,
    )
    return response.status_code


def client_token(stack: Any, client_id: str, secret: str) -> httpx2.Response:
    return httpx2.post(
        f"{stack.info['api_url']}/oauth2/token",
        data={"grant_type": "client_credentials"},
        auth=(client_id, secret),
        verify=TLS,
    )
