"""Issue 23, item 1, end to end over HTTP against the local stack: one link no longer
steals a person's tokens.

The attack as reported: register a client named "Claude Desktop" with a redirect URI on
the attacker's host, send a person an authorization link on the genuine domain; with a
live sign-in session the person is redirected at once and the code (good for every
workspace they are in) lands on the attacker's host. Here every way that link could be
written is tried, and no code reaches the attacker; ``login_hint=alice`` stands in for
alice's live session at the pool (the stand-in signs her in without a page, as the pool
would redirect at once).

Then the official MCP SDK's OAuth client signs in with a redirect that leaves the
machine (an allow-listed host's callback), through the consent page, and calls tools.
"""

from __future__ import annotations

import html
import re
import uuid
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from pydantic import AnyUrl

from tests.e2e.conftest import call, run
from tests.e2e.test_oauth import MemoryStorage
from tests.tls import TLS

EVIL = "https://evil.example/cb"
CALLBACK = "https://claude.ai/api/mcp/auth_callback"  # on the default allow-list
CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"  # RFC 7636's example
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]*)" value="([^"]*)">')


def register(stack: Any, redirect_uris: list[str]) -> httpx2.Response:
    return httpx2.post(
        f"{stack.info['api_url']}/register",
        json={"client_name": "Claude Desktop", "redirect_uris": redirect_uris},
        timeout=30,
        verify=TLS,
    )


def link(client_id: str, redirect_uri: str, **more: str) -> str:
    """The query of an authorization link the attacker could send."""
    return urlencode(
        dict(
            response_type="code",
            client_id=client_id,
            redirect_uri=redirect_uri,
            state="attacker-state",
            code_challenge=CHALLENGE,
            code_challenge_method="S256",
            login_hint="alice",
            **more,
        )
    )


def hidden_fields(page: httpx2.Response) -> dict[str, str]:
    return {html.unescape(k): html.unescape(v) for k, v in _HIDDEN.findall(page.text)}


def test_the_reported_token_theft_no_longer_works(stack: Any) -> None:
    base = stack.info["api_url"]
    authorize = stack.info["authorization_endpoint"]  # what the metadata names
    metadata = httpx2.get(
        f"{base}/.well-known/oauth-authorization-server", timeout=30, verify=TLS
    ).json()
    assert metadata["authorization_endpoint"] == authorize == f"{base}/authorize"
    browser = httpx2.Client(timeout=30, verify=TLS)  # alice's, following nothing by itself
    delivered: list[str] = []  # every place a Location sent alice's browser

    def visit(url: str, **kwargs: Any) -> httpx2.Response:
        response = browser.request(kwargs.pop("method", "GET"), url, **kwargs)
        if "location" in response.headers:
            delivered.append(response.headers["location"])
        return response

    # 1. The attacker cannot register its own host, however it asks.
    refused = register(stack, [EVIL])
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_redirect_uri"
    assert "loopback" in refused.json()["error_description"]
    mixed = register(stack, [EVIL, "http://127.0.0.1:9/cb"])
    assert mixed.status_code == 201 and mixed.json()["redirect_uris"] == ["http://127.0.0.1:9/cb"]

    # 2. A client with an allow-listed redirect (the genuine host's callback) and the
    #    attacker's host in the link: a page at the product's endpoint and at the
    #    pool's, no redirect at all.
    registered = register(stack, [CALLBACK])
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    for endpoint in (authorize, f"{base}/oauth2/authorize"):
        page = visit(f"{endpoint}?{link(client_id, EVIL)}")
        assert page.status_code == 400 and "location" not in page.headers, endpoint

    # 3. The registered redirect leaves the machine: a consent page naming the client
    #    and where the code goes, and no code until alice approves.
    consent = visit(f"{authorize}?{link(client_id, CALLBACK)}")
    assert consent.status_code == 200 and "location" not in consent.headers
    assert "Claude Desktop" in consent.text and "<strong>claude.ai</strong>" in consent.text
    assert "has not verified it" in consent.text

    # 4. An approval forged by the attacker's page (an auto-submitting form: its own
    #    origin, the token from a page it fetched for itself, none of alice's cookie).
    attackers_page = httpx2.get(f"{authorize}?{link(client_id, CALLBACK)}", timeout=30, verify=TLS)
    forged = visit(
        authorize,
        method="POST",
        data={**hidden_fields(attackers_page), "decision": "approve"},
        headers={"Origin": "https://evil.example"},
    )
    assert forged.status_code == 403 and "location" not in forged.headers
    without_origin = visit(
        authorize, method="POST", data={**hidden_fields(attackers_page), "decision": "approve"}
    )
    assert without_origin.status_code == 403  # the cookie it cannot set or read

    # 5. Even straight at the pool's endpoint (reachable, as Cognito's is), skipping the
    #    consent page, the code goes to the registered host only, not to the attacker.
    direct = visit(f"{base}/oauth2/authorize?{link(client_id, CALLBACK)}")
    assert direct.status_code == 302 and direct.headers["location"].startswith(CALLBACK + "?")

    assert delivered and not [url for url in delivered if not url.startswith(CALLBACK)]
    assert not [url for url in delivered if urlsplit(url).hostname == "evil.example"]


class ConsentingBrowser:
    """alice's browser for a client whose redirect leaves the machine: it opens the
    authorization URL, reads the consent page, approves (the page's form, with the
    page's cookie and this origin), follows the redirects to ``callback`` (the client's
    redirect URI) and hands the code back."""

    def __init__(self, origin: str, callback: str = CALLBACK) -> None:
        self.origin = origin
        self.callback_uri = callback
        self.pages: list[str] = []
        self.opened: list[str] = []
        self.redirect: dict[str, list[str]] = {}

    async def open(self, authorization_url: str) -> None:
        self.opened.append(authorization_url)
        async with httpx2.AsyncClient(timeout=30, verify=TLS) as browser:
            page = await browser.get(f"{authorization_url}&login_hint=alice")
            assert page.status_code == 200, page.text
            self.pages.append(page.text)
            response = await browser.post(
                f"{self.origin}/authorize",
                data={**hidden_fields(page), "decision": "approve"},
                headers={"Origin": self.origin},
            )
            for _ in range(3):
                assert response.status_code == 302, response.text
                location = response.headers["location"]
                if location.startswith(self.callback_uri + "?"):
                    self.redirect = parse_qs(urlsplit(location).query)
                    return
                response = await browser.get(location)
        raise AssertionError("never redirected to the client")

    async def callback(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=self.redirect["code"][0], state=self.redirect.get("state", [None])[0]
        )


@pytest.mark.slow
def test_the_sdk_client_signs_in_through_the_consent_page(stack: Any) -> None:
    url = stack.info["workspaces"]["acme"]
    browser = ConsentingBrowser(stack.info["api_url"])
    storage = MemoryStorage()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            redirect_uris=[AnyUrl(CALLBACK)],
            client_name="claude.ai-like host",
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )

    async def scenario() -> dict[str, Any]:
        http = httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30), verify=TLS)
        async with (
            http,
            Client(streamable_http_client(url, http_client=http), cache=None) as client,
        ):
            uri = f"memory://me/notes/consent-{uuid.uuid4().hex[:8]}.md"
            await call(client, "memory_write", uri=uri, content="Approved", expected_revision=0)
            return await call(client, "memory_read", uri=uri)

    read = run(scenario())
    assert read["created_by"] == "alice" and read["content"] == "Approved"
    (page,) = browser.pages
    assert "claude.ai-like host" in page and "<strong>claude.ai</strong>" in page
    assert storage.client_info is not None
    assert [str(u) for u in storage.client_info.redirect_uris or []] == [CALLBACK]
