"""Metadata-document clients against the local stack's real front door over HTTP.

The documents are served by a local https server (tests/signin/cimd_servers.py) under
the clients' own client_id URLs; a fake resolver sends those names to it, and the
fetcher trusts its test certificate and reaches it on 127.0.0.1. That is the one
change from the deployed wiring (which refuses loopback: tests/signin/test_cimd.py);
the authorization endpoint, consent page, pool stand-in, token endpoint and MCP
function are the stack's own.

1. The official MCP SDK client identifies itself with its ``client_metadata_url``
   (no registration), signs alice in through the consent page and calls tools.
2. Replays: each vendor's published document, at its real client_id URL, and the
   authorization request that client sends, up to a code and a token.
"""

from __future__ import annotations

import ipaddress
import json
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import jwt
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata
from memory_server.signin.cimd import ClientDocuments, DocumentFetcher, is_public_address
from pydantic import AnyUrl

from tests.e2e.conftest import call, run
from tests.e2e.test_oauth import MemoryStorage
from tests.e2e.test_signin_consent import CHALLENGE, ConsentingBrowser, hidden_fields
from tests.signin.cimd_servers import Server, by_url, https_server, make_certificate
from tests.tls import TLS

HOSTS = ("client.test", "claude.ai", "chatgpt.com", "vscode.dev")
VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"  # RFC 7636's example, for CHALLENGE

SDK_ID = "https://client.test/oauth/mcp-sdk-client.json"
SDK_CALLBACK = "https://client.test/oauth/callback"
SDK_DOCUMENT = {
    "client_id": SDK_ID,
    "client_name": "SDK e2e client",
    "redirect_uris": [SDK_CALLBACK, "http://127.0.0.1/callback"],
    "grant_types": ["authorization_code", "refresh_token"],
    "response_types": ["code"],
    "token_endpoint_auth_method": "none",
}
# The MCP Inspector's CLI with --client-metadata-url (tests/e2e/test_inspector.py): its
# callback listener is loopback, on a port of the test's choosing.
INSPECTOR_ID = "https://client.test/oauth/inspector-cli.json"
INSPECTOR_DOCUMENT = {
    "client_id": INSPECTOR_ID,
    "client_name": "MCP Inspector CLI",
    "redirect_uris": ["http://127.0.0.1/oauth/callback"],
    "grant_types": ["authorization_code", "refresh_token"],
    "response_types": ["code"],
    "token_endpoint_auth_method": "none",
}

