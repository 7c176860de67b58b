"""The front door's revocation endpoint as deployed, without HTTP: the function built
from the template's environment (``build_authorization``: the pool's domain an
``amazoncognito.com`` one, the sign-in table in emulated DynamoDB), Cognito's token and
revocation endpoints a fake that records what it is sent and answers as Cognito
documents (an empty 200 for a revocation). Over HTTP on the local stack:
tests/e2e/test_revocation.py."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import pytest
from memory_local.aws import LocalAws
from memory_server.signin.authorization import Authorization, build_authorization

DOMAIN = "https://memory-test-123456789012.auth.eu-west-1.amazoncognito.com"
PEOPLE = "5r1ng2peopleclient"  # a public app client of the pool
KEY_CLIENT = "7agentkeyclient"  # a confidential one (agent keys)
# Cognito's refresh tokens are JWEs: five dot-separated parts.
POOL_REFRESH = "eyJjdHkiOiJKV1QiLCJlbmMiOiJBMjU2R0NNIn0.a2V5.aXY.Y2lwaGVy.dGFn"
ACCESS = "eyJraWQiOiJrIiwiYWxnIjoiUlMyNTYifQ.eyJzdWIiOiJ4In0.c2ln"


class FakeCognito:
    """Cognito's /oauth2/token and /oauth2/revoke: what each was sent, and an answer."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, str], dict[str, str]]] = []
        self.revoke_answer: tuple[int, bytes] = (200, b"")
        self.fail: OSError | None = None
        self.issued = 0

    def post(
        self, url: str, form: Mapping[str, str], headers: Mapping[str, str]
    ) -> tuple[int, bytes]:
        self.sent.append((url, dict(form), dict(headers)))
        if self.fail is not None:
            raise self.fail
        if url == f"{DOMAIN}/oauth2/revoke":
            return self.revoke_answer
        assert url == f"{DOMAIN}/oauth2/token", url
        self.issued += 1
        tokens = {"access_token": ACCESS, "expires_in": 3600, "token_type": "Bearer"}
        if form.get("grant_type") == "authorization_code":
            tokens["refresh_token"] = f"{POOL_REFRESH}{self.issued}"
        return 200, json.dumps(tokens).encode()

    def revocations(self) -> list[tuple[dict[str, str], dict[str, str]]]:
        return [(form, headers) for url, form, headers in self.sent if url.endswith("/revoke")]


@pytest.fixture
def deployed(
    signin_aws: LocalAws, monkeypatch: pytest.MonkeyPatch
) -> tuple[Authorization, FakeCognito]:
    for name, value in signin_aws.env().items():
        monkeypatch.setenv(name, value)
    provisioned = signin_aws.provisioned
    built = build_authorization(
        {
            "USER_POOL_ID": provisioned.user_pool_id,
            "OAUTH_BASE_URL": f"{DOMAIN}/",
            "PUBLIC_BASE_URL": "https://memory.example.org",
            "SIGNIN_TABLE": provisioned.signin_table,
        },
        secret="k" * 48,
    )
    assert built.token_endpoint is not None
    assert built.token_endpoint.pool_revoke_url == f"{DOMAIN}/oauth2/revoke"
    cognito = FakeCognito()
    built.token_endpoint.post = cognito.post
    return built, cognito


