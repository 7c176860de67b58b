"""Sign-in over HTTP on the emulator: the management function's discovery and
registration routes, the product's authorization endpoint for loopback redirects
(straight on to the pool; its consent page: tests/local/test_consent.py), and the local
stand-in for the user pool's authorize and token endpoints (authorization code with
PKCE, required; the sign-in page, login_hint, refresh)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
import pytest
from memory_local.aws import LocalAws
from memory_local.gateway import ApiGateway
from memory_local.tokens import LocalIssuer
from memory_server.admin.identity import CognitoDirectory
from memory_server.signin.authorization import Authorization, PoolClients
from memory_server.signin.management import Management
from memory_server.signin.registry import SigninTable

from .conftest import Response, echo_handler, request

FORM = ("Content-Type", "application/x-www-form-urlencoded")
REDIRECT = "http://127.0.0.1:43999/callback"


@pytest.fixture(scope="module")
def signin(local_aws: LocalAws, issuer: LocalIssuer) -> Iterator[ApiGateway]:
    provisioned = local_aws.provisioned
    gateway = ApiGateway(echo_handler, issuer=issuer, aws=local_aws, quiet=True).start()
    management = Management(
        cognito=CognitoDirectory(local_aws.client("cognito-idp"), provisioned.user_pool_id),
        table=SigninTable(local_aws.client("dynamodb"), provisioned.signin_table),
        oauth_base_url=gateway.url,
        public_base_url=gateway.url,
        # An hour of its own, so these registrations use no one else's rate budget.
        clock=lambda: 3_000_000_000.0,
    )
    gateway.management = management.route
    gateway.authorization = Authorization(
        clients=PoolClients(local_aws.client("cognito-idp"), provisioned.user_pool_id),
        pool_authorize_url=f"{gateway.url}/oauth2/authorize",
        key=b"k" * 32,
        public_base_url=gateway.url,
    ).route
    try:
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture(scope="module")
def alice_sub(local_aws: LocalAws) -> str:
    return local_aws.create_user("alice")


def registered(gateway: ApiGateway, **metadata: Any) -> dict[str, Any]:
    body = json.dumps({"redirect_uris": [REDIRECT], "client_name": "tests", **metadata})
    response = request(
        gateway.url,
        "POST",
        "/register",
        headers=[("Content-Type", "application/json")],
        body=body.encode(),
    )
    assert response.status == 201, response.body
    return dict(response.json())


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def authorize(gateway: ApiGateway, **params: str) -> Response:
    return request(gateway.url, "GET", "/oauth2/authorize?" + urlencode(params))


def redirected(response: Response) -> dict[str, str]:
    assert response.status == 302, response.body
    location = response.header("Location") or ""
    assert location.startswith(REDIRECT), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def alice_code(gateway: ApiGateway, client_id: str, challenge: str) -> str:
    """The code an authorization request (PKCE S256, no scope or resource) redirects
    with, alice signed in by ``login_hint``."""
    return redirected(
        authorize(
            gateway,
            response_type="code",
            client_id=client_id,
            redirect_uri=REDIRECT,
            code_challenge=challenge,
            code_challenge_method="S256",
            login_hint="alice",
        )
    )["code"]


def token(gateway: ApiGateway, **form: str) -> Response:
    return request(
        gateway.url, "POST", "/oauth2/token", headers=[FORM], body=urlencode(form).encode()
    )


def test_discovery_is_served_by_the_product(signin: ApiGateway) -> None:
    response = request(signin.url, "GET", "/.well-known/oauth-authorization-server")
    assert response.status == 200
    doc = response.json()
    assert doc["issuer"] == signin.url
    assert doc["authorization_endpoint"] == f"{signin.url}/authorize"  # the product's own
    assert doc["token_endpoint"] == f"{signin.url}/token"
    assert doc["registration_endpoint"] == f"{signin.url}/register"
    assert doc["code_challenge_methods_supported"] == ["S256"]


def test_code_flow_with_pkce_login_hint_resource_and_refresh(
    signin: ApiGateway, alice_sub: str
) -> None:
    client = registered(signin)
    verifier, challenge = pkce()
    resource = f"{signin.url}/w/acme/mcp"
    answer = redirected(
        authorize(
            signin,
            response_type="code",
            client_id=client["client_id"],
            redirect_uri=REDIRECT,
            state="st-1",
            code_challenge=challenge,
            code_challenge_method="S256",
            scope="memory/read memory/write.personal",
            resource=resource,
            login_hint="alice",
        )
    )
    assert answer["state"] == "st-1" and "iss" not in answer  # as Cognito: no RFC 9207 iss
    exchange = dict(
        grant_type="authorization_code",
        code=answer["code"],
        redirect_uri=REDIRECT,
        client_id=client["client_id"],
        code_verifier=verifier,
        resource=resource,
    )
    issued = token(signin, **exchange)
    assert issued.status == 200, issued.body
    assert issued.header("Cache-Control") == "no-store"
    tokens = issued.json()
    claims = jwt.decode(tokens["access_token"], options={"verify_signature": False})
    assert claims["sub"] == alice_sub and claims["username"] == "alice"
    assert claims["client_id"] == client["client_id"] and claims["token_use"] == "access"
    assert claims["scope"] == "memory/read memory/write.personal"
    assert claims["aud"] == resource  # RFC 8707, as Cognito binds it
    # The token passes the gateway's authorizer for that workspace only (asked about
    # globex first: afterwards the cached decision would let it through to the handler,
    # which refuses it, see tests/endpoint/test_token_binding.py).
    assert request(signin.url, "GET", "/w/globex/mcp", token=tokens["access_token"]).status == 401
    event = json.loads(
        request(signin.url, "GET", "/w/acme/mcp", token=tokens["access_token"]).body
    )["event"]
    assert event["requestContext"]["authorizer"]["lambda"]["aud"] == resource
    # A code is good once.
    again = token(signin, **exchange)
    assert (again.status, again.json()["error"]) == (400, "invalid_grant")
    # Refresh: a new access token for the same sign-in.
    refreshed = token(
        signin,
        grant_type="refresh_token",
        refresh_token=tokens["refresh_token"],
        client_id=client["client_id"],
    )
    assert refreshed.status == 200, refreshed.body
    again_claims = jwt.decode(refreshed.json()["access_token"], options={"verify_signature": False})
    assert (again_claims["sub"], again_claims["aud"]) == (alice_sub, resource)
    other = registered(signin)
    stolen = token(
        signin,
        grant_type="refresh_token",
        refresh_token=tokens["refresh_token"],
        client_id=other["client_id"],
    )
    assert (stolen.status, stolen.json()["error"]) == (400, "invalid_grant")


def test_code_exchange_checks(signin: ApiGateway) -> None:
    client = registered(signin)
    verifier, challenge = pkce()

    def fresh_code() -> str:
        return alice_code(signin, client["client_id"], challenge)

    base = dict(
        grant_type="authorization_code",
        redirect_uri=REDIRECT,
        client_id=client["client_id"],
        code_verifier=verifier,
    )
    cases: dict[str, tuple[dict[str, str], int, str]] = {
        "wrong verifier": ({"code_verifier": pkce()[0]}, 400, "invalid_grant"),
        "no verifier": ({"code_verifier": ""}, 400, "invalid_grant"),
        "other redirect": ({"redirect_uri": "http://127.0.0.1:1/cb"}, 400, "invalid_grant"),
        "other client": ({"client_id": registered(signin)["client_id"]}, 400, "invalid_grant"),
        "a secret from a public client": ({"client_secret": "x"}, 401, "invalid_client"),
        "unknown client": ({"client_id": "nope"}, 401, "invalid_client"),
        "other resource": ({"resource": "https://elsewhere.example/mcp"}, 400, "invalid_target"),
    }
    for name, (change, status, error) in cases.items():
        response = token(signin, **{**base, "code": fresh_code(), **change})
        assert (response.status, response.json()["error"]) == (status, error), name
    assert token(signin, **{**base, "code": "made-up"}).json()["error"] == "invalid_grant"
    assert token(signin, **{**base, "code": fresh_code()}).status == 200


def test_the_sign_in_page_picks_a_person(signin: ApiGateway, alice_sub: str) -> None:
    client = registered(signin)
    verifier, challenge = pkce()
    params = dict(
        response_type="code",
        client_id=client["client_id"],
        redirect_uri=REDIRECT,
        state="<script>alert(1)</script>",
        code_challenge=challenge,
        code_challenge_method="S256",
    )
    page = authorize(signin, **params)
    assert page.status == 200
    assert page.header("Content-Type") == "text/html; charset=utf-8"
    assert page.header("Cache-Control") == "no-store"
    html = page.body.decode()
    assert "name='principal' value='alice'" in html
    assert "<script>" not in html and "&lt;script&gt;" in html  # the state is escaped
    # An unknown hint shows the page again, saying so.
    unknown = authorize(signin, **params, login_hint="mallory")
    assert unknown.status == 200 and "mallory" in unknown.body.decode()
    # Submitting the page's form signs in.
    submitted = request(
        signin.url,
        "POST",
        "/oauth2/authorize",
        headers=[FORM],
        body=urlencode({**params, "principal": "alice"}).encode(),
    )
    answer = redirected(submitted)
    assert answer["state"] == params["state"]
    issued = token(
        signin,
        grant_type="authorization_code",
        code=answer["code"],
        redirect_uri=REDIRECT,
        client_id=client["client_id"],
        code_verifier=verifier,
    )
    claims = jwt.decode(issued.json()["access_token"], options={"verify_signature": False})
    assert claims["sub"] == alice_sub and "aud" not in claims  # no resource, no binding
    # Without a resource and without a scope: every scope the client was registered for.
    assert claims["scope"].split() == client["scope"].split()


def test_authorize_errors(signin: ApiGateway) -> None:
    client = registered(signin)
    _, challenge = pkce()
    good = dict(
        response_type="code",
        client_id=client["client_id"],
        redirect_uri=REDIRECT,
        state="s",
        code_challenge=challenge,
        code_challenge_method="S256",
        login_hint="alice",
    )
    # Before the client and redirect URI are known good: a page, never a redirect.
    for change in ({"client_id": "nope"}, {"redirect_uri": "http://127.0.0.1:1/other"}):
        response = authorize(signin, **{**good, **change})
        assert response.status == 400 and response.header("Location") is None
    redirected_errors = {
        "unsupported_response_type": {"response_type": "token"},
        "invalid_request": {"code_challenge_method": "plain"},
        "invalid_scope": {"scope": "memory/admin"},
        "invalid_target": {"resource": "http://example.com/w/acme/mcp"},
    }
    for error, change in redirected_errors.items():
        answer = redirected(authorize(signin, **{**good, **change}))
        assert (answer["error"], answer["state"]) == (error, "s"), error
    only_method = {k: v for k, v in good.items() if k != "code_challenge"}
    assert redirected(authorize(signin, **only_method))["error"] == "invalid_request"


def test_codes_expire(
    signin: ApiGateway, issuer: LocalIssuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = registered(signin)
    verifier, challenge = pkce()
    code = alice_code(signin, client["client_id"], challenge)
    later = time.time() + 301
    monkeypatch.setattr("memory_local.tokens.time.time", lambda: later)
    response = token(
        signin,
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT,
        client_id=client["client_id"],
        code_verifier=verifier,
    )
    assert (response.status, response.json()["error"]) == (400, "invalid_grant")


def test_a_loopback_redirect_goes_straight_on_to_the_pool_and_login_hint_signs_in(
    signin: ApiGateway, alice_sub: str
) -> None:
    """The code never leaves the machine, so no consent page: the product's endpoint
    hands the same parameters to the pool's, and the scripted sign-in keeps working."""
    client = registered(signin)
    verifier, challenge = pkce()
    params = dict(
        response_type="code",
        client_id=client["client_id"],
        redirect_uri=REDIRECT,
        state="st-2",
        code_challenge=challenge,
        code_challenge_method="S256",
        scope="memory/read",
        login_hint="alice",
    )
    handed_on = request(signin.url, "GET", "/authorize?" + urlencode(params))
    assert handed_on.status == 302 and handed_on.header("Cache-Control") == "no-store"
    location = handed_on.header("Location") or ""
    assert location.startswith(f"{signin.url}/oauth2/authorize?")
    assert parse_qs(urlsplit(location).query) == {k: [v] for k, v in params.items()}
    answer = redirected(
        request(signin.url, "GET", urlsplit(location).path + "?" + urlsplit(location).query)
    )
    assert answer["state"] == "st-2"
    issued = token(
        signin,
        grant_type="authorization_code",
        code=answer["code"],
        redirect_uri=REDIRECT,
        client_id=client["client_id"],
        code_verifier=verifier,
    )
    assert issued.status == 200, issued.body
    claims = jwt.decode(issued.json()["access_token"], options={"verify_signature": False})
    assert claims["sub"] == alice_sub and claims["scope"] == "memory/read"


