"""LocalIssuer: Cognito-shaped access tokens and the client-credentials grant."""

from __future__ import annotations

import stat
from pathlib import Path

import jwt
from memory_local.aws import LocalAws
from memory_local.tokens import LocalIssuer

from .conftest import AGENT_SCOPES, Agent

PERSON_CLAIMS = {
    "sub", "iss", "client_id", "origin_jti", "token_use", "scope", "auth_time",
    "iat", "exp", "jti", "username", "version",
}  # fmt: skip


def _verify(issuer: LocalIssuer, token: str) -> dict[str, object]:
    key = jwt.PyJWK(issuer.jwks()["keys"][0])
    return jwt.decode(token, key, algorithms=["RS256"], issuer=issuer.issuer)


def test_key_is_private_and_reused_across_restarts(tmp_path: Path) -> None:
    key_file = tmp_path / "dev" / "signing-key.pem"
    first = LocalIssuer(key_file, "https://issuer.example")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_file.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    token = first.issue_access_token(sub="s", client_id="c", scopes=["memory/read"])
    restarted = LocalIssuer(key_file, "https://issuer.example")
    assert restarted.kid == first.kid
    assert restarted.jwks() == first.jwks()
    assert _verify(restarted, token)["sub"] == "s"
    other = LocalIssuer(tmp_path / "other.pem", "https://issuer.example")
    assert other.kid != first.kid


def test_jwks_is_a_public_rs256_key_set(issuer: LocalIssuer) -> None:
    (key,) = issuer.jwks()["keys"]
    assert key["kty"] == "RSA" and key["alg"] == "RS256" and key["use"] == "sig"
    assert key["kid"] == issuer.kid
    assert {"n", "e"} <= key.keys()
    assert not {"d", "p", "q", "dp", "dq", "qi"} & key.keys()  # nothing private


def test_person_token_has_cognito_access_token_claims(issuer: LocalIssuer) -> None:
    token = issuer.issue_access_token(
        sub="user-sub",
        client_id="people-client",
        scopes=["memory/read", "memory/admin"],
        username="alice",
    )
    assert jwt.get_unverified_header(token) == {"alg": "RS256", "kid": issuer.kid}
    claims = _verify(issuer, token)
    assert set(claims) == PERSON_CLAIMS
    assert claims["token_use"] == "access"
    assert claims["scope"] == "memory/read memory/admin"
    assert claims["username"] == "alice"
    assert claims["version"] == 2
    assert claims["exp"] == claims["iat"] + 3600  # type: ignore[operator]
    assert claims["auth_time"] == claims["iat"]


def test_client_credentials_grant(issuer: LocalIssuer, local_aws: LocalAws, agent: Agent) -> None:
    result = issuer.client_credentials_grant(
        local_aws,
        client_id=agent.client_id,
        client_secret=agent.client_secret,
        requested_scopes=None,
    )
    assert result["token_type"] == "Bearer" and result["expires_in"] == 3600
    claims = _verify(issuer, result["access_token"])
    assert claims["sub"] == claims["client_id"] == agent.client_id
    assert "username" not in claims and "origin_jti" not in claims
    assert claims["scope"].split() == AGENT_SCOPES  # type: ignore[union-attr]

    narrowed = issuer.client_credentials_grant(
        local_aws,
        client_id=agent.client_id,
        client_secret=agent.client_secret,
        requested_scopes=["memory/write.shared"],
    )
    assert _verify(issuer, narrowed["access_token"])["scope"] == "memory/write.shared"


def test_client_credentials_errors(issuer: LocalIssuer, local_aws: LocalAws, agent: Agent) -> None:
    def grant(client_id: str, secret: str, scopes: list[str] | None = None) -> str:
        return str(
            issuer.client_credentials_grant(
                local_aws, client_id=client_id, client_secret=secret, requested_scopes=scopes
            ).get("error")
        )

    assert grant(agent.client_id, "wrong") == "invalid_client"
    assert grant("no-such-client", agent.client_secret) == "invalid_client"
    # The people client has no secret: it cannot use this grant at all.
    assert grant(local_aws.provisioned.people_client_id, "") == "invalid_client"
    assert grant(agent.client_id, agent.client_secret, ["memory/admin"]) == "invalid_scope"
    assert grant(agent.client_id, agent.client_secret, ["memory/read", "x/y"]) == "invalid_scope"
    # A confidential client not enabled for client credentials.
    cognito = local_aws.client("cognito-idp")
    created = cognito.create_user_pool_client(
        UserPoolId=local_aws.provisioned.user_pool_id, ClientName="web", GenerateSecret=True
    )["UserPoolClient"]
    assert grant(created["ClientId"], created["ClientSecret"]) == "unauthorized_client"


def test_token_endpoint_form_handling(
    issuer: LocalIssuer, local_aws: LocalAws, agent: Agent
) -> None:
    def call(form: dict[str, list[str]], authorization: str | None = None) -> tuple[int, str]:
        status, body, headers = issuer.token_endpoint(
            local_aws, form=form, authorization=authorization
        )
        assert headers["Cache-Control"] == "no-store"
        return status, str(body.get("error", "ok"))

    creds = {"client_id": [agent.client_id], "client_secret": [agent.client_secret]}
    assert call({"grant_type": ["client_credentials"], **creds}) == (200, "ok")
    assert call({"grant_type": ["password"], **creds}) == (400, "unsupported_grant_type")
    assert call(creds) == (400, "invalid_request")
    assert call({"grant_type": ["client_credentials", "client_credentials"], **creds}) == (
        400,
        "invalid_request",
    )
    assert call({"grant_type": ["client_credentials"]}) == (401, "invalid_client")
    assert call({"grant_type": ["client_credentials"]}, "Bearer x") == (401, "invalid_client")