def post(
    authorization: Authorization,
    path: str,
    form: Mapping[str, str] | bytes,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    body = form if isinstance(form, bytes) else urlencode(form).encode()
    answer = authorization.route(
        {
            "version": "2.0",
            "routeKey": f"POST {path}",
            "rawPath": path,
            "headers": {
                "host": "memory.example.org",
                "content-type": "application/x-www-form-urlencoded",
                **(headers or {}),
            },
            "body": base64.b64encode(body).decode(),
            "isBase64Encoded": True,
            "requestContext": {"domainName": "memory.example.org", "http": {"method": "POST"}},
        }
    )
    return answer["statusCode"], json.loads(answer["body"] or "{}")


def signed_in(authorization: Authorization) -> str:
    """A public client's sign-in: the front door's first refresh token of a family."""
    status, tokens = post(
        authorization,
        "/token",
        {
            "grant_type": "authorization_code",
            "code": "pool-code",
            "client_id": PEOPLE,
            "redirect_uri": "http://localhost/callback",
            "code_verifier": "v" * 43,
        },
    )
    assert status == 200, tokens
    assert tokens["refresh_token"].startswith("rt.")
    return str(tokens["refresh_token"])


def test_a_rotated_token_revokes_its_family_and_cognitos_token_with_the_pool_client(
    deployed: tuple[Authorization, FakeCognito],
) -> None:
    authorization, cognito = deployed
    first = signed_in(authorization)
    status, refreshed = post(
        authorization,
        "/token",
        {"grant_type": "refresh_token", "refresh_token": first, "client_id": PEOPLE},
    )
    assert status == 200, refreshed
    second = refreshed["refresh_token"]

    revoked = post(
        authorization,
        "/revoke",
        {"token": second, "token_type_hint": "refresh_token", "client_id": PEOPLE},
    )
    assert revoked == (200, {})
    # Cognito's revocation endpoint got the pool's refresh token behind the family, with
    # the app client it was issued to, as a public client (no secret, no Authorization).
    ((form, headers),) = cognito.revocations()
    assert form == {"token": f"{POOL_REFRESH}1", "client_id": PEOPLE}
    assert headers == {}

    # Every token of the family is refused now, and Cognito is not asked to refresh.
    asked = len(cognito.sent)
    for token in (first, second):
        status, refused = post(
            authorization,
            "/token",
            {"grant_type": "refresh_token", "refresh_token": token, "client_id": PEOPLE},
        )
        assert (status, refused["error"]) == (400, "invalid_grant")
    assert len(cognito.sent) == asked
    # Revoked again: 200, and Cognito is not asked twice.
    assert post(authorization, "/revoke", {"token": first, "client_id": PEOPLE}) == (200, {})
    assert len(cognito.revocations()) == 1


def test_a_cognito_refresh_token_is_handed_to_cognito_with_the_clients_credentials(
    deployed: tuple[Authorization, FakeCognito],
) -> None:
    authorization, cognito = deployed
    # The console's (a public client whose tokens come from the pool's own endpoint).
    assert post(authorization, "/revoke", {"token": POOL_REFRESH, "client_id": PEOPLE}) == (
        200,
        {},
    )
    # A confidential client's Basic credentials go with it, untouched.
    basic = "Basic " + base64.b64encode(f"{KEY_CLIENT}:secret".encode()).decode()
    assert post(authorization, "/revoke", {"token": POOL_REFRESH}, {"authorization": basic}) == (
        200,
        {},
    )
    assert cognito.revocations() == [
        ({"token": POOL_REFRESH, "client_id": PEOPLE}, {}),
        ({"token": POOL_REFRESH}, {"authorization": basic}),
    ]


def test_cognitos_refusals_are_rfc_7009_errors_and_only_its_failure_a_5xx(
    deployed: tuple[Authorization, FakeCognito],
) -> None:
    authorization, cognito = deployed
    form = {"token": POOL_REFRESH, "client_id": PEOPLE}
    cognito.revoke_answer = (400, b'{"error":"invalid_client"}')
    status, body = post(authorization, "/revoke", form)
    assert (status, body["error"]) == (401, "invalid_client")
    cognito.revoke_answer = (400, b'{"error":"unsupported_token_type"}')
    status, body = post(authorization, "/revoke", form)
    assert (status, body["error"]) == (400, "unsupported_token_type")
    cognito.revoke_answer = (500, b"<html>oops</html>")
    status, body = post(authorization, "/revoke", form)
    assert (status, body["error"]) == (503, "temporarily_unavailable")
    cognito.fail = ConnectionResetError("reset")
    status, body = post(authorization, "/revoke", form)
    assert (status, body["error"]) == (503, "temporarily_unavailable")


def test_family_revocation_holds_when_cognito_cannot_be_reached(
    deployed: tuple[Authorization, FakeCognito],
) -> None:
    authorization, cognito = deployed
    token = signed_in(authorization)
    cognito.fail = TimeoutError("timed out")
    # The family is refused here from now on; Cognito's token ends on its own.
    assert post(authorization, "/revoke", {"token": token, "client_id": PEOPLE}) == (200, {})
    cognito.fail = None
    status, refused = post(
        authorization,
        "/token",
        {"grant_type": "refresh_token", "refresh_token": token, "client_id": PEOPLE},
    )
    assert (status, refused["error"]) == (400, "invalid_grant")


@pytest.mark.parametrize(
    ("form", "headers", "status", "error"),
    [
        ({}, {}, 400, "invalid_request"),
        ({"token": ""}, {}, 400, "invalid_request"),
        ({"token": POOL_REFRESH}, {}, 401, "invalid_client"),  # a public client names itself
        ({"token": ACCESS, "client_id": PEOPLE}, {}, 400, "unsupported_token_type"),
        (b"token=a&token=b&client_id=x", {}, 400, "invalid_request"),
        (b"token=\xff&client_id=x", {}, 400, "invalid_request"),
        (
            b'{"token": "x", "client_id": "y"}',
            {"content-type": "application/json"},
            400,
            "invalid_request",
        ),
    ],
)
def test_bad_requests_are_4xx_and_reach_no_pool(
    deployed: tuple[Authorization, FakeCognito],
    form: Mapping[str, str] | bytes,
    headers: Mapping[str, str],
    status: int,
    error: str,
) -> None:
    authorization, cognito = deployed
    answered, body = post(authorization, "/revoke", form, headers)
    assert (answered, body["error"]) == (status, error)
    assert cognito.revocations() == []


def test_unknown_tokens_answer_200_and_another_clients_token_is_refused(
    deployed: tuple[Authorization, FakeCognito],
) -> None:
    authorization, cognito = deployed
    token = signed_in(authorization)
    for unknown in ("rt.not-sealed", "rt." + token[3:-4] + "AAAA", "x" * 9000):
        # Unknown hints change nothing either (RFC 7009 §2.1).
        form = {"token": unknown, "client_id": PEOPLE, "token_type_hint": "session_cookie"}
        assert post(authorization, "/revoke", form) == (200, {})
    assert cognito.revocations() == []
    status, body = post(authorization, "/revoke", {"token": token, "client_id": "someoneelse"})
    assert (status, body["error"]) == (401, "invalid_client")
    basic = "Basic " + base64.b64encode(f"{PEOPLE}:x".encode()).decode()
    status, body = post(authorization, "/revoke", {"token": token}, {"authorization": basic})
    assert (status, body["error"]) == (401, "invalid_client")
    # Still good: refused revocations revoke nothing.
    status, refreshed = post(
        authorization,
        "/token",
        {"grant_type": "refresh_token", "refresh_token": token, "client_id": PEOPLE},
    )
    assert status == 200, refreshed
