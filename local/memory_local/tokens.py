"""A local issuer of Cognito-shaped access tokens: the user pool's OAuth endpoints.

Moto's Cognito signs tokens with a key shipped inside moto, puts only
``aws.cognito.signin.user.admin`` in their scope and has no ``/oauth2/token`` or
``/oauth2/authorize``, so neither a person with ``memory/*`` scopes nor a service
identity (client credentials) can get a usable token from it. This issuer fills that
gap: same claims as a Cognito access token, same ``iss`` as the emulated pool, RS256
with a ``kid`` published as a JWK set, so the deployed authorizer code verifies them
exactly as it verifies the pool's.

Its endpoints behave as the pool's do, for the app clients of the emulated pool (read
with ``DescribeUserPoolClient``, so clients created by registration or the admin API
count at once):

- ``/oauth2/authorize`` (:meth:`LocalIssuer.authorize`): authorization code with PKCE
  (``S256`` only, as Cognito), the client's registered redirect URIs only (exact
  match), its allowed scopes, one RFC 8707 ``resource`` (which becomes the access
  token's ``aud``). Instead of a password, a small page picks a demo person of the
  pool; ``login_hint=<name>`` picks without the page, for scripted clients;
- ``/oauth2/token`` (:meth:`LocalIssuer.token_endpoint`): ``client_credentials``
  (agent keys), ``authorization_code`` (one use, PKCE verifier, same redirect URI)
  and ``refresh_token``.

One difference, on purpose: Cognito takes an authorization request without a PKCE
challenge (and then redeems its code without a verifier); this stand-in refuses it.
The product's own authorization endpoint (``memory_server.signin.authorization``), which
the metadata names, never sends one without, so a flow that works here works there,
and a client that skips PKCE fails here rather than passing unnoticed.

The signing key persists in a PEM file (0600) so tokens written to
``.dev/endpoint.json`` stay valid across restarts of ``make dev``. Codes and refresh
tokens live in memory: a restart signs everyone out, nothing more.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import html
import json
import os
import re
import secrets
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus, urlencode, urlsplit

import jwt
from botocore.exceptions import ClientError
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from memory_server.domain.limits import AUTHORIZATION_CODE_TTL_S

if TYPE_CHECKING:
    from .aws import LocalAws

ALGORITHM = "RS256"
DEFAULT_TTL_S = 3600  # Cognito's default access-token validity
_PKCE_CHALLENGE = re.compile(r"^[A-Za-z0-9_-]{43}$")  # base64url of a SHA-256, unpadded
_PKCE_VERIFIER = re.compile(r"^[A-Za-z0-9._~-]{43,128}$")  # RFC 7636 §4.1
_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
Answer = tuple[int, dict[str, str], bytes]


@dataclass(frozen=True)
class SignIn:
    """What an authorization code or a refresh token stands for."""

    client_id: str
    sub: str
    username: str
    scopes: list[str]
    resource: str | None
    redirect_uri: str
    challenge: str  # PKCE S256
    expires_at: float


class LocalIssuer:
    """Signs access tokens for ``issuer`` with a key kept in ``key_file``."""

    def __init__(self, key_file: Path, issuer: str) -> None:
        self.key_file = Path(key_file)
        self.issuer = issuer
        self._key = _load_or_create_key(self.key_file)
        public = RSAAlgorithm.to_jwk(self._key.public_key(), as_dict=True)
        # RFC 7638 thumbprint: stable for the key, different for any other key,
        # so a token from another key is rejected by kid before its signature.
        members = {name: public[name] for name in ("e", "kty", "n")}
        digest = hashlib.sha256(
            json.dumps(members, separators=(",", ":"), sort_keys=True).encode()
        ).digest()
        self.kid = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        self._public_jwk: dict[str, Any] = {
            **public,
            "kid": self.kid,
            "alg": ALGORITHM,
            "use": "sig",
        }
        self._codes: dict[str, SignIn] = {}
        self._refresh_tokens: dict[str, SignIn] = {}
        self._lock = threading.Lock()

    def jwks(self) -> dict[str, Any]:
        """The public JWK set, as Cognito serves it at ``/.well-known/jwks.json``."""
        return {"keys": [dict(self._public_jwk)]}

    def issue_access_token(
        self,
        *,
        sub: str,
        client_id: str,
        scopes: Sequence[str],
        username: str | None = None,
        ttl_s: int = DEFAULT_TTL_S,
        issued_at: int | None = None,
        audience: str | None = None,
    ) -> str:
        """An access token with a Cognito access token's claims.

        A person's token carries ``username``; a client-credentials token has
        ``sub`` equal to ``client_id`` and no ``username`` (pass ``sub=client_id``).
        ``audience`` is the RFC 8707 resource the client asked for (Cognito puts it in
        ``aud``; tokens without one have no ``aud``). ``issued_at`` and a negative
        ``ttl_s`` exist for tests of expiry.
        """
        now = int(time.time()) if issued_at is None else issued_at
        claims: dict[str, Any] = {
            "sub": sub,
            "iss": self.issuer,
            "client_id": client_id,
            "origin_jti": str(uuid.uuid4()),
            "token_use": "access",
            "scope": " ".join(scopes),
            "auth_time": now,
            "iat": now,
            "exp": now + ttl_s,
            "jti": str(uuid.uuid4()),
            "version": 2,
        }
        if username is not None:
            claims["username"] = username
        else:
            del claims["origin_jti"]  # Cognito sets it only for sign-in sessions
        if audience is not None:
            claims["aud"] = audience
        # Cognito's header is {"kid", "alg"}: no "typ".
        return jwt.encode(
            claims, self._key, algorithm=ALGORITHM, headers={"kid": self.kid, "typ": None}
        )

    def client_credentials_grant(
        self,
        aws: LocalAws,
        *,
        client_id: str,
        client_secret: str,
        requested_scopes: Sequence[str] | None,
        ttl_s: int = DEFAULT_TTL_S,
    ) -> dict[str, Any]:
        """The token endpoint's answer for a client-credentials request.

        The client and its secret are checked against the emulated pool
        (``DescribeUserPoolClient``), so a client deleted or re-created there is
        honoured at once. Success is Cognito's token response; failure is an
        RFC 6749 error object (``{"error": …, "error_description": …}``).
        """
        try:
            described = aws.describe_client(client_id)
        except ClientError:
            # Unknown client, or a malformed id moto rejects: one answer for both.
            return _error("invalid_client", "Client authentication failed")
        expected = described.get("ClientSecret")
        if not expected or not hmac.compare_digest(str(expected).encode(), client_secret.encode()):
            return _error("invalid_client", "Client authentication failed")
        if "client_credentials" not in described.get("AllowedOAuthFlows", []) or not described.get(
            "AllowedOAuthFlowsUserPoolClient"
        ):
            return _error(
                "unauthorized_client", "Client is not allowed the client_credentials grant"
            )
        allowed = list(described.get("AllowedOAuthScopes", []))
        if requested_scopes is None:
            granted = allowed
        else:
            unknown = [scope for scope in requested_scopes if scope not in allowed]
            if unknown:
                return _error("invalid_scope", f"Scope not allowed: {' '.join(unknown)}")
            granted = [scope for scope in allowed if scope in requested_scopes]
        if not granted:
            return _error("invalid_scope", "No scope requested or allowed")
        token = self.issue_access_token(
            sub=client_id, client_id=client_id, scopes=granted, ttl_s=ttl_s
        )
        return {"access_token": token, "expires_in": ttl_s, "token_type": "Bearer"}

    def token_endpoint(
        self,
        aws: LocalAws,
        *,
        form: Mapping[str, Sequence[str]],
        authorization: str | None,
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """``POST /oauth2/token`` after form decoding: (status, JSON body, headers).

        Confidential clients authenticate with HTTP Basic (``client_secret_basic``) or
        with ``client_id``/``client_secret`` form fields (``client_secret_post``), not
        both (RFC 6749 §2.3); public clients send ``client_id`` alone. Grants:
        ``client_credentials``, ``authorization_code`` and ``refresh_token``.
        """
        no_store = dict(_NO_STORE)
        fields: dict[str, str] = {}
        for name, values in form.items():
            if len(values) != 1:
                body = _error("invalid_request", f"Parameter {name} repeated")
                return 400, body, no_store
            fields[name] = values[0]
        grant_type = fields.get("grant_type")
        if grant_type is None:
            return 400, _error("invalid_request", "grant_type is required"), no_store
        if grant_type in ("authorization_code", "refresh_token"):
            return self._user_grant(aws, grant_type, fields, authorization)
        if grant_type != "client_credentials":
            return 400, _error("unsupported_grant_type", "Unsupported grant type"), no_store

        basic = _basic_credentials(authorization)
        if basic is not None and "client_secret" in fields:
            body = _error("invalid_request", "Use one client authentication method")
            return 400, body, no_store
        if basic is not None:
            client_id, client_secret = basic
        elif authorization:
            challenge = {**no_store, "WWW-Authenticate": 'Basic realm="oauth2"'}
            return 401, _error("invalid_client", "Client authentication failed"), challenge
        else:
            client_id = fields.get("client_id", "")
            client_secret = fields.get("client_secret", "")
            if not client_id or not client_secret:
                return 401, _error("invalid_client", "Client authentication failed"), no_store

        scope = fields.get("scope")
        requested = scope.split() if scope is not None else None
        result = self.client_credentials_grant(
            aws, client_id=client_id, client_secret=client_secret, requested_scopes=requested
        )
        if "error" not in result:
            return 200, result, no_store
        if result["error"] == "invalid_client":
            headers = dict(no_store)
            if basic is not None:  # RFC 6749 §5.2: answer Basic with a Basic challenge
                headers["WWW-Authenticate"] = 'Basic realm="oauth2"'
            return 401, result, headers
        return 400, result, no_store

    # -- people: authorization code with PKCE, refresh -------------------------

    def _user_grant(
        self,
        aws: LocalAws,
        grant_type: str,
        fields: Mapping[str, str],
        authorization: str | None,
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        no_store = dict(_NO_STORE)
        try:
            client_id = _authenticate_client(aws, fields, authorization)
        except _Refused as refused:
            return refused.answer
        if grant_type == "authorization_code":
            with self._lock:
                granted = self._codes.pop(fields.get("code", ""), None)  # one use only
            if granted is None or granted.expires_at < time.time():
                return 400, _error("invalid_grant", "Invalid or expired code"), no_store
            if granted.client_id != client_id:
                return 400, _error("invalid_grant", "Code was issued to another client"), no_store
            if fields.get("redirect_uri") != granted.redirect_uri:
                return 400, _error("invalid_grant", "redirect_uri does not match"), no_store
            # Every code here was issued with a challenge (authorize requires one).
            verifier = fields.get("code_verifier", "")
            if not _PKCE_VERIFIER.match(verifier) or not hmac.compare_digest(
                _s256(verifier), granted.challenge
            ):
                return 400, _error("invalid_grant", "PKCE verification failed"), no_store
        else:
            with self._lock:
                granted = self._refresh_tokens.get(fields.get("refresh_token", ""))
            if granted is None or granted.client_id != client_id:
                return 400, _error("invalid_grant", "Invalid refresh token"), no_store
        resource = fields.get("resource")
        if resource is not None and resource != granted.resource:
            return 400, _error("invalid_target", "resource differs from the sign-in"), no_store
        answer: dict[str, Any] = {
            "access_token": self.issue_access_token(
                sub=granted.sub,
                client_id=granted.client_id,
                scopes=granted.scopes,
                username=granted.username,
                audience=granted.resource,
            ),
            "expires_in": DEFAULT_TTL_S,
            "token_type": "Bearer",
        }
        if grant_type == "authorization_code":
            # Cognito keeps one refresh token per sign-in (no rotation by default).
            refresh = secrets.token_urlsafe(48)
            with self._lock:
                self._refresh_tokens[refresh] = granted
            answer["refresh_token"] = refresh
        return 200, answer, no_store

    def revoke(
        self,
        aws: LocalAws,
        *,
        form: Mapping[str, Sequence[str]],
        authorization: str | None = None,
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """``POST /oauth2/revoke`` (RFC 7009): the client authenticates as at the token
        endpoint (a public one names itself), and its refresh token is forgotten. A token
        nobody knows answers 200, as Cognito's does; another client's is refused
        (``invalid_client``) and stays good; an access token is not revocable here."""
        no_store = dict(_NO_STORE)
        fields: dict[str, str] = {}
        for name, values in form.items():
            if len(values) != 1:
                return 400, _error("invalid_request", f"Parameter {name} repeated"), no_store
            fields[name] = values[0]
        token = fields.get("token", "")
        if not token:
            return 400, _error("invalid_request", "token is required"), no_store
        try:
            client_id = _authenticate_client(aws, fields, authorization)
        except _Refused as refused:
            return refused.answer
        if token.count(".") == 2:  # a JWT: the access (or ID) tokens this issuer signs
            return 400, _error("unsupported_token_type", "Only refresh tokens"), no_store
        with self._lock:
            granted = self._refresh_tokens.get(token)
            if granted is not None and granted.client_id != client_id:
                other = _error("invalid_client", "Token was issued to another client")
                return 401, other, no_store
            self._refresh_tokens.pop(token, None)
        return 200, {}, no_store

    def authorize(
        self, aws: LocalAws, query: Mapping[str, Sequence[str]], *, submitted: bool = False
    ) -> Answer:
        """``/oauth2/authorize``: (status, headers, body) of the answer.

        Errors before the client and its redirect URI are known show a page (never
        a redirect to an unverified URI); later ones redirect with ``error``. Without
        a principal (``login_hint``, or the page's form when ``submitted``) the
        answer is the sign-in page.
        """
        fields: dict[str, str] = {}
        for name, values in query.items():
            if len(values) != 1:
                return _page(400, "Sign-in refused", f"The parameter {name} is repeated.")
            fields[name] = values[0]
        client_id = fields.get("client_id", "")
        try:
            client = aws.describe_client(client_id)
        except ClientError:
            return _page(400, "Sign-in refused", "This application is not registered.")
        redirect_uri = fields.get("redirect_uri", "")
        if redirect_uri not in client.get("CallbackURLs", []):
            return _page(400, "Sign-in refused", "redirect_uri is not registered for this client.")

        def fail(code: str, description: str) -> Answer:
            params = {"error": code, "error_description": description}
            if "state" in fields:
                params["state"] = fields["state"]
            return _redirect(redirect_uri, params)

        if fields.get("response_type") != "code":
            return fail("unsupported_response_type", "response_type must be code")
        if "code" not in client.get("AllowedOAuthFlows", []) or not client.get(
            "AllowedOAuthFlowsUserPoolClient"
        ):
            return fail("unauthorized_client", "the client may not use the code grant")
        challenge, method = fields.get("code_challenge"), fields.get("code_challenge_method")
        if challenge is None or method is None:
            return fail("invalid_request", "PKCE is required: code_challenge with method S256")
        if method != "S256":
            return fail("invalid_request", "only S256 is supported")
        if not _PKCE_CHALLENGE.match(challenge):
            return fail("invalid_request", "code_challenge is not an S256 challenge")
        allowed = list(client.get("AllowedOAuthScopes", []))
        requested = fields["scope"].split() if fields.get("scope") else allowed
        if not requested or any(scope not in allowed for scope in requested):
            return fail("invalid_scope", "a requested scope is not allowed for this client")
        resource = fields.get("resource")
        if resource is not None and not _resource_ok(resource):
            return fail("invalid_target", "resource must be an absolute https URL")

        principal = fields.get("principal") if submitted else fields.get("login_hint")
        people = aws.people()
        if principal is None or principal not in people:
            hidden = {k: v for k, v in fields.items() if k not in ("principal", "login_hint")}
            notice = f"No person named {principal!r} in this pool." if principal else ""
            return _sign_in_page(hidden, sorted(people), notice)
        code = secrets.token_urlsafe(32)
        with self._lock:
            now = time.time()
            self._codes = {c: g for c, g in self._codes.items() if g.expires_at >= now}
            self._codes[code] = SignIn(
                client_id=client_id,
                sub=people[principal],
                username=principal,
                scopes=requested,
                resource=resource,
                redirect_uri=redirect_uri,
                challenge=challenge,
                expires_at=now + AUTHORIZATION_CODE_TTL_S,
            )
        params = {"code": code}
        if "state" in fields:
            params["state"] = fields["state"]
        return _redirect(redirect_uri, params)


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _resource_ok(resource: str) -> bool:
    """One absolute URL without a fragment: https, or http on the loopback interface
    (Cognito takes http only for localhost; the emulator's origin is 127.0.0.1)."""
    try:
        parts = urlsplit(resource)
    except ValueError:
        return False
    if parts.fragment or not parts.hostname:
        return False
    return parts.scheme == "https" or (
        parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost")
    )


class _Refused(Exception):
    """A token request refused: the token endpoint's (status, body, headers)."""

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        super().__init__(body["error"])
        self.answer = (status, body, headers)


def _authenticate_client(
    aws: LocalAws, fields: Mapping[str, str], authorization: str | None
) -> str:
    """The client of a code or refresh request; a public client sends only its id."""
    no_store = dict(_NO_STORE)
    basic = _basic_credentials(authorization)
    if basic is not None and "client_secret" in fields:
        raise _Refused(
            400, _error("invalid_request", "Use one client authentication method"), no_store
        )
    if basic is not None:
        client_id, secret = basic
    elif authorization:
        challenge = {**no_store, "WWW-Authenticate": 'Basic realm="oauth2"'}
        raise _Refused(401, _error("invalid_client", "Client authentication failed"), challenge)
    else:
        client_id, secret = fields.get("client_id", ""), fields.get("client_secret", "")
    failed = _Refused(401, _error("invalid_client", "Client authentication failed"), no_store)
    try:
        described = aws.describe_client(client_id)
    except ClientError:
        raise failed from None
    expected = str(described.get("ClientSecret") or "")
    if expected != "" and not hmac.compare_digest(expected.encode(), secret.encode()):
        raise failed
    if expected == "" and secret:
        raise failed  # a public client has no secret to present
    return client_id


def _redirect(uri: str, params: Mapping[str, str]) -> Answer:
    separator = "&" if urlsplit(uri).query else "?"
    return 302, {"Location": f"{uri}{separator}{urlencode(params)}", **_NO_STORE}, b""


def _page(status: int, title: str, text: str, form: str = "") -> Answer:
    body = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto}"
        "button{display:block;width:100%;margin:.4rem 0;padding:.6rem;font-size:1rem}</style>"
        f"</head><body><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>{form}"
        "</body></html>"
    )
    headers = {
        "Content-Type": "text/html; charset=utf-8",
        "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
        "X-Frame-Options": "DENY",
        **_NO_STORE,
    }
    return status, headers, body.encode()


