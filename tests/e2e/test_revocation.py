"""Token revocation (RFC 7009) on the local stack over real HTTP: the front door's
``POST /revoke``, built by the code the deployed function runs (``build_authorization``),
in front of the local stand-in for the pool's ``/oauth2/revoke``. A revoked refresh
token mints no access token, nor does any other token of its sign-in; the metadata
names the endpoint. The deployed wiring against a fake Cognito:
tests/signin/test_revocation.py; the console's sign-out: tests/e2e/test_console.py."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
from memory_local.dev import DevStack
from memory_server.signin.registry import RefreshFamily
from memory_server.signin.sealed import unseal
from memory_server.signin.token import REFRESH_PREFIX, REFRESH_PURPOSE

from tests.proof.harness import people_client
from tests.tls import TLS

PEOPLE_REDIRECT = "http://localhost/callback"  # the people client's (memory_local.aws)
FORM = {"content-type": "application/x-www-form-urlencoded"}


def _post(stack: DevStack, path: str, form: dict[str, str]) -> httpx2.Response:
    return httpx2.post(
        f"{stack.info['api_url']}{path}",
        content=urlencode(form),
        headers=FORM,
        timeout=30,
        verify=TLS,
    )


def _code(stack: DevStack, authorize_path: str, client_id: str) -> tuple[str, str]:
    """alice's code through ``authorize_path`` (the front door's or the pool's), and
    its PKCE verifier."""
    api = stack.info["api_url"]
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    query = urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": PEOPLE_REDIRECT,
            "code_challenge": challenge.rstrip(b"=").decode(),
            "code_challenge_method": "S256",
            "scope": "memory/read",
            "login_hint": "alice",
        }
    )
    answer = httpx2.get(f"{api}{authorize_path}?{query}", timeout=30, verify=TLS)
    while answer.status_code == 302 and answer.headers["location"].startswith(api):
        answer = httpx2.get(answer.headers["location"], timeout=30, verify=TLS)  # on to the pool
    assert answer.status_code == 302, answer.text
    location = answer.headers["location"]
    assert location.startswith(PEOPLE_REDIRECT), location
    return parse_qs(urlsplit(location).query)["code"][0], verifier


def _signed_in(stack: DevStack, authorize_path: str, token_path: str) -> dict[str, Any]:
    """alice signs in at ``authorize_path``; the tokens ``token_path`` exchanges her
    code for."""
    client = people_client(stack)
    code, verifier = _code(stack, authorize_path, client)
    exchanged = _post(
        stack,
        token_path,
        {
            "grant_type": "authorization_code",
            "code": code,
            "client_id": client,
            "redirect_uri": PEOPLE_REDIRECT,
            "code_verifier": verifier,
        },
    )
    assert exchanged.status_code == 200, exchanged.text
    return dict(exchanged.json())


def _sign_in(stack: DevStack) -> str:
    """alice's sign-in through the front door: its first (rotating) refresh token."""
    token = str(_signed_in(stack, "/authorize", "/token")["refresh_token"])
    assert token.startswith(REFRESH_PREFIX)
    return token


def _refresh(stack: DevStack, path: str, token: str) -> httpx2.Response:
    form = {"grant_type": "refresh_token", "refresh_token": token}
    return _post(stack, path, {**form, "client_id": people_client(stack)})


def _family(stack: DevStack, token: str) -> RefreshFamily:
    """The family a front-door refresh token belongs to (the pool's token behind it)."""
    assert stack.authorization is not None and stack.authorization.token_endpoint is not None
    endpoint = stack.authorization.token_endpoint
    sealed = unseal(endpoint.key, REFRESH_PURPOSE, token.removeprefix(REFRESH_PREFIX), time.time())
    assert sealed is not None
    family = endpoint.families.family(str(sealed["f"]))
    assert family is not None
    return family


def test_the_metadata_advertises_the_revocation_endpoint(stack: DevStack) -> None:
    api = stack.info["api_url"]
    metadata = httpx2.get(
        f"{api}/.well-known/oauth-authorization-server", timeout=30, verify=TLS
    ).json()
    assert metadata["revocation_endpoint"] == f"{api}/revoke"
    assert "none" in metadata["revocation_endpoint_auth_methods_supported"]
    assert set(metadata["revocation_endpoint_auth_methods_supported"]) == set(
        metadata["token_endpoint_auth_methods_supported"]
    )


