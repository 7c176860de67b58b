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
    client_id: str | None = None
    # RFC 8707: the resources the token is bound to (its ``aud``); empty when unbound.
    audiences: tuple[str, ...] = ()
    # The token's ``exp`` (seconds since the epoch): the authorizer's decision may be
    # reused from its cache after it.
    expires_at: int = 0


def token_identity(event: Mapping[str, Any]) -> TokenIdentity | None:
    """Identity only from ``requestContext.authorizer.lambda``: the context the Lambda
    authorizer (:mod:`memory_server.signin.authorizer`) returned after verifying the token.

    ``None`` when there is no verified access token, or the context does not say when
    it expires. The context's values are strings: ``scope`` and ``aud`` are
    space-separated lists, ``exp`` an integer.
    """
    verified = (event.get("requestContext", {}).get("authorizer") or {}).get("lambda") or {}
    subject = verified.get("sub")
    if not subject or verified.get("token_use", "access") != "access":
        return None
    try:
        expires_at = int(str(verified.get("exp")))
    except ValueError:
        return None
    return TokenIdentity(
        str(subject),
        str(verified.get("scope") or "").split(),
        str(verified["client_id"]) if verified.get("client_id") else None,
        tuple(str(verified.get("aud") or "").split()),
        expires_at,
    )


def base_url(event: Mapping[str, Any], configured: str | None) -> str:
    """The service's origin as clients reach it: ``PUBLIC_BASE_URL`` when set, else
    ``https://`` and the domain API Gateway received the request on."""
    if configured:
        return configured.rstrip("/")
    return f"https://{event.get('requestContext', {}).get('domainName', 'localhost')}"


def resource_url(event: Mapping[str, Any], workspace: str, configured: str | None) -> str:
    """The RFC 9728 / RFC 8707 resource identifier of a workspace's MCP endpoint."""
    return f"{base_url(event, configured)}/w/{workspace}/mcp"


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
