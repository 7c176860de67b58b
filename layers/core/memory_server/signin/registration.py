"""What the product's authorization server publishes and whom it registers.

The user pool does the sign-in and issues the tokens; the product adds what MCP
clients require of an authorization server and Cognito lacks:

- RFC 8414 metadata (:func:`server_metadata`), at the product's origin, whose issuer is
  that origin (the RFC 9728 metadata names it), whose authorization endpoint is the
  product's own (:mod:`.authorization`: PKCE required, consent before a code leaves the
  person's machine), whose token endpoint is the pool's, and which states PKCE
  (``S256``) and the registration endpoint;
- RFC 7591 registration (:func:`parse_registration`): a public client (no secret,
  authorization code + PKCE, refresh tokens) with redirect URIs of the kinds RFC 8252
  gives native apps and of the web hosts the operator trusts:

  - http on the loopback interface (``127.0.0.1``, ``localhost`` or ``[::1]``, any
    port), where the code never leaves the person's machine;
  - a private-use scheme (RFC 8252 §7.1): a reverse domain name (``com.example.app:``)
    or one of :data:`NAMED_PRIVATE_SCHEMES` (``cursor``, ``vscode``, ...). The operating
    system, not this server, decides which application receives it, so such a redirect
    always passes the consent page first;
  - exactly one of the https redirect URIs the operator allows
    (:data:`DEFAULT_ALLOWED_REDIRECT_URIS` unless ``ALLOWED_REDIRECT_URIS`` says
    otherwise): anyone may register, so an https redirect anywhere else would let a
    stranger's link send a person's code to the stranger.

  Never ``javascript:``, ``data:``, ``file:`` or any other scheme, nor http off the
  loopback interface. Other redirect URIs are dropped from the registration (RFC 7591
  §3.2.1 lets the server replace requested values; the answer lists what was
  registered); a request left with none is refused with ``invalid_redirect_uri``,
  naming the rule.

A Client ID Metadata Document's redirect URIs follow the same rules, except that an
https redirect on the document's own host is accepted too (:mod:`.cimd`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit

from memory_server.domain.errors import OAuthError
from memory_server.domain.grants import MCP_SCOPES
from memory_server.domain.limits import (
    CLIENT_NAME_MAX_CHARS,
    REDIRECT_URI_MAX_CHARS,
    REGISTRATION_BODY_MAX_BYTES,
    REGISTRATION_MAX_REDIRECT_URIS,
)

REGISTER_PATH = "/register"
METADATA_PATH = "/.well-known/oauth-authorization-server"
AUTHORIZE_PATH = "/authorize"  # the product's authorization endpoint (.authorization)
GRANT_TYPES = ("authorization_code", "refresh_token")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")  # urlsplit's hostname of [::1]
# The https redirect URIs registration accepts unless the operator sets others (the
# template's AllowedRedirectUris, make dev's ALLOWED_REDIRECT_URIS): the exact
# callbacks of the MCP hosts that sign in from their own servers. Desktop clients,
# IDEs and the SDKs use loopback redirects, which are always accepted.
DEFAULT_ALLOWED_REDIRECT_URIS = (
    "https://claude.ai/api/mcp/auth_callback",
    "https://claude.com/api/mcp/auth_callback",
    "https://chatgpt.com/connector_platform_oauth_redirect",
    # Cursor (IDE and CLI) is reported to sign in through this one (docs/clients.md).
    "https://www.cursor.com/agents/mcp/oauth/callback",
)
# Private-use schemes (RFC 8252 §7.1) of MCP hosts that do not use a reverse domain
# name; any scheme with a dot in it is taken as one (com.example.app).
NAMED_PRIVATE_SCHEMES = frozenset(
    {"cursor", "vscode", "vscode-insiders", "windsurf", "claude", "codex"}
)
# Schemes that are never a redirect, whatever the shape of their name.
_NEVER_SCHEMES = frozenset(
    {"javascript", "data", "file", "vbscript", "blob", "about", "filesystem", "ftp", "ws", "wss"}
)
_REVERSE_DOMAIN = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+$")
REDIRECT_RULE = (
    "a redirect URI must be http on the loopback interface (127.0.0.1, localhost or "
    "[::1], any port), a private-use scheme (a reverse domain name such as "
    "com.example.app:/callback, or cursor:, vscode:, vscode-insiders:, windsurf:, "
    "claude:, codex:) or exactly one of the https redirect URIs this server allows"
)
# Cognito's name of a registered client (cognito_client_name): prefix, number, name.
_REGISTERED_NAME = re.compile(r"^mcp-registered\.[0-9a-f]+\.(?P<name>.*)$", re.DOTALL)
# What a Cognito app client name may hold ([\w\s+=,.@-]+, at most 128 characters).
_NAME_CHARS = re.compile(r"[^\w\s+=,.@-]")


@dataclass(frozen=True)
class ClientRequest:
    """A registration request after the rules: what will be created."""

    redirect_uris: list[str]
    refused_uris: list[str]  # requested, outside the rules, not registered
    scopes: list[str]
    client_name: str | None


def server_metadata(base_url: str, oauth_base_url: str) -> dict[str, Any]:
    """RFC 8414 metadata of the authorization server at ``base_url`` (the product),
    whose tokens come from ``oauth_base_url`` (the user pool's domain) through the
    product's token endpoint."""
    return {
        "issuer": base_url,
        "authorization_endpoint": f"{base_url}{AUTHORIZE_PATH}",
        # The front door's (.token), in front of the pool's: it signs metadata-document
        # clients in and rotates public clients' refresh tokens.
        "token_endpoint": f"{base_url}/token",
        "registration_endpoint": f"{base_url}{REGISTER_PATH}",
        "scopes_supported": list(MCP_SCOPES),
        "response_types_supported": ["code"],
        "grant_types_supported": [*GRANT_TYPES, "client_credentials"],
        # none: registered (public) clients; the secret methods: agent keys.
        "token_endpoint_auth_methods_supported": [
            "none",
            "client_secret_basic",
            "client_secret_post",
        ],
        "code_challenge_methods_supported": ["S256"],
        # RFC 7009, the front door's too (.token): it revokes its own refresh tokens'
        # families and hands the pool's on to the pool's.
        "revocation_endpoint": f"{base_url}/revoke",
        "revocation_endpoint_auth_methods_supported": [
            "none",
            "client_secret_basic",
            "client_secret_post",
        ],
        # An https client_id names the client's metadata document (.cimd).
        "client_id_metadata_document_supported": True,
    }


def _well_formed(uri: object, *, need_host: bool = True) -> SplitResult | None:
    """``uri`` split, if it is an absolute URI Cognito could store as a callback: no
    fragment, no credentials, no whitespace or control characters, a valid port (and
    a host, unless ``need_host`` is False: ``com.example.app:/callback`` has none)."""
    if not isinstance(uri, str) or len(uri) > REDIRECT_URI_MAX_CHARS:
        return None
    if any(ch.isspace() or ord(ch) < 0x21 or ord(ch) == 0x7F for ch in uri):
        return None
    try:
        parts = urlsplit(uri)
        _ = parts.port  # raises for a malformed port
    except ValueError:
        return None
    if parts.fragment or "#" in uri or parts.username is not None or parts.password is not None:
        return None
    if not parts.scheme:
        return None
    return parts if parts.hostname or not need_host else None


def is_loopback_redirect(uri: object) -> bool:
    """http on the loopback interface (RFC 8252 §7.3), any port and path: a code sent
    there stays on the machine whose browser signed in."""
    parts = _well_formed(uri)
    return parts is not None and parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS


def is_private_use_redirect(uri: object) -> bool:
    """A private-use scheme (RFC 8252 §7.1): a reverse domain name or a named one."""
    parts = _well_formed(uri, need_host=False)
    if parts is None:
        return False
    scheme = parts.scheme.lower()
    if scheme in _NEVER_SCHEMES or scheme in ("http", "https"):
        return False
    if scheme in NAMED_PRIVATE_SCHEMES:
        return True
    # A reverse domain name has at least two labels: com.example.app, not "example".
    return bool(_REVERSE_DOMAIN.fullmatch(scheme))


def is_https_redirect(uri: object) -> bool:
    parts = _well_formed(uri)
    return parts is not None and parts.scheme == "https"


def allowed_redirect_uri(
    uri: object, allowed: Collection[str] = DEFAULT_ALLOWED_REDIRECT_URIS
) -> bool:
    """Loopback over http, a private-use scheme, or one of ``allowed`` exactly (https,
    well formed)."""
    if is_loopback_redirect(uri) or is_private_use_redirect(uri):
        return True
    return is_https_redirect(uri) and uri in allowed


def allowed_redirect_uris(setting: str | None) -> frozenset[str]:
    """The operator's allow-list from its setting (comma-separated, exact https URIs;
    unset: :data:`DEFAULT_ALLOWED_REDIRECT_URIS`; empty: loopback only). A malformed
    entry is a configuration error, raised at start-up rather than ignored."""
    if setting is None:
        return frozenset(DEFAULT_ALLOWED_REDIRECT_URIS)
    entries = [entry.strip() for entry in setting.split(",") if entry.strip()]
    for entry in entries:
        parts = _well_formed(entry)
        if parts is None or parts.scheme != "https":
            raise ValueError(f"ALLOWED_REDIRECT_URIS: {entry!r} is not an https redirect URI")
    return frozenset(entries)


def display_name(cognito_name: str) -> str:
    """The name a registered client gave itself (what :func:`cognito_client_name` kept
    of it); any other app client's name as it is."""
    found = _REGISTERED_NAME.match(cognito_name)
    return found["name"] if found else cognito_name


def _invalid(message: str) -> OAuthError:
    return OAuthError(400, "invalid_client_metadata", message)


def parse_registration(
    body: bytes, allowed: Collection[str] = DEFAULT_ALLOWED_REDIRECT_URIS
) -> ClientRequest:
    """The client to register for this RFC 7591 request body, or ``OAuthError``;
    ``allowed``: the https redirect URIs the operator accepts."""
    if len(body) > REGISTRATION_BODY_MAX_BYTES:
        raise _invalid(f"the request is larger than {REGISTRATION_BODY_MAX_BYTES} bytes")
    try:
        metadata = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise _invalid("the request is not JSON") from None
    if not isinstance(metadata, dict):
        raise _invalid("the request is not a JSON object")

    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        raise OAuthError(400, "invalid_redirect_uri", "redirect_uris must list at least one URI")
    if len(uris) > REGISTRATION_MAX_REDIRECT_URIS:
        raise OAuthError(
            400,
            "invalid_redirect_uri",
            f"at most {REGISTRATION_MAX_REDIRECT_URIS} redirect URIs may be registered",
        )
    accepted = list(dict.fromkeys(u for u in uris if allowed_redirect_uri(u, allowed)))
    refused = [u for u in uris if not allowed_redirect_uri(u, allowed)]
    if not accepted:
        shown = ", ".join(repr(u[:200]) for u in refused[:3])
        raise OAuthError(400, "invalid_redirect_uri", f"{REDIRECT_RULE}; not allowed: {shown}")

    grant_types = metadata.get("grant_types", list(GRANT_TYPES))
    if not isinstance(grant_types, list) or "authorization_code" not in grant_types:
        raise _invalid("only the authorization_code grant (with refresh_token) is registered")
    response_types = metadata.get("response_types", ["code"])
    if not isinstance(response_types, list) or "code" not in response_types:
        raise _invalid('response_types must include "code"')

    requested = metadata.get("scope")
    if requested is None:
        scopes = list(MCP_SCOPES)
    elif isinstance(requested, str):
        wanted = set(requested.split())
        scopes = [s for s in MCP_SCOPES if s in wanted]
        if not scopes:
            raise _invalid(f"scope must name at least one of {' '.join(MCP_SCOPES)}")
    else:
        raise _invalid("scope must be a string")

    name = metadata.get("client_name")
    if name is not None and not isinstance(name, str):
        raise _invalid("client_name must be a string")
    if name is not None:
        name = name.strip()[:CLIENT_NAME_MAX_CHARS] or None
    return ClientRequest(accepted, refused, scopes, name)


def cognito_client_name(name: str | None, client_number: str) -> str:
    """A Cognito-valid app client name that says where the client came from."""
    cleaned = _NAME_CHARS.sub("-", name or "unnamed")[:CLIENT_NAME_MAX_CHARS]
    return f"mcp-registered.{client_number}.{cleaned}"
