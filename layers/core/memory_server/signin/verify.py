"""A user pool access token, verified: signature against the pool's key set, then claims.

The key set is fetched from the pool's ``jwks_uri`` (or, in development, taken from a
function) and kept for :data:`~memory_server.domain.limits.JWKS_TTL_S`. A token whose ``kid``
is not in it makes one more fetch (Cognito rotates keys by publishing the new one
first), at most every :data:`~memory_server.domain.limits.JWKS_REFETCH_MIN_S`, so tokens with
made-up key ids cannot turn every request into a fetch.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

import jwt

from memory_server.domain.errors import KeySetUnavailable, TokenRefused
from memory_server.domain.limits import (
    JWKS_FETCH_TIMEOUT_S,
    JWKS_REFETCH_MIN_S,
    JWKS_TTL_S,
    TOKEN_LEEWAY_S,
)

JwksSource = str | Callable[[], Mapping[str, Any]]
ALGORITHMS = ("RS256",)  # what Cognito signs with
# Claims every Cognito access token carries; a token without one of them is refused.
REQUIRED_CLAIMS = ("exp", "iat", "iss", "sub", "client_id", "token_use")


class KeySet:
    """The pool's public keys by ``kid``, fetched lazily and cached."""

    def __init__(self, source: JwksSource, *, clock: Callable[[], float] = time.time) -> None:
        self.source = source
        self.clock = clock
        self.fetches = 0  # how many times the set was fetched (tests, the benchmark)
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at: float | None = None
        self._lock = threading.Lock()

    def key(self, kid: str) -> jwt.PyJWK | None:
        """The key named ``kid``, fetching the set when it is stale or lacks ``kid``."""
        with self._lock:
            now = self.clock()
            age = None if self._fetched_at is None else now - self._fetched_at
            if (
                age is None
                or age >= JWKS_TTL_S
                or (kid not in self._keys and age >= JWKS_REFETCH_MIN_S)
            ):
                try:
                    self._refresh(now)
                except KeySetUnavailable:
                    if not self._keys:
                        raise
                    # Keep the keys we have; try the endpoint again a little later.
                    self._fetched_at = now - JWKS_TTL_S + JWKS_REFETCH_MIN_S
            return self._keys.get(kid)

    def prefetch(self) -> bool:
        """Fetch now (at start-up, off the request path); False if that failed."""
        try:
            with self._lock:
                self._refresh(self.clock())
        except KeySetUnavailable:
            return False
        return True

    def _refresh(self, now: float) -> None:
        document = self._document()
        keys: dict[str, jwt.PyJWK] = {}
        for entry in document.get("keys", []):
            if not isinstance(entry, Mapping) or entry.get("kty") != "RSA" or "kid" not in entry:
                continue
            try:
                keys[str(entry["kid"])] = jwt.PyJWK(dict(entry), algorithm="RS256")
            except jwt.PyJWTError:
                continue  # an unusable entry does not spoil the others
        self._keys = keys
        self._fetched_at = now
        self.fetches += 1

    def _document(self) -> Mapping[str, Any]:
        if not isinstance(self.source, str):
            return self.source()
        if not self.source.startswith(("https://", "http://")):
            raise KeySetUnavailable(f"not an http(s) URL: {self.source}")
        request = urllib.request.Request(self.source, headers={"accept": "application/json"})  # noqa: S310 - checked above
        try:
            with urllib.request.urlopen(request, timeout=JWKS_FETCH_TIMEOUT_S) as response:  # noqa: S310
                document = json.loads(response.read())
        except (OSError, ValueError) as exc:
            raise KeySetUnavailable(f"cannot fetch {self.source}: {exc}") from exc
        if not isinstance(document, dict):
            raise KeySetUnavailable(f"{self.source} is not a JWK set")
        return document


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer …`` header (RFC 6750 §2.1), else None."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return None
    return token


def verify_access_token(
    token: str, *, issuer: str, keys: KeySet, leeway_s: float = TOKEN_LEEWAY_S
) -> dict[str, Any]:
    """The claims of a valid access token of ``issuer``'s pool; ``TokenRefused`` otherwise.

    Checked: RS256 signature by a key of the set (by ``kid``), ``iss``, ``exp``,
    ``nbf`` and ``iat`` within ``leeway_s``, ``token_use = access`` (ID tokens are
    refused), and the presence of ``sub`` and ``client_id``. Any app client of the pool
    will do: there is no audience list. ``aud``, present only when the client asked for
    a resource (RFC 8707), is left to the caller.
    """
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise TokenRefused(f"malformed token: {exc}") from None
    kid = header.get("kid")
    if header.get("alg") not in ALGORITHMS or not isinstance(kid, str):
        raise TokenRefused("unsupported algorithm or no key id")
    key = keys.key(kid)
    if key is None:
        raise TokenRefused("no key of the pool has this key id")
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=list(ALGORITHMS),
            issuer=issuer,
            leeway=leeway_s,
            options={"require": list(REQUIRED_CLAIMS), "verify_aud": False},
        )
    except jwt.PyJWTError as exc:
        raise TokenRefused(f"invalid token: {exc}") from None
    if claims.get("token_use") != "access":
        raise TokenRefused("not an access token")
    if not isinstance(claims.get("sub"), str) or not isinstance(claims.get("client_id"), str):
        raise TokenRefused("sub and client_id must be strings")
    if not isinstance(claims.get("scope", ""), str):
        raise TokenRefused("scope must be a string")
    if "aud" in claims and not token_audiences(claims):
        raise TokenRefused("aud must be a string or a list of strings")
    return claims


def token_audiences(claims: Mapping[str, Any]) -> tuple[str, ...]:
    """The resources a token is bound to (``aud``, a string or a list), else ()."""
    audience = claims.get("aud")
    if isinstance(audience, str):
        return (audience,)
    if isinstance(audience, list) and all(isinstance(a, str) for a in audience):
        return tuple(audience)
    return ()
