"""The authorization endpoint's code (``signin.authorization``) without HTTP: reading
app clients from the emulated pool, the page for a hostile client name, the pool
failing, its configuration and its key (read from Secrets Manager:
tests/infra/test_aws_config.py). The flows over HTTP: tests/local/test_consent.py
and tests/local/test_signin.py; the attack end to end: tests/e2e/test_signin_consent.py."""

from __future__ import annotations

import base64
import hashlib
import uuid
from typing import Any
from urllib.parse import urlencode

import pytest
from memory_local.aws import LocalAws
from memory_server.admin.identity import CognitoDirectory
from memory_server.signin.authorization import (
    AppClient,
    Authorization,
    PoolClients,
    build_authorization,
)
from memory_server.signin.registration import cognito_client_name

CALLBACK = "https://chatgpt.com/connector_platform_oauth_redirect"
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(b"v" * 43).digest()).rstrip(b"=").decode()


class OneClient:
    def __init__(self, client: AppClient | Exception) -> None:
        self.client = client

    def describe(self, client_id: str) -> AppClient | None:
        if isinstance(self.client, Exception):
            raise self.client
        return self.client if client_id == self.client.client_id else None


def get_event(params: dict[str, str]) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "GET /authorize",
        "rawPath": "/authorize",
        "rawQueryString": urlencode(params),
        "headers": {"host": "api.example.com"},
        "requestContext": {"domainName": "api.example.com", "http": {"method": "GET"}},
    }


def params(**more: str) -> dict[str, str]:
    return dict(
        response_type="code",
        client_id="c1",
        redirect_uri=CALLBACK,
        state="s",
        code_challenge=CHALLENGE,
        code_challenge_method="S256",
        **more,
    )


def endpoint(client: AppClient | Exception) -> Authorization:
    return Authorization(
        clients=OneClient(client),
        pool_authorize_url="https://pool.auth.us-east-1.amazoncognito.com/oauth2/authorize",
        key=b"k" * 32,
    )


def test_what_a_client_calls_itself_is_shown_escaped() -> None:
    hostile = AppClient(
        client_id="c1",
        name='Claude "Desktop" <img src=x onerror=alert(1)>',
        redirect_uris=(CALLBACK,),
        scopes=("memory/read", "other/scope<b>"),
        code_flow=True,
    )
    page = endpoint(hostile).route(get_event(params(resource="https://x/<i>")))
    assert page["statusCode"] == 200
    body = page["body"]
    assert "<img" not in body and "<b>" not in body and "<i>" not in body
    assert "Claude &quot;Desktop&quot; &lt;img src=x onerror=alert(1)&gt;" in body
    assert "other/scope&lt;b&gt;" in body and "https://x/&lt;i&gt;" in body
    assert "<strong>chatgpt.com</strong>" in body
    # Deployed: the cookie is Secure (the API is https).
    (cookie,) = page["cookies"]
    assert cookie.endswith("; Secure") and "SameSite=Strict" in cookie


def test_an_unknown_scope_or_a_client_without_the_code_grant_is_sent_back() -> None:
    client = AppClient("c1", "x", (CALLBACK,), ("memory/read",), code_flow=True)
    wide = endpoint(client).route(get_event(params(scope="memory/read memory/admin")))
    assert wide["statusCode"] == 302 and "error=invalid_scope" in wide["headers"]["location"]
    agent = AppClient("c1", "x", (CALLBACK,), ("memory/read",), code_flow=False)
    refused = endpoint(agent).route(get_event(params()))
    assert "error=unauthorized_client" in refused["headers"]["location"]
    assert refused["headers"]["location"].startswith(CALLBACK + "?")


def test_a_failing_pool_is_a_page_not_a_500() -> None:
    answer = endpoint(RuntimeError("throttled")).route(get_event(params()))
    assert answer["statusCode"] == 503 and "location" not in answer["headers"]
    assert answer["headers"]["content-type"] == "text/html; charset=utf-8"


def test_app_clients_are_read_from_the_pool(signin_aws: LocalAws) -> None:
    provisioned = signin_aws.provisioned
    cognito = signin_aws.client("cognito-idp")
    clients = PoolClients(cognito, provisioned.user_pool_id)
    directory = CognitoDirectory(cognito, provisioned.user_pool_id)
    name = cognito_client_name("Claude", uuid.uuid4().hex[:12])
    registered = directory.create_public_client(name, [CALLBACK], ["memory/read"])
    assert clients.describe(registered) == AppClient(
        client_id=registered,
        name="Claude",
        redirect_uris=(CALLBACK,),
        scopes=("memory/read",),
        code_flow=True,
    )
    agent, _ = directory.create_key_client(f"agent-{uuid.uuid4().hex[:6]}", ["memory/read"])
    described = clients.describe(agent)
    assert described is not None and not described.code_flow and described.redirect_uris == ()
    assert clients.describe("nosuchclient") is None


def test_the_function_is_built_from_the_templates_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # boto3's client reads it
    env = {
        "USER_POOL_ID": "us-east-1_abc",
        "OAUTH_BASE_URL": "https://memory.auth.us-east-1.amazoncognito.com/",
        "PUBLIC_BASE_URL": "https://memory.example.org",
    }
    built = build_authorization(env, secret="s" * 32)
    assert built.pool_authorize_url == (
        "https://memory.auth.us-east-1.amazoncognito.com/oauth2/authorize"
    )
    assert built.public_base_url == "https://memory.example.org" and built.key == b"s" * 32
    with pytest.raises(RuntimeError, match="consent key"):
        build_authorization(env, secret="short")


def test_a_private_use_redirect_always_gets_the_consent_page() -> None:
    cursor = "cursor://anysphere.cursor-mcp/oauth/callback"
    client = AppClient(
        client_id="c1",
        name="Cursor",
        redirect_uris=(cursor,),
        scopes=("memory/read",),
        code_flow=True,
    )
    page = endpoint(client).route(get_event({**params(), "redirect_uri": cursor}))
    assert page["statusCode"] == 200 and "location" not in page["headers"]
    assert "<strong>cursor:</strong>" in page["body"]
    csp = page["headers"]["content-security-policy"]
    # The form may post to the pool and hand the browser to the cursor: scheme, nothing else.
    assert "form-action 'self' https://pool.auth.us-east-1.amazoncognito.com cursor:;" in csp