def _sign_in_page(hidden: Mapping[str, str], people: Sequence[str], notice: str) -> Answer:
    inputs = "".join(
        f"<input type='hidden' name='{html.escape(k)}' value='{html.escape(v)}'>"
        for k, v in hidden.items()
    )
    buttons = "".join(
        f"<button type='submit' name='principal' value='{html.escape(p)}'>{html.escape(p)}</button>"
        for p in people
    )
    form = f"<form method='post' action='/oauth2/authorize'>{inputs}{buttons}</form>"
    text = (notice + " " if notice else "") + (
        "Local development sign-in: choose who you are (no password)."
    )
    return _page(200, "Sign in to memory-server", text, form)


def _error(code: str, description: str) -> dict[str, Any]:
    return {"error": code, "error_description": description}


def _basic_credentials(authorization: str | None) -> tuple[str, str] | None:
    """(client_id, client_secret) from ``Authorization: Basic …``, else None.

    RFC 6749 §2.3.1: both halves are form-urlencoded before base64.
    """
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    client_id, sep, client_secret = decoded.partition(":")
    if not sep:
        return None
    return unquote_plus(client_id), unquote_plus(client_secret)


def _load_or_create_key(key_file: Path) -> rsa.RSAPrivateKey:
    """The key in ``key_file``, created (mode 0600) if missing.

    Written to a private temporary file and hard-linked into place, so a reader
    never sees half a key and, when two processes race, both end up using the one
    that won the link.
    """
    if not key_file.exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        key_file.parent.mkdir(parents=True, exist_ok=True)
        temporary = key_file.with_name(f".{key_file.name}.{uuid.uuid4().hex}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(pem)
            with contextlib.suppress(FileExistsError):
                os.link(temporary, key_file)
        finally:
            temporary.unlink(missing_ok=True)
    loaded = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
    if not isinstance(loaded, rsa.RSAPrivateKey) or loaded.key_size < 2048:
        raise ValueError(f"{key_file} does not hold an RSA private key of at least 2048 bits")
    return loaded