# The vendors' documents as published (sources: docs/clients.md), each with the
# redirect URI its client sends. Fields beyond those the sources show are left out.
CLAUDE_CODE = "https://claude.ai/oauth/claude-code-client-metadata"
CLAUDE_AI = "https://claude.ai/oauth/mcp-oauth-client-metadata"
CHATGPT = "https://chatgpt.com/oauth/client.json"
CODEX = "https://chatgpt.com/oauth/codex/client.json"
VSCODE = "https://vscode.dev/oauth/client-metadata.json"
PUBLIC = {
    "grant_types": ["authorization_code", "refresh_token"],
    "response_types": ["code"],
    "token_endpoint_auth_method": "none",
}
VENDOR_DOCUMENTS: dict[str, dict[str, Any]] = {
    CLAUDE_CODE: {
        "client_id": CLAUDE_CODE,
        "client_name": "Claude Code",
        "redirect_uris": ["http://localhost/callback", "http://127.0.0.1/callback"],
        **PUBLIC,
    },
    CLAUDE_AI: {
        "client_id": CLAUDE_AI,
        "client_name": "Claude",
        "redirect_uris": [
            "https://claude.ai/api/mcp/auth_callback",
            "https://claude.com/api/mcp/auth_callback",
        ],
        **PUBLIC,
    },
    CHATGPT: {
        "client_id": CHATGPT,
        "client_name": "ChatGPT",
        "redirect_uris": ["https://chatgpt.com/connector_platform_oauth_redirect"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        # It prefers a method this server does not advertise and lists none too.
        "token_endpoint_auth_method": "private_key_jwt",
        "token_endpoint_auth_methods_supported": ["none", "private_key_jwt"],
        "jwks_uri": "https://chatgpt.com/oauth/jwks.json",
    },
    CODEX: {
        "client_id": CODEX,
        "client_name": "Codex",
        "redirect_uris": ["http://127.0.0.1/callback", "http://localhost/callback"],
        **PUBLIC,
    },
    VSCODE: {
        "client_id": VSCODE,
        "client_name": "Visual Studio Code",
        "redirect_uris": ["http://127.0.0.1:33418/", "https://vscode.dev/redirect"],
        **PUBLIC,
    },
}
# (client_id, the redirect URI its client sends, the host the consent page names or
# None for a loopback redirect, which goes straight on to sign-in)
REPLAYS = [
    (CLAUDE_CODE, "http://localhost:58135/callback", None),  # an ephemeral port
    (CLAUDE_AI, "https://claude.ai/api/mcp/auth_callback", "claude.ai"),
    (CLAUDE_AI, "https://claude.com/api/mcp/auth_callback", "claude.ai"),  # default list
    (CHATGPT, "https://chatgpt.com/connector_platform_oauth_redirect", "chatgpt.com"),
    (CODEX, "http://127.0.0.1:1455/callback", None),
    (VSCODE, "http://127.0.0.1:33418/", None),
    (VSCODE, "https://vscode.dev/redirect", "vscode.dev"),
]


@pytest.fixture(scope="module")
def published(stack: Any) -> Iterator[Server]:
    """The documents at their URLs, and the stack's front door fetching them there
    for this module (its own document cache, so nothing cached leaks either way)."""
    certificate = make_certificate(HOSTS)
    bodies = {
        url: json.dumps(doc).encode()
        for url, doc in {
            SDK_ID: SDK_DOCUMENT,
            INSPECTOR_ID: INSPECTOR_DOCUMENT,
            **VENDOR_DOCUMENTS,
        }.items()
    }

    def resolve(host: str, port: int) -> list[str]:
        if host not in HOSTS:
            raise OSError(f"{host} is not a test host")
        return ["127.0.0.1"]

    def allowed(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return is_public_address(address) or address == ipaddress.ip_address("127.0.0.1")

    with https_server(certificate, by_url(bodies, {"Cache-Control": "max-age=600"})) as server:
        authorization = stack.authorization
        before = authorization.documents
        documents = ClientDocuments(
            DocumentFetcher(
                resolver=resolve,
                address_allowed=allowed,
                tls=certificate.client_context(),
                port=server.port,
            ),
            allowed_https=before.allowed_https,
        )
        authorization.documents = documents
        authorization.token_endpoint.documents = documents
        try:
            yield server
        finally:
            authorization.documents = before
            authorization.token_endpoint.documents = before


def fetched_paths(server: Server) -> list[str]:
    return [r.split(b" ", 2)[1].decode() for r in server.requests]


@pytest.mark.slow
def test_the_sdk_client_signs_in_with_its_metadata_document(stack: Any, published: Server) -> None:
    url = stack.info["workspaces"]["acme"]
    browser = ConsentingBrowser(stack.info["api_url"], SDK_CALLBACK)
    storage = MemoryStorage()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            redirect_uris=[AnyUrl(SDK_CALLBACK)],
            client_name="SDK e2e client",
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
        client_metadata_url=SDK_ID,
    )
    seen: list[tuple[str, str, int]] = []

    async def record(response: httpx2.Response) -> None:
        seen.append((response.request.method, response.request.url.path, response.status_code))

    async def scenario() -> dict[str, Any]:
        http = httpx2.AsyncClient(
            auth=provider,
            timeout=httpx2.Timeout(30),
            event_hooks={"response": [record]},
            verify=TLS,
        )
        async with (
            http,
            Client(streamable_http_client(url, http_client=http), cache=None) as client,
        ):
            uri = f"memory://me/notes/cimd-{uuid.uuid4().hex[:8]}.md"
            written = await call(
                client, "memory_write", uri=uri, content="Signed in by URL", expected_revision=0
            )
            assert written["revision"] == 1
            return await call(client, "memory_read", uri=uri)

    read = run(scenario())
    assert read["created_by"] == "alice" and read["content"] == "Signed in by URL"

    # No registration: the SDK took the advertised documents, the server fetched its one.
    paths = [(method, path) for method, path, _ in seen]
    assert ("POST", "/register") not in paths
    assert ("GET", "/.well-known/oauth-authorization-server") in paths
    assert ("POST", "/token", 200) in seen
    assert urlsplit(SDK_ID).path in fetched_paths(published)
    assert storage.client_info is not None and storage.client_info.client_id == SDK_ID
    (opened,) = browser.opened
    asked = parse_qs(urlsplit(opened).query)
    assert asked["client_id"] == [SDK_ID] and asked["redirect_uri"] == [SDK_CALLBACK]
    assert asked["resource"] == [url] and asked["code_challenge_method"] == ["S256"]
    # The consent page names the document's host, and the name only as the client's own.
    (page,) = browser.pages
    assert "published by <strong>client.test</strong>" in page
    assert "It calls itself <strong>SDK e2e client</strong>" in page
    assert browser.redirect["code"][0].startswith("cimd.")
    # The access token is the pool's, for this workspace (RFC 8707); the refresh token
    # the front door's, which rotates.
    assert storage.tokens is not None
    claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert claims["aud"] == url
    assert (storage.tokens.refresh_token or "").startswith("rt.")


def _authorization_request(stack: Any, client_id: str, redirect_uri: str) -> dict[str, str]:
    """What a client sends: the scopes the resource's metadata lists, its resource, PKCE."""
    resource = stack.info["workspaces"]["acme"]
    path = urlsplit(resource).path
    metadata = httpx2.get(
        f"{stack.info['api_url']}/.well-known/oauth-protected-resource{path}",
        timeout=30,
        verify=TLS,
    ).json()
    return dict(
        response_type="code",
        client_id=client_id,
        redirect_uri=redirect_uri,
        state=f"st-{uuid.uuid4().hex[:8]}",
        code_challenge=CHALLENGE,
        code_challenge_method="S256",
        scope=" ".join(metadata["scopes_supported"]),
        resource=resource,
    )


@pytest.mark.parametrize(("client_id", "redirect_uri", "host"), REPLAYS)
def test_each_vendors_document_signs_in(
    stack: Any, published: Server, client_id: str, redirect_uri: str, host: str | None
) -> None:
    base = stack.info["api_url"]
    params = _authorization_request(stack, client_id, redirect_uri)
    browser = httpx2.Client(timeout=30, verify=TLS)
    first = browser.get(f"{base}/authorize?{urlencode({**params, 'login_hint': 'alice'})}")
    if host is None:
        # Loopback: straight on to the pool, as its one document client.
        assert first.status_code == 302, first.text
        response = first
    else:
        assert first.status_code == 200, first.text
        assert f"published by <strong>{host}</strong>" in first.text
        name = VENDOR_DOCUMENTS[client_id]["client_name"]
        assert f"It calls itself <strong>{name}</strong>" in first.text
        assert f"<strong>{urlsplit(redirect_uri).netloc}</strong>" in first.text
        response = browser.post(
            f"{base}/authorize",
            data={**hidden_fields(first), "decision": "approve"},
            headers={"Origin": base},
        )
    pool = parse_qs(urlsplit(response.headers["location"]).query)
    assert pool["redirect_uri"] == [f"{base}/authorize/callback"]
    assert pool["client_id"] != [client_id]
    for _ in range(3):
        assert response.status_code == 302, response.text
        location = response.headers["location"]
        if not location.startswith(base):
            break
        response = browser.get(location)
    target = urlsplit(location)
    assert f"{target.scheme}://{target.netloc}{target.path}" == redirect_uri
    got = parse_qs(target.query)
    assert got["state"] == [params["state"]] and got["code"][0].startswith("cimd.")

    exchanged = httpx2.post(
        f"{base}/token",
        data=dict(
            grant_type="authorization_code",
            code=got["code"][0],
            client_id=client_id,
            redirect_uri=redirect_uri,
            code_verifier=VERIFIER,
            resource=params["resource"],
        ),
        timeout=30,
        verify=TLS,
    )
    assert exchanged.status_code == 200, exchanged.text
    claims = jwt.decode(exchanged.json()["access_token"], options={"verify_signature": False})
    assert claims["aud"] == params["resource"]
    assert exchanged.json()["refresh_token"].startswith("rt.")
    assert urlsplit(client_id).path in fetched_paths(published)
