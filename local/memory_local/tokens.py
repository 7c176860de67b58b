"""A local issuer of Cognito-shaped access tokens, and its token endpoint.

Moto's Cognito signs tokens with a key shipped inside moto, puts only
``aws.cognito.signin.user.admin`` in their scope and has no ``/oauth2/token``, so
neither a person with ``memory/*`` scopes nor a service identity (client
credentials) can get a usable token from it. This issuer fills that gap: same
claims as a Cognito access token, same ``iss`` as the emulated pool, RS256 with a
``kid`` published as a JWK set, so the API Gateway emulator verifies them through
the same path (issuer, JWKS, ``client_id``, scopes) as the real authorizer.

The signing key persists in a PEM file (0600) so tokens written to
``.dev/endpoint.json`` stay valid across restarts of ``make dev``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

import jwt
from botocore.exceptions import ClientError
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

if TYPE_CHECKING:
    from .aws import LocalAws

ALGORITHM = "RS256"
DEFAULT_TTL_S = 3600  # Cognito's default access-token validity


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
    ) -> str:
        """An access token with a Cognito access token's claims.

        A person's token carries ``username``; a client-credentials token has
        ``sub`` equal to ``client_id`` and no ``username`` (pass ``sub=client_id``).
        ``issued_at`` and a negative ``ttl_s`` exist for tests of expiry.
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

        Clients authenticate with HTTP Basic (``client_secret_basic``) or with
        ``client_id``/``client_secret`` form fields (``client_secret_post``), not
        both (RFC 6749 §2.3). Only the client-credentials grant exists here.
        """
        no_store = {"Cache-Control": "no-store", "Pragma": "no-cache"}
        fields: dict[str, str] = {}
        for name, values in form.items():
            if len(values) != 1:
                body = _error("invalid_request", f"Parameter {name} repeated")
                return 400, body, no_store
            fields[name] = values[0]
        grant_type = fields.get("grant_type")
        if grant_type is None:
            return 400, _error("invalid_request", "grant_type is required"), no_store
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
