"""Client ID Metadata Documents: the fetch's SSRF protections against local https
servers behind a fake resolver, the document's validation and its cache."""

from __future__ import annotations

import ipaddress
import json
import time
from collections.abc import Iterator

import pytest
from memory_server.domain.errors import OAuthError
from memory_server.domain.grants import MCP_SCOPES
from memory_server.domain.limits import CIMD_CACHE_MAX_S, CIMD_MAX_BYTES
from memory_server.signin.cimd import (
    ClientDocuments,
    DocumentFetcher,
    FetchRefused,
    cache_seconds,
    client_id_url_problem,
    is_public_address,
    redirect_matches,
    validate_document,
)

from tests.signin.cimd_servers import (
    Certificate,
    Server,
    answer,
    drip,
    endless,
    https_server,
    make_certificate,
)

URL = "https://client.test/oauth/client.json"


def document(**more: object) -> dict[str, object]:
    return {
        "client_id": URL,
        "client_name": "Test Client",
        "redirect_uris": ["http://127.0.0.1/callback", "https://client.test/cb"],
        "token_endpoint_auth_method": "none",
        **more,
    }


@pytest.fixture(scope="module")
def certificate() -> Certificate:
    return make_certificate()


def fetcher(
    certificate: Certificate, server: Server, resolves_to: str, *, trust_loopback: bool = False
) -> DocumentFetcher:
    """A fetcher whose resolver answers ``resolves_to`` for every name and connects to
    ``server``'s port. ``trust_loopback``: the one policy change the cut-off tests need
    to reach a local server at all (everything else as deployed)."""

    def allowed(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return is_public_address(address) or (trust_loopback and address.is_loopback)

    return DocumentFetcher(
        resolver=lambda host, port: [resolves_to],
        address_allowed=allowed,
        tls=certificate.client_context(),
        timeout_s=0.6,
        port=server.port,
    )


@pytest.fixture
def good_server(certificate: Certificate) -> Iterator[Server]:
    body = json.dumps(document()).encode()
    with https_server(certificate, answer(body, headers={"Cache-Control": "max-age=60"})) as s:
        yield s


# -- where the fetch may go -------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "169.254.169.254",
        "10.0.0.5",
        "192.168.1.1",
        "100.64.0.1",
        "::1",
        "::ffff:127.0.0.1",
        "fe80::1",
        "64:ff9b::a9fe:a9fe",
        "0.0.0.0",
        "224.0.0.1",
    ],
)
def test_a_host_resolving_to_a_private_address_is_refused_unfetched(
    certificate: Certificate, good_server: Server, address: str
) -> None:
    with pytest.raises(FetchRefused, match="does not fetch from"):
        fetcher(certificate, good_server, address).fetch(URL)
    assert good_server.requests == []  # the server listening there heard nothing


def test_one_private_answer_among_public_ones_is_enough_to_refuse(
    certificate: Certificate, good_server: Server
) -> None:
    mixed = DocumentFetcher(
        resolver=lambda host, port: ["93.184.215.14", "169.254.169.254"],
        tls=certificate.client_context(),
        port=good_server.port,
    )
    with pytest.raises(FetchRefused, match=r"169\.254\.169\.254"):
        mixed.fetch(URL)
    assert good_server.requests == []


def test_ip_literals_are_checked_as_addresses(
    certificate: Certificate, good_server: Server
) -> None:
    public_resolver = fetcher(certificate, good_server, "93.184.215.14")
    for url in ("https://127.0.0.1/c.json", "https://[::1]/c.json", "https://169.254.169.254/x"):
        with pytest.raises(FetchRefused, match="does not fetch from"):
            public_resolver.fetch(url)
    assert good_server.requests == []


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://client.test/c.json", "https"),
        ("https://user:pw@client.test/c.json", "credentials"),
        ("https://user@client.test/c.json", "credentials"),
        ("https://client.test/c.json#x", "fragment"),
        ("https://client.test", "path"),
        ("https://client.test/", "path"),
        ("https://client.test/a/../c.json", "segments"),
        ("https://client.test:8443/c.json", "port"),
        ("https://client.test/a b", "spaces"),
        ("https:///c.json", "host"),
    ],
)
def test_client_id_urls_follow_the_drafts_rules(url: str, rule: str) -> None:
    problem = client_id_url_problem(url)
    assert problem is not None and rule in problem
    assert client_id_url_problem(URL) is None
    assert client_id_url_problem("https://client.test/c.json?v=2") is None


