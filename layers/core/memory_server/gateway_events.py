"""API Gateway HTTP API (payload v2) plumbing shared by the MCP and admin routes."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# A workspace slug as the schema allows it (memory.workspaces.slug).
SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"
SLUG = re.compile(SLUG_PATTERN)


@dataclass(frozen=True, slots=True)
class TokenIdentity:
    """Who the verified access token says is calling, and with which scopes."""

    subject: str
    scopes: list[str]


def token_identity(event: Mapping[str, Any]) -> TokenIdentity | None:
    """Identity only from ``requestContext.authorizer.jwt`` (what the authorizer verified).

    ``None`` when there is no verified access token (ID tokens are not accepted).
    """
    jwt = (event.get("requestContext", {}).get("authorizer") or {}).get("jwt") or {}
    claims = jwt.get("claims") or {}
    subject = claims.get("sub")
    if not subject or claims.get("token_use", "access") != "access":
        return None
    scopes = jwt.get("scopes") or str(claims.get("scope", "")).split()
    return TokenIdentity(str(subject), list(scopes))


def json_response(
    status: int, body: Any, headers: Mapping[str, str] | None = None
) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"content-type": "application/json", **(headers or {})},
        "body": json.dumps(body, separators=(",", ":")),
    }


def empty_response(status: int, headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"statusCode": status, "headers": dict(headers or {}), "body": ""}


def request_body(event: Mapping[str, Any]) -> bytes:
    """The request body as bytes (API Gateway base64-encodes non-text bodies)."""
    raw = event.get("body") or ""
    return base64.b64decode(raw) if event.get("isBase64Encoded") else str(raw).encode("utf-8")


def request_headers(event: Mapping[str, Any]) -> dict[str, str]:
    """Request headers with lower-case names (HTTP names are case-insensitive)."""
    return {k.lower(): v for k, v in (event.get("headers") or {}).items()}