def test_a_revoked_refresh_token_mints_nothing_and_its_family_is_dead(stack: DevStack) -> None:
    first = _sign_in(stack)
    refreshed = _refresh(stack, "/token", first)
    assert refreshed.status_code == 200, refreshed.text
    second = refreshed.json()["refresh_token"]
    family = _family(stack, second)
    assert not family.revoked
    # The pool's refresh token behind the family works until the family is revoked.
    behind = _refresh(stack, "/oauth2/token", family.pool_refresh)
    assert behind.status_code == 200, behind.text

    revoked = _post(
        stack,
        "/revoke",
        {"token": second, "token_type_hint": "refresh_token", "client_id": people_client(stack)},
    )
    assert revoked.status_code == 200, revoked.text
    assert revoked.headers["cache-control"] == "no-store"

    for token in (second, first):  # the token revoked, and an earlier one of its family
        refused = _refresh(stack, "/token", token)
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
        assert "revoked" in refused.json()["error_description"]
    assert _family(stack, second).revoked
    # Revoked at the pool too: its own refresh token mints nothing either.
    dead = _refresh(stack, "/oauth2/token", family.pool_refresh)
    assert dead.status_code == 400 and dead.json()["error"] == "invalid_grant"
    # Again: 200 (RFC 7009 §2.2: an invalid token is no error).
    again = _post(stack, "/revoke", {"token": second, "client_id": people_client(stack)})
    assert again.status_code == 200, again.text


def test_a_pool_refresh_token_is_revoked_at_the_pool(stack: DevStack) -> None:
    """Tokens the pool issued itself (the console's, from the pool's token endpoint)."""
    client = people_client(stack)
    tokens = _signed_in(stack, "/oauth2/authorize", "/oauth2/token")
    token, access = tokens["refresh_token"], tokens["access_token"]
    assert not token.startswith(REFRESH_PREFIX)

    # Another client may not revoke it, nor may an access token be revoked here.
    other = _post(stack, "/revoke", {"token": token, "client_id": stack.info["console_client_id"]})
    assert other.status_code == 401 and other.json()["error"] == "invalid_client"
    assert _refresh(stack, "/oauth2/token", token).status_code == 200
    unsupported = _post(stack, "/revoke", {"token": access, "client_id": client})
    assert unsupported.status_code == 400
    assert unsupported.json()["error"] == "unsupported_token_type"

    revoked = _post(stack, "/revoke", {"token": token, "client_id": client})
    assert revoked.status_code == 200, revoked.text
    dead = _refresh(stack, "/oauth2/token", token)
    assert dead.status_code == 400 and dead.json()["error"] == "invalid_grant"


def test_rfc_7009_edge_cases_answer_4xx_or_200_never_5xx(stack: DevStack) -> None:
    api = stack.info["api_url"]
    client = people_client(stack)
    token = _sign_in(stack)
    cases: list[tuple[bytes, dict[str, str], int, str | None]] = [
        (b"", FORM, 400, "invalid_request"),  # no token
        (urlencode({"token": token}).encode(), FORM, 401, "invalid_client"),  # no client
        (b"token=a&token=b&client_id=x", FORM, 400, "invalid_request"),
        (b"token=%FF&client_id=x", FORM, 400, "invalid_request"),
        (b'{"token":"x"}', {"content-type": "application/json"}, 400, "invalid_request"),
        (
            urlencode({"token": token, "client_id": "nosuchclient"}).encode(),
            FORM,
            401,
            "invalid_client",
        ),
        # Unknown tokens (and unknown hints) are no error.
        (urlencode({"token": "rt.x", "client_id": client}).encode(), FORM, 200, None),
        (urlencode({"token": "y" * 20_000, "client_id": client}).encode(), FORM, 200, None),
        (
            urlencode({"token": "z", "client_id": client, "token_type_hint": "magic"}).encode(),
            FORM,
            200,
            None,
        ),
    ]
    for body, headers, status, error in cases:
        answer = httpx2.post(f"{api}/revoke", content=body, headers=headers, timeout=30, verify=TLS)
        assert answer.status_code == status, (body[:60], answer.text)
        assert answer.json().get("error") == error, (body[:60], answer.text)
    # None of that touched the sign-in.
    assert _refresh(stack, "/token", token).status_code == 200