def test_a_redirect_is_not_followed_even_to_a_good_server(certificate: Certificate) -> None:
    with https_server(certificate, answer(json.dumps(document()).encode())) as target:
        to_metadata = answer(
            b"", "302 Found", {"Location": "http://169.254.169.254/latest/meta-data/"}
        )
        with https_server(certificate, to_metadata) as redirecting:
            with pytest.raises(FetchRefused, match="302"):
                fetcher(certificate, redirecting, "127.0.0.1", trust_loopback=True).fetch(URL)
            assert len(redirecting.requests) == 1
        assert target.requests == []


def test_a_slow_document_is_cut_off_at_the_deadline(certificate: Certificate) -> None:
    with https_server(certificate, drip(0.05)) as slow:
        started = time.monotonic()
        with pytest.raises(FetchRefused, match="longer than"):
            fetcher(certificate, slow, "127.0.0.1", trust_loopback=True).fetch(URL)
        elapsed = time.monotonic() - started
    # Every byte arrives well within the socket's own timeout; the total deadline is
    # what ends it.
    assert 0.5 < elapsed < 2.0


def test_a_huge_document_is_cut_off_at_the_size_limit(certificate: Certificate) -> None:
    with (
        https_server(certificate, endless()) as huge,
        pytest.raises(FetchRefused, match=f"exceeds {CIMD_MAX_BYTES} bytes"),
    ):
        fetcher(certificate, huge, "127.0.0.1", trust_loopback=True).fetch(URL)
    announced = answer(b"{}" + b" " * CIMD_MAX_BYTES)
    with https_server(certificate, announced) as big, pytest.raises(FetchRefused, match="exceeds"):
        fetcher(certificate, big, "127.0.0.1", trust_loopback=True).fetch(URL)


def test_the_certificate_must_be_the_hosts(certificate: Certificate, good_server: Server) -> None:
    other = make_certificate()  # a server the fetcher's store does not trust
    untrusting = DocumentFetcher(
        resolver=lambda host, port: ["127.0.0.1"],
        address_allowed=lambda address: True,
        tls=other.client_context(),
        port=good_server.port,
    )
    with pytest.raises(FetchRefused, match="could not be fetched"):
        untrusting.fetch(URL)


def test_a_good_document_is_fetched_validated_and_cached(
    certificate: Certificate, good_server: Server
) -> None:
    now = [1000.0]
    documents = ClientDocuments(
        fetcher(certificate, good_server, "127.0.0.1", trust_loopback=True), clock=lambda: now[0]
    )
    client = documents.get(URL)
    assert (client.client_id, client.host, client.name) == (URL, "client.test", "Test Client")
    assert client.redirect_uris == ("http://127.0.0.1/callback", "https://client.test/cb")
    assert client.scopes == tuple(MCP_SCOPES)
    documents.get(URL)
    now[0] += 59
    documents.get(URL)
    assert len(good_server.requests) == 1  # max-age=60 honoured
    now[0] += 2
    documents.get(URL)
    assert len(good_server.requests) == 2
    request = good_server.requests[0].decode()
    assert request.startswith("GET /oauth/client.json HTTP/1.1") and "Host: client.test" in request


def test_refusals_are_invalid_client_and_cached_briefly(
    certificate: Certificate, good_server: Server
) -> None:
    now = [0.0]
    documents = ClientDocuments(
        fetcher(certificate, good_server, "127.0.0.1"), clock=lambda: now[0]
    )
    for _ in range(2):
        with pytest.raises(OAuthError) as refused:
            documents.get(URL)
        assert (refused.value.status, refused.value.code) == (400, "invalid_client")
    assert documents.fetches == 1
    now[0] += 31
    with pytest.raises(OAuthError):
        documents.get(URL)
    assert documents.fetches == 2


