"""An in-process endpoint: the real service over the test database, fed v2 events."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from memory_server.edge.service import McpService, Settings
from memory_server.signin.authorizer import authorizer_context


def api_event(
    route_key: str,
    raw_path: str,
    path_parameters: dict[str, str],
    *,
    sub: str | None,
    scopes: Sequence[str],
    method: str,
    headers: dict[str, str] | None = None,
    query: str = "",
    body: Any = None,
    client_id: str = "test-client",
) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event for ``route_key``, as API Gateway passes it on:
    with the Lambda authorizer's context for ``sub`` and ``scopes`` (none for ``sub``
    None; a client-credentials token's ``client_id`` is its ``sub``); a ``body`` that
    is not a string is sent as JSON."""
    expires_at = int(time.time()) + 3600  # the token's exp: an hour ahead
    authorizer = (
        {"lambda": authorizer_context(sub, client_id, list(scopes), expires_at=expires_at)}
        if sub is not None
        else None
    )
    return {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": raw_path,
        "rawQueryString": query,
        "headers": {"content-type": "application/json", **(headers or {})},
        "pathParameters": path_parameters,
        "requestContext": {
            "http": {"method": method, "path": raw_path},
            "requestId": str(uuid.uuid4()),
            "domainName": "api.example.com",
            **({"authorizer": authorizer} if authorizer else {}),
        },
        "body": body if isinstance(body, str) or body is None else json.dumps(body),
        "isBase64Encoded": False,
    }


def event(
    workspace: str,
    *,
    sub: str | None,
    scopes: list[str],
    body: Any = None,
    method: str = "POST",
    headers: dict[str, str] | None = None,
    path: str | None = None,
) -> dict[str, Any]:
    return api_event(
        "ANY /w/{workspace}/mcp",
        path or f"/w/{workspace}/mcp",
        {"workspace": workspace},
        sub=sub,
        scopes=scopes,
        method=method,
        headers=headers,
        body=body,
    )


def tool_params(tool: str, **arguments: Any) -> dict[str, Any]:
    """The params of a ``tools/call``."""
    return {"name": tool, "arguments": arguments}


def tool_call(tool: str, **arguments: Any) -> dict[str, Any]:
    """A JSON-RPC ``tools/call`` request body."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": tool_params(tool, **arguments),
    }


def metadata_event(workspace: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """An anonymous ``GET`` of the workspace's RFC 9728 protected-resource metadata."""
    return event(
        workspace,
        sub=None,
        scopes=[],
        method="GET",
        path=f"/.well-known/oauth-protected-resource/w/{workspace}/mcp",
        headers=headers,
    )


@pytest.fixture(scope="session")
def service(database) -> McpService:  # type: ignore[no-untyped-def]
    settings = Settings(database_url="unused", cursor_secret=b"c" * 32)
    return McpService(settings, database)
