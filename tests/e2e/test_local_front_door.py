"""The front door of the local stack over real HTTP: an expired token stops at the
handler even while the authorizer's cached decision lets it through, and every route
(the sign-in page and its ``login_hint``, the token endpoint, registration, metadata,
the admin API, MCP) answers only loopback names and origins (DNS rebinding)."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import uuid
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import psycopg
from memory_local.dev import DevStack
from memory_server.admin import operators
from memory_server.domain.limits import TOKEN_LEEWAY_S

from tests.proof.harness import HANDSHAKE, people_client
from tests.tls import TLS

TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
PEOPLE_REDIRECT = "http://localhost/callback"  # the people client's (memory_local.aws)


def _member(owner: psycopg.Connection, tag: str) -> tuple[str, str]:
    """A workspace of this test and its admin's subject."""
    slug, subject = f"door-{tag}", str(uuid.uuid4())
    operators.create_workspace(
        owner, slug, admin_subject=subject, admin_handle=f"ann-{tag}", memory_enabled=True
    )
    return slug, subject


def test_an_expired_token_stops_at_the_handler_while_the_authorizer_cache_lets_it_through(
    stack: DevStack, owner_db: psycopg.Connection
) -> None:
    """API Gateway reuses the authorizer's allow for a token for 300 s; a token that
    expires meanwhile used to keep working until then. The handler reads ``exp`` from
    the authorizer's context and answers 401 with the challenge it gives any bad token."""
    assert stack.gateway is not None and stack.gateway.local_issuer is not None
    slug, subject = _member(owner_db, uuid.uuid4().hex[:10])
    # Valid for two more seconds, counting the clock-skew allowance the authorizer gives.
    now = int(time.time())
    expires_at = now - TOKEN_LEEWAY_S + 2
    token = stack.gateway.local_issuer.issue_access_token(
        sub=subject,
        client_id=people_client(stack),
        scopes=["memory/read"],
        username=f"ann-{slug}",
        issued_at=now - 3600,
        ttl_s=expires_at - (now - 3600),
    )
    url = f"{stack.info['api_url']}/w/{slug}/mcp"
    headers = {
        "authorization": f"Bearer {token}",
        "mcp-protocol-version": HANDSHAKE,
        "accept": "application/json, text/event-stream",
    }
    first = httpx2.post(url, json=TOOLS_LIST, headers=headers, timeout=30, verify=TLS)
    assert first.status_code == 200, first.text
    invocations = stack.gateway.authorizer.invocations

    # Ask again until the answer changes (or long after it should have).
    give_up = time.time() + TOKEN_LEEWAY_S + 15
    while True:
        answer = httpx2.post(url, json=TOOLS_LIST, headers=headers, timeout=30, verify=TLS)
        if answer.status_code != 200 or time.time() > give_up:
            break
        time.sleep(0.1)
    assert answer.status_code == 401, "the expired token kept working"
    assert time.time() >= expires_at + TOKEN_LEEWAY_S  # not a moment before it expired
    # The authorizer was not asked again: its cached allow is what let the request in.
    assert stack.gateway.authorizer.invocations == invocations
    metadata = f"{stack.info['api_url']}/.well-known/oauth-protected-resource/w/{slug}/mcp"
    assert answer.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{metadata}", scope="memory/read"'
    )
    # The same answer as for a token the handler refuses for another reason, past the
    # same cache: one bound (RFC 8707) to this workspace, presented at another.
    bound = stack.gateway.local_issuer.issue_access_token(
        sub=subject,
        client_id=people_client(stack),
        scopes=["memory/read"],
        audience=url,
    )
    as_bound = {**headers, "authorization": f"Bearer {bound}"}
    assert (
        httpx2.post(url, json=TOOLS_LIST, headers=as_bound, timeout=30, verify=TLS).status_code
        == 200
    )
    other = httpx2.post(
        url.replace(f"/w/{slug}/", "/w/acme/"), json=TOOLS_LIST, headers=as_bound, verify=TLS
    )
    assert other.status_code == 401 and other.json() == answer.json() == {"message": "Unauthorized"}
    assert other.headers["www-authenticate"] == answer.headers["www-authenticate"].replace(
        f"/w/{slug}/", "/w/acme/"
    )