def test_cache_headers_are_honoured_with_an_upper_bound() -> None:
    assert cache_seconds("max-age=120") == 120
    assert cache_seconds("public, max-age=604800") == CIMD_CACHE_MAX_S
    assert cache_seconds("no-store") == 0
    assert cache_seconds("no-cache, max-age=600") == 0
    assert cache_seconds("private, max-age=600") == 0
    assert cache_seconds("") == 300


# -- what the document must say ---------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"client_id": "https://client.test/other.json"}, "invalid_client"),
        ({"client_id": URL + "/"}, "invalid_client"),  # no normalisation
        ({"token_endpoint_auth_method": "client_secret_basic"}, "invalid_client"),
        (
            {
                "token_endpoint_auth_method": "private_key_jwt",
                "token_endpoint_auth_methods_supported": ["private_key_jwt"],
            },
            "invalid_client",
        ),
        ({"client_secret": "s"}, "invalid_client"),
        ({"grant_types": ["client_credentials"]}, "invalid_client"),
        ({"response_types": ["token"]}, "invalid_client"),
        ({"scope": "openid"}, "invalid_client"),
        ({"client_name": 5}, "invalid_client"),
        ({"redirect_uris": []}, "invalid_redirect_uri"),
        ({"redirect_uris": "http://127.0.0.1/cb"}, "invalid_redirect_uri"),
        (
            {"redirect_uris": ["https://evil.example/cb", "javascript:alert(1)", "data:,x"]},
            "invalid_redirect_uri",
        ),
        (
            {"redirect_uris": ["http://client.test/cb", "file:///etc/passwd"]},
            "invalid_redirect_uri",
        ),
    ],
)
def test_bad_documents_are_refused(changes: dict[str, object], code: str) -> None:
    with pytest.raises(OAuthError) as refused:
        validate_document(URL, json.dumps(document(**changes)).encode())
    assert refused.value.code == code
    for body in (b"not json", b"[1]"):
        with pytest.raises(OAuthError, match="JSON"):
            validate_document(URL, body)


def test_a_document_preferring_another_method_but_listing_none_is_a_public_client() -> None:
    # The shape of ChatGPT's document: it prefers private_key_jwt, which this server does
    # not advertise, and lists none, which it then uses (with PKCE).
    client = validate_document(
        URL,
        json.dumps(
            document(
                token_endpoint_auth_method="private_key_jwt",
                token_endpoint_auth_methods_supported=["none", "private_key_jwt"],
                jwks_uri="https://client.test/oauth/jwks.json",
            )
        ).encode(),
    )
    assert client.client_id == URL
    with pytest.raises(OAuthError):  # still no secret, whatever else it lists
        validate_document(
            URL,
            json.dumps(
                document(token_endpoint_auth_methods_supported=["none"], client_secret="s")
            ).encode(),
        )


def test_redirects_are_matched_exactly_except_a_loopback_port() -> None:
    uris = [
        "http://127.0.0.1/callback",
        "http://localhost:3118/oauth/callback",
        "https://client.test/cb",
        "https://evil.example/cb",  # not the document's host, not on the list: dropped
        "cursor://anysphere.cursor-mcp/oauth/callback",
    ]
    client = validate_document(URL, json.dumps(document(redirect_uris=uris)).encode())
    assert "https://evil.example/cb" not in client.redirect_uris
    assert redirect_matches(client, "http://127.0.0.1:51234/callback")
    assert redirect_matches(client, "http://localhost:80/oauth/callback")
    assert redirect_matches(client, "cursor://anysphere.cursor-mcp/oauth/callback")
    assert redirect_matches(client, "https://client.test/cb")
    for near_miss in (
        "http://127.0.0.1:51234/callback/",
        "http://127.0.0.1:51234/callback?x=1",
        "http://localhost:51234/callback",  # a different loopback host than listed
        "https://client.test/cb/",
        "https://client.test:444/cb",
        "https://evil.example/cb",
        "cursor://anysphere.cursor-mcp/oauth/callback2",
    ):
        assert not redirect_matches(client, near_miss), near_miss
    listed = validate_document(
        URL, json.dumps(document(redirect_uris=uris)).encode(), frozenset({uris[3]})
    )
    assert redirect_matches(listed, "https://evil.example/cb")  # the operator's list counts
