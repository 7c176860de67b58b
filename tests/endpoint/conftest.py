"""An in-process endpoint: the real service over the test database, fed v2 events."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from memory_server.service import McpService, Settings
from memory_server.signin.authorizer import authorizer_context


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
    raw_path = path or f"/w/{workspace}/mcp"
    authorizer = (
        {"lambda": authorizer_context(sub, "test-client", scopes)} if sub is not None else None
    )
    return {
        "version": "2.0",
        "routeKey": "ANY /w/{workspace}/mcp",
        "rawPath": raw_path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json", **(headers or {})},
        "pathParameters": {"workspace": workspace},
        "requestContext": {
            "http": {"method": method, "path": raw_path},
            "requestId": str(uuid.uuid4()),
            "domainName": "api.example.com",
            **({"authorizer": authorizer} if authorizer else {}),
        },
        "body": body if isinstance(body, str) or body is None else json.dumps(body),
        "isBase64Encoded": False,
    }


@pytest.fixture(scope="session")
def service(database) -> McpService:  # type: ignore[no-untyped-def]
    settings = Settings(database_url="unused", cursor_secret=b"c" * 32)
    return McpService(settings, database)
