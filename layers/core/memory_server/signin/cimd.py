"""Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a client
whose ``client_id`` is an https URL is described by the JSON document at that URL.

The authorization server fetches the document itself, so the fetch is where a stranger
could aim this server at something only it can reach. :class:`DocumentFetcher`
therefore:

- takes only ``https`` URLs with a host and a path, no credentials, no fragment, no
  ``.``/``..`` segments and the default port (:func:`client_id_url_problem`);
- resolves the host once and refuses it if any address it resolves to is not a
  public unicast address (loopback, private, link-local such as 169.254.169.254,
  carrier-grade NAT, multicast, reserved, IPv4-mapped or NAT64 forms of those), then
  connects to that address, not to the name again, so a second answer (DNS rebinding)
  cannot move the connection; TLS is checked against the name;
- follows no redirect (any status but 200 is refused, so a redirect to a private
  address is never followed), reads at most
  :data:`~memory_server.domain.limits.CIMD_MAX_BYTES` and gives up after
  :data:`~memory_server.domain.limits.CIMD_FETCH_TIMEOUT_S` in total, however slowly
  the bytes arrive.

:class:`ClientDocuments` validates a fetched document (its ``client_id`` equals the
URL, character for character; a public client: no secret, ``none`` as the token
endpoint auth method; its redirect URIs under :mod:`.registration`'s rules, plus https
redirects on the document's own host) and caches it as the response's
``Cache-Control`` says, never longer than
:data:`~memory_server.domain.limits.CIMD_CACHE_MAX_S`; a refusal is cached briefly so a
bad URL cannot turn every request into a fetch. Refusals are
``OAuthError(400, "invalid_client", ...)`` naming the rule.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import logging
import re
import socket
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from memory_server.domain.errors import OAuthError
from memory_server.domain.grants import MCP_SCOPES
from memory_server.domain.limits import (
    CIMD_CACHE_DEFAULT_S,
    CIMD_CACHE_ENTRIES,
    CIMD_CACHE_MAX_S,
    CIMD_FAILURE_CACHE_S,
    CIMD_FETCH_TIMEOUT_S,
    CIMD_MAX_BYTES,
    CLIENT_NAME_MAX_CHARS,
    REDIRECT_URI_MAX_CHARS,
    REGISTRATION_MAX_REDIRECT_URIS,
)
from memory_server.signin.registration import allowed_redirect_uri, is_https_redirect

logger = logging.getLogger(__name__)

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Sequence[str]]
_MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-)?max-age\s*=\s*\"?([0-9]+)\"?\s*(?:,|$)", re.I)
_NO_CACHE = re.compile(r"(?:^|,)\s*(?:no-store|no-cache|private)\s*(?:,|=|$)", re.I)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def is_client_id_url(client_id: str) -> bool:
    """Whether ``client_id`` is meant as a metadata document URL (not a pool's id)."""
    return client_id.startswith("https://")


def client_id_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a client identifier URL, or None."""
    if len(url) > REDIRECT_URI_MAX_CHARS:
        return f"a client_id URL has at most {REDIRECT_URI_MAX_CHARS} characters"
    if any(ch.isspace() or ord(ch) < 0x21 or ord(ch) == 0x7F for ch in url):
        return "a client_id URL has no spaces or control characters"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "the client_id is not a URL"
    if parts.scheme != "https":
        return "a client_id URL must be https"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "a client_id URL may not carry credentials"
    if parts.fragment or "#" in url:
        return "a client_id URL has no fragment"
    if not parts.hostname:
        return "a client_id URL needs a host"
    if port not in (None, 443):
        return "a client_id URL uses the default https port"
    if parts.path in ("", "/"):
        return "a client_id URL needs a path"
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        return "a client_id URL has no . or .. path segments"
    return None


def is_public_address(address: Address) -> bool:
    """A public unicast address: what a metadata document may be fetched from."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return is_public_address(address.ipv4_mapped)
        if address in _NAT64:  # 64:ff9b::a.b.c.d reaches a.b.c.d through a gateway
            return is_public_address(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return bool(address.is_global) and not address.is_multicast


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in infos]


class FetchRefused(Exception):
    """The document could not be fetched safely; the message says why."""


@dataclass(frozen=True)
class Fetched:
    body: bytes
    cache_control: str


class _PinnedConnection(http.client.HTTPSConnection):
    """An https connection to ``address`` whose TLS (SNI, certificate) is ``host``'s."""

    def __init__(
        self, host: str, address: str, port: int, timeout: float, context: ssl.SSLContext
    ) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._address = address
        self._tls = context

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


class DocumentFetcher:
    """Fetches metadata documents with the protections the module describes.

    ``resolver``, ``address_allowed``, ``tls`` and ``port`` exist for tests, which
    point the fetcher at local servers through a fake resolver; the defaults are the
    system's resolver, :func:`is_public_address`, the system's certificate store and
    443 (the only port a client_id URL may name).
    """

    def __init__(
        self,
        *,
        resolver: Resolver = system_resolver,
        address_allowed: Callable[[Address], bool] = is_public_address,
        tls: ssl.SSLContext | None = None,
        timeout_s: float = CIMD_FETCH_TIMEOUT_S,
        max_bytes: int = CIMD_MAX_BYTES,
        port: int = 443,
    ) -> None:
        self.port = port
        self.resolver = resolver
        self.address_allowed = address_allowed
        self.tls = tls or ssl.create_default_context()
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes

    def _address(self, host: str) -> str:
        try:
            literal = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            literal = None
        try:
            found = (
                [literal]
                if literal
                else [ipaddress.ip_address(a) for a in self.resolver(host, self.port)]
            )
        except (OSError, ValueError, UnicodeError) as exc:
            raise FetchRefused(f"the client_id's host does not resolve ({exc})") from None
        if not found:
            raise FetchRefused("the client_id's host does not resolve")
        # Every answer must be public: which one a connection picks is not ours to know.
        refused = [a for a in found if not self.address_allowed(a)]
        if refused:
            raise FetchRefused(
                f"the client_id's host resolves to an address this server does not fetch "
                f"from ({refused[0]}): loopback, private, link-local or reserved"
            )
        return str(found[0])

    def fetch(self, url: str) -> Fetched:
        problem = client_id_url_problem(url)
        if problem:
            raise FetchRefused(problem)
        parts = urlsplit(url)
        host = parts.hostname or ""
        deadline = time.monotonic() + self.timeout_s
        address = self._address(host)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        connection = _PinnedConnection(host, address, self.port, self.timeout_s, self.tls)
        sock: socket.socket | None = None
        try:
            connection.request(
                "GET",
                target,
                headers={"Accept": "application/json", "User-Agent": "memory-server"},
            )
            # getresponse() lets go of the socket when the answer closes it; keep it.
            sock = connection.sock
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            response = connection.getresponse()
            if response.status != 200:
                # 3xx included: a redirect is never followed (its target is unchecked).
                raise FetchRefused(f"the client_id URL answered {response.status}, not 200")
            length = response.getheader("content-length")
            if length and length.isdigit() and int(length) > self.max_bytes:
                raise FetchRefused(f"the client metadata document exceeds {self.max_bytes} bytes")
            chunks: list[bytes] = []
            size = 0
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise FetchRefused(
                        f"the client metadata document took longer than {self.timeout_s} s"
                    )
                sock.settimeout(remaining)
                chunk = response.read1(min(4096, self.max_bytes + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > self.max_bytes:
                    raise FetchRefused(
                        f"the client metadata document exceeds {self.max_bytes} bytes"
                    )
            return Fetched(b"".join(chunks), response.getheader("cache-control") or "")
        except TimeoutError:
            raise FetchRefused(
                f"the client metadata document took longer than {self.timeout_s} s"
            ) from None
        except (OSError, http.client.HTTPException) as exc:
            raise FetchRefused(f"the client_id URL could not be fetched ({exc})") from None
        finally:
            connection.close()
            if sock is not None:
                sock.close()


@dataclass(frozen=True)
class ClientDocument:
    """A validated metadata document: what the authorization endpoint needs of it."""

    client_id: str  # the URL
    host: str  # who vouches for the document: its URL's host
    name: str | None  # self-declared
    redirect_uris: tuple[str, ...]
    scopes: tuple[str, ...]


def cache_seconds(cache_control: str) -> int:
    """How long a document may be kept: ``max-age`` up to :data:`CIMD_CACHE_MAX_S`;
    nothing for ``no-store``/``no-cache``/``private``; a default without either."""
    if _NO_CACHE.search(cache_control):
        return 0
    found = _MAX_AGE.search(cache_control)
    if found is None:
        return CIMD_CACHE_DEFAULT_S
    return min(int(found[1]), CIMD_CACHE_MAX_S)


def _refuse(message: str) -> OAuthError:
    return OAuthError(400, "invalid_client", message)


def validate_document(
    url: str, body: bytes, allowed_https: frozenset[str] = frozenset()
) -> ClientDocument:
    """The client ``body`` describes, if it is ``url``'s document; else ``OAuthError``."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise _refuse("the client metadata document is not JSON") from None
    if not isinstance(document, dict):
        raise _refuse("the client metadata document is not a JSON object")
    if document.get("client_id") != url:
        raise _refuse("the client metadata document's client_id is not its URL")
    method = document.get("token_endpoint_auth_method", "none")
    # A document serves every server its client meets, so it may prefer a method this one
    # lacks and list the others it can use (ChatGPT's prefers private_key_jwt and lists
    # none); a client that can use "none" is taken as the public client it then is.
    supported = document.get("token_endpoint_auth_methods_supported")
    public = method == "none" or (isinstance(supported, list) and "none" in supported)
    if not public or "client_secret" in document or "client_secret_expires_at" in document:
        raise _refuse(
            "a client metadata document describes a public client: token_endpoint_auth_method "
            '"none" (or "none" among token_endpoint_auth_methods_supported) and no secret'
        )
    grant_types = document.get("grant_types", ["authorization_code"])
    if not isinstance(grant_types, list) or "authorization_code" not in grant_types:
        raise _refuse("the client's grant_types must include authorization_code")
    response_types = document.get("response_types", ["code"])
    if not isinstance(response_types, list) or "code" not in response_types:
        raise _refuse('the client\'s response_types must include "code"')
    uris = document.get("redirect_uris")
    if (
        not isinstance(uris, list)
        or not uris
        or len(uris) > REGISTRATION_MAX_REDIRECT_URIS
        or not all(isinstance(u, str) for u in uris)
    ):
        raise OAuthError(
            400,
            "invalid_redirect_uri",
            f"the client metadata document must list 1 to {REGISTRATION_MAX_REDIRECT_URIS} "
            "redirect_uris",
        )
    host = urlsplit(url).hostname or ""
    # An https redirect on the document's own host is the document owner's to name: the
    # consent page says who that is. Elsewhere only the operator's list counts.
    accepted = tuple(
        dict.fromkeys(
            u
            for u in uris
            if allowed_redirect_uri(u, allowed_https)
            or (is_https_redirect(u) and urlsplit(u).hostname == host and urlsplit(u).port is None)
        )
    )
    if not accepted:
        raise OAuthError(
            400,
            "invalid_redirect_uri",
            "none of the document's redirect_uris is loopback http, a private-use scheme, "
            "or https on the document's host",
        )
    scope = document.get("scope")
    if scope is None:
        scopes: tuple[str, ...] = tuple(MCP_SCOPES)
    elif isinstance(scope, str):
        scopes = tuple(s for s in MCP_SCOPES if s in set(scope.split()))
        if not scopes:
            raise _refuse(f"the client's scope must name one of {' '.join(MCP_SCOPES)}")
    else:
        raise _refuse("the client's scope must be a string")
    name = document.get("client_name")
    if name is not None and not isinstance(name, str):
        raise _refuse("the client's client_name must be a string")
    cleaned = name.strip()[:CLIENT_NAME_MAX_CHARS] if name else None
    return ClientDocument(url, host, cleaned or None, accepted, scopes)


def redirect_matches(document: ClientDocument, redirect_uri: str) -> bool:
    """Exactly one of the document's redirect URIs; for a loopback one, any port
    (RFC 8252 §7.3: a native app picks a free port each time)."""
    if redirect_uri in document.redirect_uris:
        return True
    try:
        asked = urlsplit(redirect_uri)
        _ = asked.port
    except ValueError:
        return False
    if asked.scheme != "http" or asked.hostname not in ("127.0.0.1", "localhost", "::1"):
        return False
    for uri in document.redirect_uris:
        listed = urlsplit(uri)
        if listed.scheme == "http" and (
            listed.hostname,
            listed.path,
            listed.query,
            listed.fragment,
        ) == (asked.hostname, asked.path, asked.query, asked.fragment):
            return allowed_redirect_uri(redirect_uri)
    return False


class ClientDocuments:
    """Validated metadata documents by URL, fetched on demand and cached."""

    def __init__(
        self,
        fetcher: DocumentFetcher | None = None,
        *,
        allowed_https: frozenset[str] = frozenset(),
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = CIMD_CACHE_ENTRIES,
    ) -> None:
        self.fetcher = fetcher or DocumentFetcher()
        self.allowed_https = allowed_https
        self.clock = clock
        self.max_entries = max_entries
        self.fetches = 0  # how many documents were fetched (tests)
        self._cache: OrderedDict[str, tuple[float, ClientDocument | OAuthError]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, url: str) -> ClientDocument:
        """The client ``url`` names, or ``OAuthError`` (``invalid_client``, ...)."""
        now = self.clock()
        with self._lock:
            cached = self._cache.get(url)
            if cached is not None and cached[0] > now:
                self._cache.move_to_end(url)
                if isinstance(cached[1], OAuthError):
                    raise cached[1]
                return cached[1]
        keep: float
        try:
            self.fetches += 1
            fetched = self.fetcher.fetch(url)
            answer: ClientDocument | OAuthError = validate_document(
                url, fetched.body, self.allowed_https
            )
            keep = cache_seconds(fetched.cache_control)
        except FetchRefused as refused:
            logger.info("client metadata document %s refused: %s", url[:200], refused)
            answer, keep = _refuse(str(refused)), CIMD_FAILURE_CACHE_S
        except OAuthError as invalid:
            logger.info("client metadata document %s invalid: %s", url[:200], invalid.message)
            answer, keep = invalid, CIMD_FAILURE_CACHE_S
        if keep > 0:
            with self._lock:
                self._cache[url] = (now + keep, answer)
                self._cache.move_to_end(url)
                while len(self._cache) > self.max_entries:
                    self._cache.popitem(last=False)
        if isinstance(answer, OAuthError):
            raise answer
        return answer