def _pkce() -> str:
    digest = hashlib.sha256(secrets.token_urlsafe(48).encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def test_login_hint_answers_no_rebinding_page(stack: DevStack) -> None:
    """DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 asks
    the local sign-in for alice's code (``login_hint`` needs no click). The browser
    sends ``Host: evil.example``: refused, no code. The loopback name gets the code."""
    api = stack.info["api_url"]
    port = urlsplit(api).port
    query = urlencode(
        {
            "response_type": "code",
            "client_id": people_client(stack),
            "redirect_uri": PEOPLE_REDIRECT,
            "code_challenge": _pkce(),
            "code_challenge_method": "S256",
            "scope": "memory/read",
            "login_hint": "alice",
        }
    )
    for host in ("evil.example", f"evil.example:{port}"):
        refused = httpx2.get(f"{api}/oauth2/authorize?{query}", headers={"host": host}, verify=TLS)
        assert (refused.status_code, refused.json()) == (403, {"error": "host_not_allowed"})
        assert "location" not in refused.headers
    answered = httpx2.get(f"{api}/oauth2/authorize?{query}", verify=TLS)
    assert answered.status_code == 302, answered.text
    location = answered.headers["location"]
    assert location.startswith(PEOPLE_REDIRECT) and parse_qs(urlsplit(location).query)["code"]


def test_every_local_route_answers_only_loopback_hosts_and_origins(stack: DevStack) -> None:
    api = stack.info["api_url"]
    bearer = {"authorization": f"Bearer {stack.info['tokens']['alice']}"}
    form = {"content-type": "application/x-www-form-urlencoded"}
    routes: list[tuple[str, str, dict[str, str], bytes | None]] = [
        ("GET", "/oauth2/authorize?client_id=x", {}, None),
        ("POST", "/oauth2/authorize", form, b"client_id=x&principal=alice"),
        ("POST", "/oauth2/token", form, b"grant_type=client_credentials"),
        ("POST", "/register", {"content-type": "application/json"}, b"{}"),
        ("GET", "/.well-known/oauth-authorization-server", {}, None),
        ("GET", "/.well-known/oauth-protected-resource/w/acme/mcp", {}, None),
        ("GET", "/.well-known/jwks.json", {}, None),
        ("GET", "/w/acme/admin/members", bearer, None),
        ("POST", "/w/acme/mcp", {**bearer, "content-type": "application/json"}, b"{}"),
        ("GET", "/nowhere", {}, None),
    ]
    problems = []
    for method, path, headers, body in routes:

        def send(extra: dict[str, str], method: str = method, path: str = path) -> httpx2.Response:
            return httpx2.request(
                method,
                f"{api}{path}",
                headers={**headers, **extra},
                content=body,
                timeout=30,
                verify=TLS,
            )

        for extra, error in (
            ({"host": "evil.example"}, "host_not_allowed"),
            ({"host": "localhost.evil.example"}, "host_not_allowed"),
            ({"origin": "http://evil.example"}, "origin_not_allowed"),
            ({"origin": "null"}, "origin_not_allowed"),
        ):
            answer = send(extra)
            if (answer.status_code, answer.content) != (403, f'{{"error":"{error}"}}'.encode()):
                problems.append((method, path, extra, answer.status_code, answer.text[:100]))
        # Loopback names and pages (the MCP Inspector's, the sign-in page's own) pass.
        for extra in (
            {"host": f"localhost:{urlsplit(api).port}"},
            {"origin": "http://localhost:6274"},
        ):
            answer = send(extra)
            if answer.status_code == 403 and b"_not_allowed" in answer.content:
                problems.append((method, path, extra, answer.status_code, answer.text[:100]))
    assert problems == []
