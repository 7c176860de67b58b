"""End to end: the official MCP Python SDK client's own OAuth support against the local
stack, starting from nothing but the endpoint URL. From the bare 401 (API Gateway's, with
no challenge, as in AWS) it discovers the protected-resource metadata at the well-known
path, the product's authorization-server metadata, registers itself (RFC 7591), signs
alice in (authorization code with PKCE, through the product's authorization endpoint,
which hands a loopback redirect straight on to the pool's; the local sign-in page takes
``login_hint``) and then calls the tools, in both protocol generations. With a redirect
that leaves the machine, through the consent page: tests/e2e/test_signin_consent.py."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from memory_server.signin.registry import SigninTable
from pydantic import AnyUrl

from tests.e2e.conftest import call, run
from tests.tls import TLS

MODES = {"2026-07-28": "auto", "2025-11-25": "legacy"}
REDIRECT = "http://127.0.0.1:47613/callback"  # never listened on: the test reads the redirect


class MemoryStorage:
    """The SDK's TokenStorage, in memory (a real client keeps these on disk)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class ScriptedBrowser:
    """What the user's browser does: open the authorization URL, sign in as ``who``
    (``login_hint`` instead of clicking), follow the redirects and hand the last one,
    to the client's redirect URI, back to the client."""

    def __init__(self, who: str) -> None:
        self.who = who
        self.opened: list[str] = []
        self.hops: list[str] = []
        self.redirect: dict[str, list[str]] = {}

    async def open(self, authorization_url: str) -> None:
        self.opened.append(authorization_url)
        url = f"{authorization_url}&login_hint={self.who}"
        async with httpx2.AsyncClient(timeout=30, verify=TLS) as browser:
            while not url.startswith(REDIRECT):
                self.hops.append(urlsplit(url).path)
                page = await browser.get(url)
                assert page.status_code == 302 and len(self.hops) < 5, page.text
                url = page.headers["location"]
        self.redirect = parse_qs(urlsplit(url).query)

    async def callback(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=self.redirect["code"][0], state=self.redirect.get("state", [None])[0]
        )


@pytest.mark.slow
@pytest.mark.parametrize("expected_version", list(MODES))
def test_sdk_client_discovers_registers_signs_in_and_calls_tools(
    stack, expected_version: str
) -> None:  # type: ignore[no-untyped-def]
    url = stack.info["workspaces"]["acme"]
    browser = ScriptedBrowser("alice")
    storage = MemoryStorage()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            redirect_uris=[AnyUrl(REDIRECT)],
            client_name=f"e2e-{expected_version}",
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )
    seen: list[tuple[str, str, int, str | None]] = []

    async def record(response: httpx2.Response) -> None:
        request = response.request
        seen.append(
            (
                request.method,
                request.url.path,
                response.status_code,
                response.headers.get("www-authenticate"),
            )
        )

    async def scenario() -> dict[str, Any]:
        http = httpx2.AsyncClient(
            auth=provider,
            timeout=httpx2.Timeout(30),
            event_hooks={"response": [record]},
            verify=TLS,
        )
        async with (
            http,
            Client(
                streamable_http_client(url, http_client=http),
                mode=MODES[expected_version],
                cache=None,
            ) as client,
        ):  # type: ignore[arg-type]
            assert client.protocol_version == expected_version
            uri = f"memory://me/notes/oauth-{uuid.uuid4().hex[:8]}.md"
            written = await call(
                client,
                "memory_write",
                uri=uri,
                content="Signed in through discovery and registration",
                expected_revision=0,
            )
            assert written["revision"] == 1
            read = await call(client, "memory_read", uri=uri)
            assert read["content"] == "Signed in through discovery and registration"
            return read

    stack.aws.read_audit_events()
    read = run(scenario())
    # It was alice: her personal namespace, her handle on the revision.
    assert read["created_by"] == "alice" and read["uri"].startswith("memory://me/")

    # The path a real client takes against AWS, in order.
    paths = [(method, path, status) for method, path, status, _ in seen]
    mcp_path = urlsplit(url).path
    first_post = paths.index(("POST", mcp_path, 401))
    assert seen[first_post][3] is None  # API Gateway's 401: no challenge to follow
    flow = paths[first_post + 1 :]
    assert flow[:4] == [
        ("GET", f"/.well-known/oauth-protected-resource{mcp_path}", 200),
        ("GET", "/.well-known/oauth-authorization-server", 200),
        ("POST", "/register", 201),
        ("POST", "/token", 200),  # the front door's, which asks the pool
    ]
    assert ("POST", mcp_path, 200) in flow[4:]

    # The client registered itself as a public code client for its redirect URI only,
    # and asked for the MCP scopes and this workspace as the resource.
    client_info = storage.client_info
    assert client_info is not None and client_info.token_endpoint_auth_method == "none"
    described = stack.aws.describe_client(client_info.client_id)
    assert described["CallbackURLs"] == [REDIRECT] and "ClientSecret" not in described
    assert "memory/admin" not in described["AllowedOAuthScopes"]
    (opened,) = browser.opened
    # The product's authorization endpoint, which sent the browser on to the pool's
    # (a loopback redirect: no consent page), which redirected to the client.
    assert opened.startswith(stack.info["authorization_endpoint"] + "?")
    assert browser.hops == ["/authorize", "/oauth2/authorize"]
    authorization = parse_qs(urlsplit(opened).query)
    assert authorization["code_challenge_method"] == ["S256"]
    assert authorization["resource"] == [url]
    assert storage.tokens is not None and storage.tokens.refresh_token
    registered = [
        e["detail"] for e in stack.aws.read_audit_events() if e["detail-type"] == "ClientRegistered"
    ]
    assert [e["client_id"] for e in registered] == [client_info.client_id]
    # Its use is recorded (by the MCP function), so the daily sweep keeps it.
    table = SigninTable(stack.aws.client("dynamodb"), stack.aws.provisioned.signin_table)
    (kept,) = [r for r in table.clients() if r.client_id == client_info.client_id]
    assert kept.last_used is not None and kept.last_used >= kept.created_at
