"""The authorizer's code on its own: the key set cache, token checks, route scopes and
the context it hands the handler."""

from __future__ import annotations

from typing import Any

import jwt
import pytest
from memory_local.tokens import LocalIssuer
from memory_server.domain.errors import KeySetUnavailable, TokenRefused
from memory_server.domain.limits import JWKS_REFETCH_MIN_S, JWKS_TTL_S
from memory_server.gateway import authenticate as auth
from memory_server.gateway.events import token_identity
from memory_server.signin.authorizer import (
    ADMIN_ROUTE_KEY,
    MCP_ROUTE_KEY,
    ROUTE_SCOPES,
    TokenAuthorizer,
    authorizer_context,
)
from memory_server.signin.verify import KeySet, bearer_token

ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_unit"
BASE = "https://api.example.com"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def issuer(tmp_path) -> LocalIssuer:  # type: ignore[no-untyped-def]
    return LocalIssuer(tmp_path / "key.pem", ISSUER)


def authorizer_event(token: str | None, route: str = MCP_ROUTE_KEY, workspace: str = "acme"):  # type: ignore[no-untyped-def]
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    path = f"/w/{workspace}/mcp" if route == MCP_ROUTE_KEY else f"/w/{workspace}/admin/members"
    return {
        "version": "2.0",
        "type": "REQUEST",
        "routeKey": route,
        "rawPath": path,
        "headers": headers,
        "pathParameters": {"workspace": workspace},
        "requestContext": {"domainName": "api.example.com", "http": {"method": "POST"}},
    }


def test_route_scopes_are_the_handlers_gates() -> None:
    assert ROUTE_SCOPES[MCP_ROUTE_KEY] == auth.MCP_GATE.scope is None
    assert ROUTE_SCOPES[ADMIN_ROUTE_KEY] == auth.ADMIN_GATE.scope == "memory/admin"


def test_the_key_set_is_cached_and_refetched_sparingly(issuer: LocalIssuer) -> None:
    clock = Clock()
    fetched: list[int] = []

    def source() -> dict[str, Any]:
        fetched.append(1)
        return issuer.jwks()

    keys = KeySet(source, clock=clock)
    assert keys.key(issuer.kid) is not None and keys.fetches == 1
    assert keys.key(issuer.kid) is not None and keys.fetches == 1
    # A made-up kid: no fetch until the minimum interval has passed, then one.
    assert keys.key("made-up") is None and keys.fetches == 1
    clock.now += JWKS_REFETCH_MIN_S
    assert keys.key("made-up") is None and keys.fetches == 2
    assert keys.key("made-up") is None and keys.fetches == 2
    # Stale after the TTL, whatever the kid.
    clock.now += JWKS_TTL_S
    assert keys.key(issuer.kid) is not None and keys.fetches == 3


def test_a_failing_key_endpoint_keeps_the_keys_it_had(issuer: LocalIssuer) -> None:
    clock = Clock()
    up = [True]

    def source() -> dict[str, Any]:
        if not up[0]:
            raise KeySetUnavailable("down")
        return issuer.jwks()

    keys = KeySet(source, clock=clock)
    assert keys.key(issuer.kid) is not None
    up[0] = False
    clock.now += JWKS_TTL_S
    assert keys.key(issuer.kid) is not None  # stale, but still the pool's key
    empty = KeySet(source, clock=clock)
    with pytest.raises(KeySetUnavailable):
        empty.key(issuer.kid)
    assert not empty.prefetch()
    unreachable = KeySet("http://127.0.0.1:9/jwks.json", clock=clock)
    with pytest.raises(KeySetUnavailable):
        unreachable.key(issuer.kid)


def test_bearer_header_forms() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer   abc ") == "abc"
    for refused in (None, "", "abc", "Basic abc", "Bearer", "Bearer a b"):
        assert bearer_token(refused) is None


def test_allowed_requests_carry_exactly_the_context_the_handler_reads(
    issuer: LocalIssuer,
) -> None:
    authorizer = TokenAuthorizer(ISSUER, KeySet(issuer.jwks), BASE)
    token = issuer.issue_access_token(
        sub="person-1", client_id="client-1", scopes=["memory/read", "openid"], username="p"
    )
    decision = authorizer.authorize(authorizer_event(token))
    exp = jwt.decode(token, options={"verify_signature": False})["exp"]
    assert decision == {
        "isAuthorized": True,
        "context": {
            "sub": "person-1",
            "client_id": "client-1",
            "scope": "memory/read openid",
            "token_use": "access",
            # The cached decision may outlive the token: the handler checks exp.
            "exp": str(exp),
        },
    }
    integration = {"requestContext": {"authorizer": {"lambda": decision["context"]}}}
    identity = token_identity(integration)
    assert identity is not None
    assert (
        identity.subject,
        identity.scopes,
        identity.client_id,
        identity.audiences,
        identity.expires_at,
    ) == ("person-1", ["memory/read", "openid"], "client-1", (), exp)