def test_pkce_is_required_by_both_authorize_endpoints_and_by_the_token_endpoint(
    signin: ApiGateway,
) -> None:
    """Issue 23, item 7: a public client's code was redeemed without a verifier when its
    authorization request carried no challenge."""
    client = registered(signin)
    verifier, challenge = pkce()
    without = dict(
        response_type="code",
        client_id=client["client_id"],
        redirect_uri=REDIRECT,
        state="s",
        login_hint="alice",
    )
    weak = [
        without,
        {**without, "code_challenge": challenge},  # no method
        {**without, "code_challenge_method": "S256"},  # no challenge
        {**without, "code_challenge": verifier, "code_challenge_method": "plain"},
        {**without, "code_challenge": "short", "code_challenge_method": "S256"},
    ]
    for path in ("/authorize", "/oauth2/authorize"):  # the product's and the pool's
        for params in weak:
            response = request(signin.url, "GET", f"{path}?{urlencode(params)}")
            answer = redirected(response)
            assert (answer["error"], answer["state"]) == ("invalid_request", "s"), (path, params)
            assert "code" not in answer
    # The token endpoint: no verifier (absent or empty) or a wrong one is invalid_grant.
    base = dict(
        grant_type="authorization_code", redirect_uri=REDIRECT, client_id=client["client_id"]
    )
    for verifier_field in ({}, {"code_verifier": ""}, {"code_verifier": pkce()[0]}):
        code = alice_code(signin, client["client_id"], challenge)
        refused = token(signin, **base, code=code, **verifier_field)
        assert (refused.status, refused.json()["error"]) == (400, "invalid_grant"), verifier_field
    code = alice_code(signin, client["client_id"], challenge)
    assert token(signin, **base, code=code, code_verifier=verifier).status == 200
