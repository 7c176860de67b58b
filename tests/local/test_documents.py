"""Metadata-document clients and refresh rotation over HTTP on the emulator: the front
door (``signin.authorization``, ``signin.token``) in front of the local stand-in for the
pool, the documents served by a local https server that a fake resolver names.

The one change from the deployed wiring: the document fetcher may reach that server on
127.0.0.1 (as deployed it refuses loopback; tests/signin/test_cimd.py shows that).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import secrets
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
from memory_server.signin.cimd import ClientDocuments, DocumentFetcher, is_public_address
from memory_server.signin.management import Management
from memory_server.signin.registry import SigninTable
from memory_server.signin.token import TokenEndpoint

from tests.signin.cimd_servers import Server, answer, https_server, make_certificate

from .conftest import Response, echo_handler, request

FORM = ("Content-Type", "application/x-www-form-urlencoded")
CLIENT_ID = "https://client.test/oauth/mcp-client.json"
PRIVATE_ID = "https://metadata.test/latest/client.json"  # resolves to 169.254.169.254
LOOPBACK = "http://127.0.0.1/callback"
WEB = "https://client.test/api/mcp/auth_callback"


def document() -> dict[str, Any]:
    return {
        "client_id": CLIENT_ID,
        "client_name": "Test Host",
        "redirect_uris": [LOOPBACK, WEB],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


@pytest.fixture(scope="module")
def documents_server() -> Iterator[tuple[Server, DocumentFetcher]]:
    certificate = make_certificate()
    body = json.dumps(document()).encode()
    with https_server(certificate, answer(body, headers={"Cache-Control": "max-age=600"})) as s:

        def resolve(host: str, port: int) -> list[str]:
            return {"client.test": ["127.0.0.1"], "metadata.test": ["169.254.169.254"]}[host]

        def allowed(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
            return is_public_address(address) or address == ipaddress.ip_address("127.0.0.1")

        yield (
            s,
            DocumentFetcher(
                resolver=resolve,
                address_allowed=allowed,
                tls=certificate.client_context(),
                port=s.port,
            ),
        )


@pytest.fixture(scope="module")
def site(
    local_aws: LocalAws, issuer: LocalIssuer, documents_server: tuple[Server, DocumentFetcher]
) -> Iterator[ApiGateway]:
    provisioned = local_aws.provisioned
    gateway = ApiGateway(echo_handler, issuer=issuer, aws=local_aws, quiet=True).start()
    pool_client = local_aws.ensure_document_client([f"{gateway.url}/authorize/callback"])
    key = secrets.token_bytes(32)
    documents = ClientDocuments(documents_server[1])
    gateway.management = Management(
        cognito=CognitoDirectory(local_aws.client("cognito-idp"), provisioned.user_pool_id),
        table=SigninTable(local_aws.client("dynamodb"), provisioned.signin_table),
        oauth_base_url=gateway.url,
        public_base_url=gateway.url,
        clock=lambda: 3_200_000_000.0,  # an hour of its own for the rate limits
    ).route
    gateway.authorization = Authorization(
        clients=PoolClients(local_aws.client("cognito-idp"), provisioned.user_pool_id),
        pool_authorize_url=f"{gateway.url}/oauth2/authorize",
        key=key,
        public_base_url=gateway.url,
        documents=documents,
        document_pool_client=lambda: pool_client,
        token_endpoint=TokenEndpoint(
            pool_token_url=f"{gateway.url}/oauth2/token",
            pool_revoke_url=f"{gateway.url}/oauth2/revoke",
            key=key,
            families=SigninTable(local_aws.client("dynamodb"), provisioned.signin_table),
            documents=documents,
            document_pool_client=lambda: pool_client,
            public_base_url=gateway.url,
        ),
    ).route
    try:
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture(scope="module")
def alice_sub(local_aws: LocalAws) -> str:
    return local_aws.create_user("alice")


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def follow(site: ApiGateway, response: Response) -> Response:
    """One redirect on the site (the browser's next step)."""
    assert response.status == 302, response.body[:300]
    location = urlsplit(response.header("location") or "")
    assert f"{location.scheme}://{location.netloc}" == site.url, location
    return request(site.url, "GET", f"{location.path}?{location.query}")


def sign_in(
    site: ApiGateway, redirect_uri: str, challenge: str, state: str, client_id: str = CLIENT_ID
) -> dict[str, list[str]]:
    """/authorize to the client's redirect, for a loopback redirect (no consent page)."""
    params = dict(
        response_type="code",
        client_id=client_id,
        redirect_uri=redirect_uri,
        state=state,
        code_challenge=challenge,
        code_challenge_method="S256",
        scope="memory/read memory/write.personal",
        resource=f"{site.url}/w/acme/mcp",
        login_hint="alice",
    )
    to_pool = request(site.url, "GET", "/authorize?" + urlencode(params))
    pool_query = parse_qs(urlsplit(to_pool.header("location") or "").query)
    assert pool_query["client_id"] != [client_id]  # the pool knows the shared client
    assert pool_query["redirect_uri"] == [f"{site.url}/authorize/callback"]
    to_callback = follow(site, to_pool)  # the pool signs alice in (login_hint)
    callback = follow(site, to_callback)  # the front door's callback
    assert callback.status == 302
    target = urlsplit(callback.header("location") or "")
    assert f"{target.scheme}://{target.netloc}{target.path}" == redirect_uri
    return parse_qs(target.query)


def token(site: ApiGateway, **form: str) -> Response:
    return request(site.url, "POST", "/token", headers=[FORM], body=urlencode(form).encode())


def test_the_metadata_advertises_documents_and_the_front_doors_token_endpoint(
    site: ApiGateway,
) -> None:
    doc = request(site.url, "GET", "/.well-known/oauth-authorization-server").json()
    assert doc["client_id_metadata_document_supported"] is True
    assert "none" in doc["token_endpoint_auth_methods_supported"]
    assert doc["token_endpoint"] == f"{site.url}/token"


def test_a_document_client_signs_in_with_a_loopback_redirect_on_any_port(
    site: ApiGateway, alice_sub: str, issuer: LocalIssuer
) -> None:
    verifier, challenge = pkce()
    redirect = "http://127.0.0.1:53682/callback"  # the document lists no port
    got = sign_in(site, redirect, challenge, "st-1")
    assert got["state"] == ["st-1"] and got["code"][0].startswith("cimd.")
    resource = f"{site.url}/w/acme/mcp"
    exchanged = token(
        site,
        grant_type="authorization_code",
        code=got["code"][0],
        client_id=CLIENT_ID,
        redirect_uri=redirect,
        code_verifier=verifier,
        resource=resource,
    )
    assert exchanged.status == 200, exchanged.body
    tokens = exchanged.json()
    claims = jwt.decode(tokens["access_token"], options={"verify_signature": False})
    assert claims["sub"] == alice_sub and claims["aud"] == resource  # RFC 8707 binding
    assert claims["scope"] == "memory/read memory/write.personal"
    assert tokens["refresh_token"].startswith("rt.")

    # The code is good once, for this client and this redirect only.
    again = token(
        site,
        grant_type="authorization_code",
        code=got["code"][0],
        client_id=CLIENT_ID,
        redirect_uri=redirect,
        code_verifier=verifier,
    )
    assert again.status == 400 and again.json()["error"] == "invalid_grant"

    # Rotation: each refresh token is good once; using an old one revokes the family.
    first = tokens["refresh_token"]
    refreshed = token(site, grant_type="refresh_token", refresh_token=first, client_id=CLIENT_ID)
    assert refreshed.status == 200, refreshed.body
    second = refreshed.json()["refresh_token"]
    assert second != first and refreshed.json()["access_token"]
    replayed = token(site, grant_type="refresh_token", refresh_token=first, client_id=CLIENT_ID)
    assert replayed.status == 400 and replayed.json()["error"] == "invalid_grant"
    assert "already used" in replayed.json()["error_description"]
    after = token(site, grant_type="refresh_token", refresh_token=second, client_id=CLIENT_ID)
    assert after.status == 400 and after.json()["error"] == "invalid_grant"
    assert "revoked" in after.json()["error_description"]


def test_a_document_clients_sign_out_revokes_its_family(site: ApiGateway, alice_sub: str) -> None:
    """RFC 7009 at the front door: the client's refresh token (any generation) ends the
    sign-in; another client may not end it."""
    verifier, challenge = pkce()
    redirect = "http://127.0.0.1:40111/callback"
    code = sign_in(site, redirect, challenge, "st-r")["code"][0]
    exchanged = token(
        site,
        grant_type="authorization_code",
        code=code,
        client_id=CLIENT_ID,
        redirect_uri=redirect,
        code_verifier=verifier,
    )
    assert exchanged.status == 200, exchanged.body
    first = exchanged.json()["refresh_token"]
    refreshed = token(site, grant_type="refresh_token", refresh_token=first, client_id=CLIENT_ID)
    assert refreshed.status == 200, refreshed.body
    second = refreshed.json()["refresh_token"]

    def revoke(**form: str) -> Response:
        return request(site.url, "POST", "/revoke", headers=[FORM], body=urlencode(form).encode())

    other = revoke(token=second, client_id="https://client.test/oauth/other.json")
    assert other.status == 401 and other.json()["error"] == "invalid_client"
    assert revoke(token=first, client_id=CLIENT_ID).status == 200  # an older generation
    for used in (first, second):
        refused = token(site, grant_type="refresh_token", refresh_token=used, client_id=CLIENT_ID)
        assert refused.status == 400 and refused.json()["error"] == "invalid_grant"
    # A document client holds no pool token: anything else it presents is unknown.
    assert revoke(token="pool-token", client_id=CLIENT_ID).status == 200


def test_a_code_is_bound_to_its_client_and_redirect(site: ApiGateway, alice_sub: str) -> None:
    verifier, challenge = pkce()
    redirect = "http://127.0.0.1:40001/callback"
    code = sign_in(site, redirect, challenge, "st-2")["code"][0]
    for changes in (
        {"redirect_uri": "http://127.0.0.1:40002/callback"},
        {"client_id": "https://client.test/oauth/other.json"},
        {"code": code[:-2] + "AA"},
    ):
        form = dict(
            grant_type="authorization_code",
            code=code,
            client_id=CLIENT_ID,
            redirect_uri=redirect,
            code_verifier=verifier,
        )
        form.update(changes)
        refused = token(site, **form)
        assert refused.status in (400, 401) and refused.json()["error"] in (
            "invalid_grant",
            "invalid_client",
        ), (changes, refused.body)


def test_bad_document_clients_get_a_page_naming_the_oauth_error(
    site: ApiGateway, documents_server: tuple[Server, DocumentFetcher]
) -> None:
    _, challenge = pkce()
    base = dict(
        response_type="code",
        state="s",
        code_challenge=challenge,
        code_challenge_method="S256",
    )
    private = request(
        site.url,
        "GET",
        "/authorize?" + urlencode({**base, "client_id": PRIVATE_ID, "redirect_uri": LOOPBACK}),
    )
    assert private.status == 400 and b"invalid_client" in private.body
    assert b"169.254.169.254" in private.body and private.header("location") is None
    unlisted = request(
        site.url,
        "GET",
        "/authorize?"
        + urlencode({**base, "client_id": CLIENT_ID, "redirect_uri": "https://evil.example/cb"}),
    )
    assert unlisted.status == 400 and b"invalid_redirect_uri" in unlisted.body
    assert unlisted.header("location") is None


def test_the_consent_page_names_the_documents_host(site: ApiGateway) -> None:
    _, challenge = pkce()
    params = dict(
        response_type="code",
        client_id=CLIENT_ID,
        redirect_uri=WEB,
        state="s",
        code_challenge=challenge,
        code_challenge_method="S256",
    )
    page = request(site.url, "GET", "/authorize?" + urlencode(params))
    assert page.status == 200
    body = page.body.decode()
    assert "published by <strong>client.test</strong>" in body
    assert "It calls itself <strong>Test Host</strong>" in body


def test_cursors_registration_with_all_its_redirects(site: ApiGateway) -> None:
    # What Cursor sends (its documented registration body), every redirect at once.
    body = {
        "client_name": "Cursor",
        "redirect_uris": [
            "cursor://anysphere.cursor-mcp/oauth/callback",
            "http://localhost:54321/callback",
            "https://www.cursor.com/agents/mcp/oauth/callback",
        ],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    registered = request(
        site.url,
        "POST",
        "/register",
        headers=[("Content-Type", "application/json")],
        body=json.dumps(body).encode(),
    )
    assert registered.status == 201, registered.body
    assert registered.json()["redirect_uris"] == body["redirect_uris"]  # all on the default list
    _, challenge = pkce()
    params = dict(
        response_type="code",
        client_id=registered.json()["client_id"],
        redirect_uri="cursor://anysphere.cursor-mcp/oauth/callback",
        state="s",
        code_challenge=challenge,
        code_challenge_method="S256",
    )
    consent = request(site.url, "GET", "/authorize?" + urlencode(params))
    assert consent.status == 200 and b"<strong>cursor:</strong>" in consent.body
    params["redirect_uri"] = "https://www.cursor.com/agents/mcp/oauth/callback"
    via_https = request(site.url, "GET", "/authorize?" + urlencode(params))
    assert via_https.status == 200 and b"<strong>www.cursor.com</strong>" in via_https.body
