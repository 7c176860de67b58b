"""The API Gateway emulator: the Lambda authorizer as API Gateway runs it, the v2 event,
result mapping, the user pool's token endpoint."""

from __future__ import annotations

import base64
import http.client
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import jwt
import pytest
from memory_local.aws import MEMORY_SCOPES, LocalAws
from memory_local.gateway import MCP_ROUTE, METADATA_ROUTE, ApiGateway
from memory_local.tokens import LocalIssuer
from memory_server.domain.limits import TOKEN_LEEWAY_S

from .conftest import AGENT_SCOPES, Agent, Response, echo_handler, request

FORM = ("Content-Type", "application/x-www-form-urlencoded")


def echoed(response: Response) -> dict[str, Any]:
    assert response.status == 200, response.body
    return response.json()["event"]


def basic(client_id: str, secret: str) -> tuple[str, str]:
    return ("Authorization", "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode())


# -- the event ----------------------------------------------------------------


def test_event_shape(
    gateway: ApiGateway, alice_token: str, alice: str, local_aws: LocalAws
) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    response = request(
        gateway.url,
        "POST",
        "/w/acme/mcp?context=channel%3Ageneral&x=1&x=2&empty=",
        headers=[
            ("Content-Type", "application/json"),
            ("X-Multi", "a"),
            ("X-Multi", "b"),
            ("Mcp-Method", "tools/call"),
            ("User-Agent", "pytest-agent"),
            ("Cookie", "c1=v1; c2=v2"),
        ],
        body=body,
        token=alice_token,
    )
    payload = response.json()
    event = echoed(response)
    assert event["version"] == "2.0"
    assert event["routeKey"] == MCP_ROUTE == "ANY /w/{workspace}/mcp"
    assert event["rawPath"] == "/w/acme/mcp"
    assert event["rawQueryString"] == "context=channel%3Ageneral&x=1&x=2&empty="
    assert event["queryStringParameters"] == {"context": "channel:general", "x": "1,2", "empty": ""}
    assert event["pathParameters"] == {"workspace": "acme"}
    headers = event["headers"]
    assert all(name == name.lower() for name in headers)
    assert headers["x-multi"] == "a,b"
    assert headers["mcp-method"] == "tools/call"
    assert headers["content-type"] == "application/json"
    assert headers["authorization"] == f"Bearer {alice_token}"
    assert headers["x-forwarded-proto"] == "http"
    assert "cookie" not in headers
    assert event["cookies"] == ["c1=v1", "c2=v2"]
    assert event["body"] == body.decode() and event["isBase64Encoded"] is False

    context = event["requestContext"]
    assert context["routeKey"] == MCP_ROUTE and context["stage"] == "$default"
    assert context["http"] == {
        "method": "POST",
        "path": "/w/acme/mcp",
        "protocol": "HTTP/1.1",
        "sourceIp": "127.0.0.1",
        "userAgent": "pytest-agent",
    }
    assert context["domainName"] == urlsplit(gateway.url).netloc
    assert context["accountId"] and context["apiId"] and context["requestId"]
    assert abs(context["timeEpoch"] - time.time() * 1000) < 60_000
    assert context["time"].endswith(" +0000")

    # The Lambda authorizer's context, and nothing else about the token.
    assert context["authorizer"] == {
        "lambda": {
            "sub": alice,
            "client_id": local_aws.provisioned.people_client_id,
            "scope": "memory/read memory/write.personal",
            "token_use": "access",
            "exp": str(jwt.decode(alice_token, options={"verify_signature": False})["exp"]),
        }
    }

    assert 0 < payload["remaining_ms"] <= 30_000
    assert payload["function_name"] == "McpFunction"
    assert response.header("apigw-requestid") == context["requestId"]


def test_request_ids_are_unique(gateway: ApiGateway, alice_token: str) -> None:
    ids = {
        echoed(request(gateway.url, "GET", "/w/acme/mcp", token=alice_token))["requestContext"][
            "requestId"
        ]
        for _ in range(5)
    }
    assert len(ids) == 5


def test_get_has_no_body_and_binary_bodies_are_base64(
    gateway: ApiGateway, alice_token: str
) -> None:
    event = echoed(request(gateway.url, "GET", "/w/acme/mcp", token=alice_token))
    assert "body" not in event and event["isBase64Encoded"] is False
    assert "queryStringParameters" not in event and event["rawQueryString"] == ""
    raw = b"\xff\xfe\x00binary"
    event = echoed(request(gateway.url, "POST", "/w/acme/mcp", body=raw, token=alice_token))
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == raw


def test_path_parameters_are_decoded(gateway: ApiGateway, alice_token: str) -> None:
    event = echoed(request(gateway.url, "GET", "/w/caf%C3%A9/mcp", token=alice_token))
    assert event["pathParameters"] == {"workspace": "café"}
    assert event["rawPath"] == "/w/café/mcp"


def test_token_needs_the_bearer_scheme(gateway: ApiGateway, alice_token: str) -> None:
    bare = request(gateway.url, "GET", "/w/acme/mcp", headers=[("Authorization", alice_token)])
    assert bare.status == 401
    for scheme in ("Bearer", "bearer", "BEARER"):
        headers = [("Authorization", f"{scheme} {alice_token}")]
        assert request(gateway.url, "GET", "/w/acme/mcp", headers=headers).status == 200


def test_keep_alive_serves_several_requests_on_one_connection(
    gateway: ApiGateway, alice_token: str
) -> None:
    parts = urlsplit(gateway.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        for _ in range(3):
            response = request(
                gateway.url, "POST", "/w/acme/mcp", body=b"{}", token=alice_token, connection=conn
            )
            assert response.status == 200
        assert request(gateway.url, "GET", "/nope", connection=conn).status == 404
    finally:
        conn.close()


# -- the authorizer ---------------------------------------------------------------


def _tokens(issuer: LocalIssuer, local_aws: LocalAws, tmp_path: Path) -> dict[str, str]:
    people = local_aws.provisioned.people_client_id
    scopes = ["memory/read"]
    other = LocalIssuer(tmp_path / "other.pem", issuer.issuer)
    forged_claims = jwt.decode(
        issuer.issue_access_token(sub="x", client_id=people, scopes=scopes),
        options={"verify_signature": False},
    )
    other_private = other._key  # signs with another key under the real kid
    now = int(time.time())

    def signed(claims: dict[str, Any]) -> str:
        """``claims`` signed with the issuer's own key, under its kid."""
        return jwt.encode(claims, issuer._key, algorithm="RS256", headers={"kid": issuer.kid})

    return {
        "malformed": "not-a-jwt",
        "garbage segments": "aaa.bbb.ccc",
        "expired": issuer.issue_access_token(
            sub="x", client_id=people, scopes=scopes, ttl_s=-(TOKEN_LEEWAY_S + 5)
        ),
        "not yet valid": signed({**forged_claims, "nbf": now + 600}),
        "issued in the future": issuer.issue_access_token(
            sub="x", client_id=people, scopes=scopes, issued_at=now + 600
        ),
        "another key": other.issue_access_token(sub="x", client_id=people, scopes=scopes),
        "another key, same kid": jwt.encode(
            forged_claims, other_private, algorithm="RS256", headers={"kid": issuer.kid}
        ),
        "alg none": jwt.encode(forged_claims, None, algorithm="none", headers={"kid": issuer.kid}),
        "an ID token": signed({**forged_claims, "token_use": "id", "aud": people}),
        "no client_id": signed({k: v for k, v in forged_claims.items() if k != "client_id"}),
        "HS256 with the public key": jwt.api_jws.PyJWS().encode(
            json.dumps(forged_claims).encode(),
            b"a-shared-secret-of-thirty-two-bytes",
            algorithm="HS256",
            headers={"kid": issuer.kid},
        ),
        "wrong issuer": LocalIssuer(
            tmp_path / "other.pem", "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_other"
        ).issue_access_token(sub="x", client_id=people, scopes=scopes),
        "wrong issuer, right key": signed({**forged_claims, "iss": "https://evil.example"}),
        "no exp": signed({k: v for k, v in forged_claims.items() if k != "exp"}),
    }


def test_invalid_tokens_get_api_gateways_401_without_a_challenge(
    gateway: ApiGateway, issuer: LocalIssuer, local_aws: LocalAws, tmp_path: Path
) -> None:
    cases: dict[str, list[tuple[str, str]]] = {"no token": []}
    cases["empty bearer"] = [("Authorization", "Bearer ")]
    cases["basic scheme"] = [basic("user", "pass")]
    tokens = _tokens(issuer, local_aws, tmp_path)
    tokens["bound to another workspace"] = issuer.issue_access_token(
        sub="x",
        client_id=local_aws.provisioned.people_client_id,
        scopes=["memory/read"],
        audience=f"{gateway.url}/w/globex/mcp",
    )
    for name, token in tokens.items():
        cases[name] = [("Authorization", f"Bearer {token}")]
    for name, headers in cases.items():
        response = request(gateway.url, "POST", "/w/acme/mcp", headers=headers, body=b"{}")
        assert response.status == 401, name
        assert response.json() == {"message": "Unauthorized"}, name
        # As in AWS: API Gateway adds no WWW-Authenticate to its own refusals.
        assert response.header("WWW-Authenticate") is None, name


def test_small_clock_skew_is_tolerated(
    gateway: ApiGateway, issuer: LocalIssuer, local_aws: LocalAws
) -> None:
    people = local_aws.provisioned.people_client_id
    now = int(time.time())
    skewed = {
        "expired a moment ago": issuer.issue_access_token(
            sub="x", client_id=people, scopes=["memory/read"], ttl_s=-(TOKEN_LEEWAY_S - 10)
        ),
        "issued a moment ahead": issuer.issue_access_token(
            sub="x", client_id=people, scopes=["memory/read"], issued_at=now + TOKEN_LEEWAY_S - 10
        ),
    }
    for name, token in skewed.items():
        assert request(gateway.url, "GET", "/w/acme/mcp", token=token).status == 200, name


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD"])
def test_authentication_comes_first_for_every_method(gateway: ApiGateway, method: str) -> None:
    response = request(gateway.url, method, "/w/acme/mcp")
    assert response.status == 401
    assert response.header("WWW-Authenticate") is None


def test_401_is_identical_across_workspaces(gateway: ApiGateway) -> None:
    def normalised(workspace: str) -> tuple[int, list[tuple[str, str]], bytes]:
        response = request(gateway.url, "POST", f"/w/{workspace}/mcp", body=b"{}")
        volatile = {"date", "apigw-requestid"}
        headers = [(k.lower(), v) for k, v in response.headers if k.lower() not in volatile]
        return response.status, headers, response.body

    assert normalised("acme") == normalised("no-such-workspace-at-all")


def test_token_lacking_every_route_scope_gets_403(
    gateway: ApiGateway, issuer: LocalIssuer, local_aws: LocalAws
) -> None:
    token = issuer.issue_access_token(
        sub="x",
        client_id=local_aws.provisioned.people_client_id,
        scopes=["aws.cognito.signin.user.admin", "other/read"],
    )
    response = request(gateway.url, "POST", "/w/acme/mcp", body=b"{}", token=token)
    assert response.status == 403
    assert response.json() == {"message": "Forbidden"}
    assert response.header("WWW-Authenticate") is None


def test_admin_route_needs_memory_admin(
    gateway: ApiGateway, issuer: LocalIssuer, local_aws: LocalAws
) -> None:
    people = local_aws.provisioned.people_client_id
    reader = issuer.issue_access_token(sub="x", client_id=people, scopes=["memory/read"])
    admin = issuer.issue_access_token(sub="x", client_id=people, scopes=["memory/admin"])
    assert request(gateway.url, "GET", "/w/acme/admin/members", token=reader).status == 403
    event = echoed(request(gateway.url, "GET", "/w/acme/admin/members", token=admin))
    assert event["routeKey"] == "ANY /w/{workspace}/admin/{proxy+}"
    assert event["requestContext"]["authorizer"]["lambda"]["scope"] == "memory/admin"


@pytest.mark.parametrize("scope", MEMORY_SCOPES)
def test_any_one_memory_scope_passes_the_route(
    gateway: ApiGateway, issuer: LocalIssuer, local_aws: LocalAws, scope: str
) -> None:
    token = issuer.issue_access_token(
        sub="x", client_id=local_aws.provisioned.people_client_id, scopes=[scope]
    )
    assert (
        echoed(request(gateway.url, "GET", "/w/acme/mcp", token=token))["requestContext"][
            "authorizer"
        ]["lambda"]["scope"]
        == scope
    )


def test_any_app_client_of_the_pool_is_accepted_without_a_list(
    gateway: ApiGateway, issuer: LocalIssuer, local_aws: LocalAws
) -> None:
    # A client created after the gateway started, e.g. an agent key or a registered
    # MCP client: nothing to add anywhere.
    client_id, _ = local_aws.create_agent_client("late-agent", ["memory/read"])
    token = issuer.issue_access_token(sub=client_id, client_id=client_id, scopes=["memory/read"])
    event = echoed(request(gateway.url, "GET", "/w/acme/mcp", token=token))
    assert event["requestContext"]["authorizer"]["lambda"]["client_id"] == client_id


def test_a_token_bound_to_a_resource_passes_only_there(
    issuer: LocalIssuer, local_aws: LocalAws
) -> None:
    with ApiGateway(echo_handler, issuer=issuer, quiet=True) as gw:
        token = issuer.issue_access_token(
            sub="x",
            client_id=local_aws.provisioned.people_client_id,
            scopes=["memory/read"],
            audience=f"{gw.url}/w/acme/mcp",
        )
        assert request(gw.url, "GET", "/w/globex/mcp", token=token).status == 401
        event = echoed(request(gw.url, "GET", "/w/acme/mcp", token=token))
        assert event["requestContext"]["authorizer"]["lambda"]["aud"] == f"{gw.url}/w/acme/mcp"
        # The same workspace's admin API accepts it (its challenges name that resource).
        admin = issuer.issue_access_token(
            sub="x",
            client_id=local_aws.provisioned.people_client_id,
            scopes=["memory/admin"],
            audience=f"{gw.url}/w/acme/mcp",
        )
        assert request(gw.url, "GET", "/w/acme/admin/members", token=admin).status == 200
        # The cached decision is keyed on the token and the route, not the path: after
        # acme, globex is let through. This is why the handler checks the binding again
        # (memory_server.gateway.authenticate), and tests/endpoint proves it refuses.
        assert request(gw.url, "GET", "/w/globex/mcp", token=token).status == 200


def test_the_result_cache_is_keyed_on_the_token_and_the_route(
    issuer: LocalIssuer, local_aws: LocalAws, alice_token: str
) -> None:
    people = local_aws.provisioned.people_client_id
    admin = issuer.issue_access_token(sub="x", client_id=people, scopes=["memory/admin"])
    reader = issuer.issue_access_token(sub="x", client_id=people, scopes=["memory/read"])
    with ApiGateway(echo_handler, issuer=issuer, authorizer_ttl_s=60, quiet=True) as gw:
        calls = gw.authorizer
        for _ in range(5):
            assert request(gw.url, "POST", "/w/acme/mcp", token=alice_token).status == 200
        assert calls.invocations == 1
        # Another workspace, the same route: the cached decision.
        assert request(gw.url, "POST", "/w/globex/mcp", token=alice_token).status == 200
        assert calls.invocations == 1
        # Another route (another scope to check): a new call, and a deny is cached too.
        for _ in range(3):
            assert request(gw.url, "GET", "/w/acme/admin/members", token=reader).status == 403
        assert calls.invocations == 2
        assert request(gw.url, "GET", "/w/acme/admin/members", token=admin).status == 200
        assert calls.invocations == 3
        # Refusals of invalid tokens are not cached (each is a call); a missing header
        # is refused without one.
        for _ in range(2):
            assert request(gw.url, "POST", "/w/acme/mcp", token="x.y.z").status == 401
        assert calls.invocations == 5
        assert request(gw.url, "POST", "/w/acme/mcp").status == 401
        assert calls.invocations == 5
    with ApiGateway(echo_handler, issuer=issuer, authorizer_ttl_s=0, quiet=True) as uncached:
        for _ in range(3):
            request(uncached.url, "POST", "/w/acme/mcp", token=alice_token)
        assert uncached.authorizer.invocations == 3


def test_an_authorizer_that_fails_otherwise_is_a_500(issuer: LocalIssuer, alice_token: str) -> None:
    def broken(event: dict[str, Any], context: Any) -> Any:
        raise RuntimeError("cannot reach the key set")

    def malformed(event: dict[str, Any], context: Any) -> Any:
        return {"isAuthorized": "yes"}

    for handler in (broken, malformed):
        with ApiGateway(echo_handler, issuer=issuer, authorizer=handler, quiet=True) as gw:
            response = request(gw.url, "POST", "/w/acme/mcp", token=alice_token)
            assert (response.status, response.json()) == (
                500,
                {"message": "Internal Server Error"},
            )


def test_the_authorizer_gets_the_payload_2_request_event(
    issuer: LocalIssuer, alice_token: str
) -> None:
    seen: list[dict[str, Any]] = []

    def spy(event: dict[str, Any], context: Any) -> Any:
        seen.append(event)
        return {"isAuthorized": True, "context": {"sub": "s", "scope": "memory/read"}}

    with ApiGateway(echo_handler, issuer=issuer, authorizer=spy, quiet=True) as gw:
        request(gw.url, "POST", "/w/acme/mcp?context=x", body=b"{}", token=alice_token)
    (event,) = seen
    assert event["version"] == "2.0" and event["type"] == "REQUEST"
    assert event["identitySource"] == [f"Bearer {alice_token}", "ANY /w/{workspace}/mcp"]
    assert event["routeKey"] == "ANY /w/{workspace}/mcp"
    assert event["routeArn"].endswith("/$default/POST/w/acme/mcp")
    assert event["headers"]["authorization"] == f"Bearer {alice_token}"
    assert event["pathParameters"] == {"workspace": "acme"}
    assert event["queryStringParameters"] == {"context": "x"}
    assert "body" not in event and "authorizer" not in event["requestContext"]


def test_keys_fetched_from_a_jwks_url(
    gateway: ApiGateway, issuer: LocalIssuer, local_aws: LocalAws, alice_token: str, tmp_path: Path
) -> None:
    jwks = request(gateway.url, "GET", "/.well-known/jwks.json")
    assert jwks.status == 200 and jwks.json() == issuer.jwks()
    # A gateway that knows only the issuer string and where its keys are published.
    with ApiGateway(
        echo_handler, issuer=issuer.issuer, jwks=f"{gateway.url}/.well-known/jwks.json", quiet=True
    ) as remote:
        assert request(remote.url, "GET", "/w/acme/mcp", token=alice_token).status == 200
        other = LocalIssuer(tmp_path / "other.pem", issuer.issuer)
        forged = other.issue_access_token(
            sub="x", client_id=local_aws.provisioned.people_client_id, scopes=["memory/read"]
        )
        assert request(remote.url, "GET", "/w/acme/mcp", token=forged).status == 401
        # Without a LocalIssuer it serves neither Cognito endpoint.
        assert request(remote.url, "GET", "/.well-known/jwks.json").status == 404


# -- other routes ---------------------------------------------------------------


def test_metadata_route_needs_no_token(gateway: ApiGateway) -> None:
    response = request(gateway.url, "GET", "/.well-known/oauth-protected-resource/w/acme/mcp")
    event = echoed(response)
    assert event["routeKey"] == METADATA_ROUTE
    assert event["pathParameters"] == {"workspace": "acme"}
    assert "authorizer" not in event["requestContext"]
    # Only GET is routed there.
    post = request(
        gateway.url, "POST", "/.well-known/oauth-protected-resource/w/acme/mcp", body=b""
    )
    assert post.status == 404


@pytest.mark.parametrize(
    "method,path",
    [
        ("GET", "/"),
        ("GET", "/w/acme/mcp/"),
        ("GET", "/w/acme"),
        ("POST", "/w//mcp"),
        ("GET", "/w/a%2Fb/mcp"),
        ("GET", "/oauth2/token"),
        ("POST", "/.well-known/jwks.json"),
        ("GET", "/register"),
        ("POST", "/.well-known/oauth-authorization-server"),
    ],
)
def test_unrouted_requests_are_404(gateway: ApiGateway, method: str, path: str) -> None:
    response = request(gateway.url, method, path, body=b"")
    assert response.status == 404
    assert response.json() == {"message": "Not Found"}
    assert response.header("WWW-Authenticate") is None


def test_oversized_body_is_413_without_reading_it(gateway: ApiGateway, alice_token: str) -> None:
    parts = urlsplit(gateway.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.putrequest("POST", "/w/acme/mcp")
        conn.putheader("Authorization", f"Bearer {alice_token}")
        conn.putheader("Content-Length", str(10 * 1024 * 1024 + 1))
        conn.endheaders()
        response = conn.getresponse()
        assert response.status == 413
        assert json.loads(response.read()) == {"message": "Request Entity Too Large"}
    finally:
        conn.close()
    # Under both limits the body reaches the handler whole.
    size = [("X-Test-Mode", "size")]
    body = b"x" * (5 * 1024 * 1024)
    ok = request(gateway.url, "POST", "/w/acme/mcp", headers=size, body=body, token=alice_token)
    assert (ok.status, ok.body) == (200, str(len(body)).encode())
    # API Gateway takes 10 MB, but Lambda refuses an event over 6 MB.
    body = b"x" * (7 * 1024 * 1024)
    big = request(gateway.url, "POST", "/w/acme/mcp", headers=size, body=body, token=alice_token)
    assert (big.status, big.json()) == (413, {"message": "Request Entity Too Large"})


def test_chunked_request_body(gateway: ApiGateway, alice_token: str) -> None:
    parts = urlsplit(gateway.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.putrequest("POST", "/w/acme/mcp")
        conn.putheader("Authorization", f"Bearer {alice_token}")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        conn.send(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        response = conn.getresponse()
        assert json.loads(response.read())["event"]["body"] == "hello world"
    finally:
        conn.close()


# -- the token endpoint -----------------------------------------------------------


def test_client_credentials_over_http_end_to_end(gateway: ApiGateway, agent: Agent) -> None:
    response = request(
        gateway.url,
        "POST",
        "/oauth2/token",
        headers=[FORM, basic(agent.client_id, agent.client_secret)],
        body=b"grant_type=client_credentials",
    )
    assert response.status == 200, response.body
    assert response.header("Cache-Control") == "no-store"
    issued = response.json()
    assert issued["token_type"] == "Bearer" and issued["expires_in"] == 3600
    event = echoed(
        request(gateway.url, "POST", "/w/acme/mcp", body=b"{}", token=issued["access_token"])
    )
    verified = event["requestContext"]["authorizer"]["lambda"]
    assert verified["sub"] == verified["client_id"] == agent.client_id
    assert verified["scope"].split() == AGENT_SCOPES


def test_token_endpoint_with_form_credentials_and_a_scope(
    gateway: ApiGateway, agent: Agent
) -> None:
    form = urlencode(
        {
            "grant_type": "client_credentials",
            "client_id": agent.client_id,
            "client_secret": agent.client_secret,
            "scope": "memory/read",
        }
    )
    response = request(gateway.url, "POST", "/oauth2/token", headers=[FORM], body=form.encode())
    assert response.status == 200
    claims = jwt.decode(response.json()["access_token"], options={"verify_signature": False})
    assert claims["scope"] == "memory/read"


@pytest.mark.parametrize(
    "case,status,error",
    [
        ("wrong secret", 401, "invalid_client"),
        ("unknown client", 401, "invalid_client"),
        ("scope beyond the client's", 400, "invalid_scope"),
        ("password grant", 400, "unsupported_grant_type"),
        ("json body", 400, "invalid_request"),
    ],
)
def test_token_endpoint_errors(
    gateway: ApiGateway, agent: Agent, case: str, status: int, error: str
) -> None:
    headers = [FORM, basic(agent.client_id, agent.client_secret)]
    body = "grant_type=client_credentials"
    if case == "wrong secret":
        headers = [FORM, basic(agent.client_id, "not-the-secret")]
    elif case == "unknown client":
        headers = [FORM, basic("no-such-client", agent.client_secret)]
    elif case == "scope beyond the client's":
        body += "&scope=memory%2Fread+memory%2Fadmin"
    elif case == "password grant":
        body = "grant_type=password&username=a&password=b"
    elif case == "json body":
        headers = [
            ("Content-Type", "application/json"),
            basic(agent.client_id, agent.client_secret),
        ]
        body = json.dumps({"grant_type": "client_credentials"})
    response = request(gateway.url, "POST", "/oauth2/token", headers=headers, body=body.encode())
    assert response.status == status
    assert response.json()["error"] == error
    assert "access_token" not in response.json()
    if status == 401:
        assert response.header("WWW-Authenticate") == 'Basic realm="oauth2"'


# -- what the handler returns -------------------------------------------------------


def _mode(gateway: ApiGateway, token: str, mode: str) -> Response:
    return request(
        gateway.url, "POST", "/w/acme/mcp", headers=[("X-Test-Mode", mode)], body=b"{}", token=token
    )


def test_handler_exception_is_a_bare_500(
    gateway: ApiGateway, alice_token: str, capsys: pytest.CaptureFixture[str]
) -> None:
    response = _mode(gateway, alice_token, "raise")
    assert response.status == 500
    assert response.json() == {"message": "Internal Server Error"}
    assert b"secret-internal-detail" not in response.body and b"Traceback" not in response.body
    logged = capsys.readouterr().err
    assert "Traceback" in logged and "secret-internal-detail" in logged


def test_result_mapping(gateway: ApiGateway, alice_token: str) -> None:
    structured = _mode(gateway, alice_token, "echo")
    assert structured.header("Content-Type") == "application/json"
    assert structured.header("X-Echo") == "1"
    assert [v for k, v in structured.headers if k.lower() == "set-cookie"] == [
        "session=abc; Path=/",
        "theme=dark",
    ]
    assert structured.header("X-Ignored") is None  # payload 2.0 has no multiValueHeaders

    plain = _mode(gateway, alice_token, "string")
    assert (plain.status, plain.body, plain.header("Content-Type")) == (
        200,
        b"plain string",
        "application/json",
    )
    inferred = _mode(gateway, alice_token, "dict")
    assert (inferred.status, inferred.json()) == (200, {"hello": "world"})
    binary = _mode(gateway, alice_token, "binary")
    assert (binary.status, binary.body) == (201, b"\x00\xff\x10")
    for malformed in ("bad-status", "not-json", "huge"):
        response = _mode(gateway, alice_token, malformed)
        assert (response.status, response.json()) == (500, {"message": "Internal Server Error"})


def test_integration_timeout_is_503(
    issuer: LocalIssuer, local_aws: LocalAws, alice_token: str
) -> None:
    with ApiGateway(echo_handler, issuer=issuer, timeout_s=0.2, quiet=True) as slow:
        response = _mode(slow, alice_token, "sleep")
        assert (response.status, response.json()) == (503, {"message": "Service Unavailable"})


def test_remaining_time_counts_down_from_the_timeout(
    issuer: LocalIssuer, local_aws: LocalAws, alice_token: str
) -> None:
    seen: list[int] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(context.get_remaining_time_in_millis())
        time.sleep(0.05)
        seen.append(context.get_remaining_time_in_millis())
        return {"statusCode": 204}

    with ApiGateway(handler, issuer=issuer, timeout_s=3, quiet=True) as gw:
        response = request(gw.url, "DELETE", "/w/acme/mcp", token=alice_token)
    assert (response.status, response.body) == (204, b"")
    assert 2_000 < seen[0] <= 3_000 and seen[1] <= seen[0] - 40


def test_request_log_line(
    issuer: LocalIssuer, local_aws: LocalAws, capsys: pytest.CaptureFixture[str]
) -> None:
    with ApiGateway(echo_handler, issuer=issuer, quiet=False) as gw:
        request(gw.url, "POST", "/w/acme/mcp?context=x", body=b"{}")
        # The line is written once the response has gone (its time includes the write):
        # on a loaded machine the client can read the response before the line exists.
        err, give_up = "", time.monotonic() + 10
        while "apigw:" not in err and time.monotonic() < give_up:
            time.sleep(0.01)
            err += capsys.readouterr().err
    err += capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("apigw:")]
    assert len(lines) == 1
    assert lines[0].startswith("apigw: POST /w/acme/mcp 401 ")
    assert "ms" in lines[0] and "context=x" not in lines[0]
