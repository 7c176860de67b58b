"""The HTTP API's Lambda REQUEST authorizer (payload 2.0, simple responses).

API Gateway calls it before the MCP and admin routes, with the request's
``Authorization`` header and route key as identity sources (the result cache key),
and answers the client itself from what it returns:

- no ``Authorization`` header: 401, without calling it;
- a token that is missing, malformed, not an access token of the user pool, expired
  or not yet valid, or bound (``aud``, RFC 8707) to another resource: it fails with
  ``Unauthorized`` (:class:`~memory_server.domain.errors.TokenRefused`), API Gateway answers
  401 ``{"message":"Unauthorized"}``;
- a valid token without the route's scope (:data:`ROUTE_SCOPES`): ``isAuthorized``
  false, API Gateway answers 403 ``{"message":"Forbidden"}``;
- otherwise ``isAuthorized`` true with the context the handler reads
  (:func:`~memory_server.gateway.events.token_identity`): ``sub``, ``client_id``,
  ``scope``, ``token_use``, ``exp`` and, for a bound token, ``aud``.

It accepts tokens of every app client of the pool (people's clients, agent keys,
self-registered MCP clients): there is no client list to keep. Whether the caller is
a member of the workspace, and whether an agent key is revoked, is decided by the
handler's database check on every request, so neither waits for the cache; nor does
the token's expiry, which the handler checks against ``exp`` on every request.

It makes no AWS call and imports no AWS SDK (cold start: PyJWT and the key set fetch
only); the MCP function records registered clients' use (``registry.UsageRecorder``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memory_server.domain.errors import TokenRefused
from memory_server.domain.grants import SCOPE_GRANTS
from memory_server.domain.limits import TOKEN_LEEWAY_S
from memory_server.gateway.events import request_headers, resource_url
from memory_server.signin.verify import KeySet, bearer_token, token_audiences, verify_access_token

logger = logging.getLogger(__name__)

MCP_ROUTE_KEY = "ANY /w/{workspace}/mcp"
ADMIN_ROUTE_KEY = "ANY /w/{workspace}/admin/{proxy+}"
# The scope each authorized route needs (None: any one memory/* scope). The same
# requirements as auth.MCP_GATE and auth.ADMIN_GATE, which the handler checks again
# (a test holds the two together; this module must not import the database code).
ROUTE_SCOPES: dict[str, str | None] = {MCP_ROUTE_KEY: None, ADMIN_ROUTE_KEY: "memory/admin"}
# What the template sets (JWKS_URL, optional, is for development).
ENVIRONMENT = ("AUTH_ISSUER", "PUBLIC_BASE_URL")


def authorizer_context(
    sub: str,
    client_id: str,
    scopes: list[str] | tuple[str, ...],
    audiences: tuple[str, ...] = (),
    *,
    expires_at: int,
) -> dict[str, str]:
    """The context an allowed request carries to the handler (all values strings).

    ``exp`` goes with it because API Gateway reuses this decision for as long as it
    caches it, which may outlive the token: the handler refuses an expired one.
    """
    context = {
        "sub": sub,
        "client_id": client_id,
        "scope": " ".join(scopes),
        "token_use": "access",
        "exp": str(expires_at),
    }
    if audiences:
        context["aud"] = " ".join(audiences)
    return context


@dataclass
class TokenAuthorizer:
    issuer: str  # the user pool's issuer URL (``iss``)
    keys: KeySet
    public_base_url: str | None = None  # as the MCP function's PUBLIC_BASE_URL
    leeway_s: float = TOKEN_LEEWAY_S

    def authorize(self, event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
        try:
            return self._decide(event)
        except TokenRefused as refused:
            logger.info("token refused: %s", refused.reason)
            raise

    def _decide(self, event: Mapping[str, Any]) -> dict[str, Any]:
        token = bearer_token(request_headers(event).get("authorization"))
        if token is None:
            raise TokenRefused("no bearer token")
        claims = verify_access_token(
            token, issuer=self.issuer, keys=self.keys, leeway_s=self.leeway_s
        )
        audiences = token_audiences(claims)
        if audiences:
            workspace = str((event.get("pathParameters") or {}).get("workspace", ""))
            if resource_url(event, workspace, self.public_base_url) not in audiences:
                raise TokenRefused("the token is bound to another resource")
        route = str(event.get("routeKey", ""))
        scopes = str(claims.get("scope", "")).split()
        if route not in ROUTE_SCOPES:
            logger.warning("authorizer attached to an unexpected route %s", route)
            return {"isAuthorized": False}
        required = ROUTE_SCOPES[route]
        if required is None:
            allowed = any(scope in SCOPE_GRANTS for scope in scopes)
        else:
            allowed = required in scopes
        if not allowed:
            return {"isAuthorized": False}
        return {
            "isAuthorized": True,
            "context": authorizer_context(
                claims["sub"], claims["client_id"], scopes, audiences, expires_at=int(claims["exp"])
            ),
        }


def build_authorizer(env: Mapping[str, str] = os.environ) -> TokenAuthorizer:
    """The authorizer the template configures: ``AUTH_ISSUER`` (the pool's issuer),
    ``JWKS_URL`` (default: the issuer's ``/.well-known/jwks.json``), ``PUBLIC_BASE_URL``."""
    issuer = env["AUTH_ISSUER"].rstrip("/")
    keys = KeySet(env.get("JWKS_URL") or f"{issuer}/.well-known/jwks.json")
    return TokenAuthorizer(issuer, keys, env.get("PUBLIC_BASE_URL") or None)