def test_route_scope_decides_allow_or_deny(issuer: LocalIssuer) -> None:
    authorizer = TokenAuthorizer(ISSUER, KeySet(issuer.jwks), BASE)
    reader = issuer.issue_access_token(sub="s", client_id="c", scopes=["memory/read"])
    admin = issuer.issue_access_token(sub="s", client_id="c", scopes=["memory/admin"])
    other = issuer.issue_access_token(sub="s", client_id="c", scopes=["openid", "profile"])
    assert authorizer.authorize(authorizer_event(reader))["isAuthorized"] is True
    assert authorizer.authorize(authorizer_event(admin))["isAuthorized"] is True
    assert authorizer.authorize(authorizer_event(other)) == {"isAuthorized": False}
    assert authorizer.authorize(authorizer_event(reader, ADMIN_ROUTE_KEY)) == {
        "isAuthorized": False
    }
    assert authorizer.authorize(authorizer_event(admin, ADMIN_ROUTE_KEY))["isAuthorized"] is True
    # A route it was never attached to is denied, whatever the token.
    assert authorizer.authorize(authorizer_event(admin, "GET /elsewhere")) == {
        "isAuthorized": False
    }


def test_invalid_tokens_fail_with_exactly_unauthorized(issuer: LocalIssuer) -> None:
    authorizer = TokenAuthorizer(ISSUER, KeySet(issuer.jwks), BASE)
    for token in (None, "x.y.z"):
        with pytest.raises(TokenRefused) as refused:
            authorizer.authorize(authorizer_event(token))
        # API Gateway turns exactly this message into its 401.
        assert str(refused.value) == "Unauthorized"
    bound = issuer.issue_access_token(
        sub="s", client_id="c", scopes=["memory/read"], audience=f"{BASE}/w/acme/mcp"
    )
    assert authorizer.authorize(authorizer_event(bound, workspace="acme"))["context"]["aud"] == (
        f"{BASE}/w/acme/mcp"
    )
    with pytest.raises(TokenRefused, match="Unauthorized"):
        authorizer.authorize(authorizer_event(bound, workspace="globex"))
    # Without PUBLIC_BASE_URL the resource is the request's own https origin.
    plain = TokenAuthorizer(ISSUER, KeySet(issuer.jwks))
    assert plain.authorize(authorizer_event(bound, workspace="acme"))["isAuthorized"] is True


def test_authorizer_context_shape() -> None:
    assert authorizer_context("s", "c", ["a", "b"], ("https://r",), expires_at=1_900_000_000) == {
        "sub": "s",
        "client_id": "c",
        "scope": "a b",
        "token_use": "access",
        "exp": "1900000000",
        "aud": "https://r",
    }

    def lambda_context(**values: str) -> dict[str, object]:
        return {"requestContext": {"authorizer": {"lambda": values}}}

    # The handler refuses a context without a subject, for another token use, or that
    # does not say when the token expires.
    assert token_identity(lambda_context(scope="x", exp="1900000000")) is None
    assert token_identity(lambda_context(sub="s", token_use="id", exp="1900000000")) is None
    assert token_identity(lambda_context(sub="s")) is None
    assert token_identity(lambda_context(sub="s", exp="tomorrow")) is None
    found = token_identity(lambda_context(sub="s", exp="1900000000"))
    assert found is not None and found.expires_at == 1_900_000_000
    # The old JWT authorizer's shape is not read any more.
    jwt_shaped = {"requestContext": {"authorizer": {"jwt": {"claims": {"sub": "s"}}}}}
    assert token_identity(jwt_shaped) is None


def test_the_authorizer_imports_no_aws_sdk() -> None:
    # Its cold start is PyJWT and one key-set fetch; boto3 would add most of a second.
    import subprocess
    import sys

    probe = (
        "import sys, memory_server.signin.authorizer as a; a.build_authorizer("
        "{'AUTH_ISSUER': 'https://issuer.example'}); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore', "
        "'psycopg', 'pydantic')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
