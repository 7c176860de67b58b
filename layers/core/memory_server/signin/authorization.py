"""The product's authorization endpoint, ``GET``/``POST /authorize``, in front of the pool's.

The RFC 8414 metadata names it (``authorization_endpoint``), so MCP clients send people
here, not to the user pool. It decides what the pool would not, then hands the request
on to the pool's authorize endpoint with the same parameters:

- the client must be an app client of the pool and ``redirect_uri`` one of its
  callback URLs, exactly. Until both hold nothing is redirected: an error page answers
  (RFC 6749 §4.1.2.1), so no request can bounce a person to an unregistered address;
- then ``response_type=code``, PKCE with ``code_challenge_method=S256`` and a
  well-formed ``code_challenge`` (the pool checks the verifier whenever a challenge was
  sent and asks for none otherwise, so requiring the challenge here is what makes the
  verifier required), and scopes within the client's. These refusals go back to the
  registered redirect URI with ``error`` (and ``state``);
- a redirect to the person's own machine (http on a loopback address) goes straight on
  to the pool: the code never leaves the machine whose browser signed in. Any other
  redirect gets a consent page first: the client's name (self-declared, and said to
  be), the host the code will go to, the scopes and the resource. *Approve* posts back
  with a token bound to this request and this browser, and only then is the request
  handed on; *Deny* redirects with ``error=access_denied``.

The token is an HMAC (the key from Secrets Manager, ``CONSENT_SECRET_ARN``) over the
request's parameters, an expiry (:data:`~memory_server.domain.limits.CONSENT_TTL_S`)
and a random value the page also sets as a ``SameSite=Strict``, ``HttpOnly`` cookie: a
page on another site can neither read the cookie nor make the browser send it, so it
cannot forge an approval, even with a token it fetched for itself. A POST whose
``Origin`` is another site's is refused as well.

Every page is ``no-store``, may not be framed (``frame-ancestors 'none'``,
``X-Frame-Options: DENY``) and runs no script (its CSP allows one inline style, by
hash, and form posts only to this server, the pool and the redirect's origin).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import html
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

from memory_server.domain.errors import OAuthError
from memory_server.domain.limits import (
    AUTHORIZATION_CODE_TTL_S,
    CONSENT_SECRET_MIN_CHARS,
    CONSENT_TTL_S,
    SIGNIN_STATE_TTL_S,
)
from memory_server.gateway.events import base_url, request_body, request_headers
from memory_server.gateway.origins import origin_key
from memory_server.signin.cimd import (
    ClientDocument,
    ClientDocuments,
    is_client_id_url,
    redirect_matches,
)
from memory_server.signin.registration import (
    AUTHORIZE_PATH,
    display_name,
    is_loopback_redirect,
    is_private_use_redirect,
)
from memory_server.signin.sealed import seal, unseal
from memory_server.signin.token import (
    CALLBACK_PATH,
    CODE_PREFIX,
    CODE_PURPOSE,
    REVOKE_ROUTE,
    TOKEN_ROUTE,
    TokenEndpoint,
)

logger = logging.getLogger(__name__)

GET_ROUTE = f"GET {AUTHORIZE_PATH}"
POST_ROUTE = f"POST {AUTHORIZE_PATH}"
CALLBACK_ROUTE = f"GET {CALLBACK_PATH}"
STATE_PURPOSE = "pool state v1"
# What the template sets (build_authorization reads these; the key through edge.aws_config).
ENVIRONMENT = (
    "USER_POOL_ID",
    "OAUTH_BASE_URL",
    "PUBLIC_BASE_URL",
    "CONSENT_SECRET_ARN",
    "SIGNIN_TABLE",
    "DOCUMENT_CLIENT_NAME",
    "ALLOWED_REDIRECT_URIS",
)
# The authorize parameters handed on to the pool (Cognito's), in this order; others
# are dropped.
FORWARDED = (
    "response_type",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "code_challenge",
    "code_challenge_method",
    "resource",
    "nonce",
    "login_hint",
    "prompt",
    "lang",
)
TOKEN_FIELD = "consent_token"  # noqa: S105 - a form field's name
DECISION_FIELD = "decision"
COOKIE = "memory_consent"
SCOPE_TEXT = {
    "memory/read": "list, read and search your memories",
    "memory/write.personal": "write memories in your personal space",
    "memory/write.shared": "write memories shared with the workspace",
    "memory/delete": "delete memories you may write",
    "memory/admin": "administer workspaces you are an admin of",
}
_CLIENT_ID = re.compile(r"^[\w+]{1,128}$", re.ASCII)  # Cognito's client id pattern
_CHALLENGE = re.compile(r"^[A-Za-z0-9_-]{43}$")  # base64url of a SHA-256, unpadded
_NONCE = re.compile(r"^[A-Za-z0-9_-]{43}$")  # 32 random bytes, base64url
_TOKEN = re.compile(r"^(?P<expires>[0-9]{1,12})\.[A-Za-z0-9_-]{43}$")
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;"
    "padding:0 1rem;line-height:1.45}code{word-break:break-all}"
    ".note{color:#555;font-size:.92rem}"
    "button{font-size:1rem;padding:.6rem 1.4rem;margin:.4rem .6rem .4rem 0}"
)
_STYLE_DIGEST = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
_STYLE_SOURCE = f"'sha256-{_STYLE_DIGEST}'"


@dataclass(frozen=True)
class AppClient:
    """What the endpoint needs to know of an app client of the pool."""

    client_id: str
    name: str
    redirect_uris: tuple[str, ...]
    scopes: tuple[str, ...]
    code_flow: bool  # allowed the authorization code grant
    # A metadata-document client: its document's host, who vouches for it.
    host: str | None = None
    document: ClientDocument | None = None


class Clients(Protocol):
    def describe(self, client_id: str) -> AppClient | None: ...


class PoolClients:
    """:class:`Clients` over ``DescribeUserPoolClient`` (the role may read, not write)."""

    def __init__(self, client: Any, user_pool_id: str) -> None:
        self.client = client
        self.user_pool_id = user_pool_id

    def describe(self, client_id: str) -> AppClient | None:
        missing = (
            self.client.exceptions.ResourceNotFoundException,
            self.client.exceptions.InvalidParameterException,
        )
        try:
            described = self.client.describe_user_pool_client(
                UserPoolId=self.user_pool_id, ClientId=client_id
            )["UserPoolClient"]
        except missing:
            return None
        return AppClient(
            client_id=client_id,
            name=display_name(str(described.get("ClientName", ""))),
            redirect_uris=tuple(described.get("CallbackURLs", [])),
            scopes=tuple(described.get("AllowedOAuthScopes", [])),
            code_flow="code" in described.get("AllowedOAuthFlows", [])
            and bool(described.get("AllowedOAuthFlowsUserPoolClient")),
        )


@dataclass(frozen=True)
class _Request:
    """An authorization request that passed the checks."""

    client: AppClient
    params: dict[str, str]  # the FORWARDED parameters as sent
    scopes: list[str]  # requested, or (none requested) every scope of the client

    @property
    def redirect_uri(self) -> str:
        return self.params["redirect_uri"]


class _Page(Exception):
    """A refusal shown as a page: nothing is known safe to redirect to."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


class _Refusal(Exception):
    """A refusal sent back to the client's registered redirect URI (RFC 6749 §4.1.2.1)."""

    def __init__(self, redirect_uri: str, state: str | None, code: str, description: str) -> None:
        super().__init__(description)
        self.redirect_uri = redirect_uri
        self.state = state
        self.code = code
        self.description = description


@dataclass
class Authorization:
    clients: Clients
    pool_authorize_url: str  # the user pool's /oauth2/authorize
    key: bytes  # signs consent tokens
    public_base_url: str | None = None
    clock: Callable[[], float] = time.time
    # Metadata-document clients (.cimd): their documents, and the one app client of the
    # pool they all sign in through (its callback: CALLBACK_PATH here). None: refused.
    documents: ClientDocuments | None = None
    document_pool_client: Callable[[], str] | None = None
    token_endpoint: TokenEndpoint | None = None  # POST /token and POST /revoke (.token)

    def route(self, event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
        route = event.get("routeKey")
        try:
            if route == GET_ROUTE:
                return self._get(event)
            if route == POST_ROUTE:
                return self._post(event)
            if route == CALLBACK_ROUTE:
                return self._callback(event)
            if route == TOKEN_ROUTE and self.token_endpoint is not None:
                return self.token_endpoint.route(event, context)
            if route == REVOKE_ROUTE and self.token_endpoint is not None:
                return self.token_endpoint.revoke_route(event, context)
            raise _Page(404, "There is nothing here.")
        except _Page as page:
            return _page(page.status, "Sign-in refused", f"<p>{html.escape(page.text)}</p>")
        except _Refusal as refusal:
            logger.info("authorization refused: %s (%s)", refusal.code, refusal.description)
            answer = {"error": refusal.code, "error_description": refusal.description}
            if refusal.state is not None:
                answer["state"] = refusal.state
            return _redirect(_with_query(refusal.redirect_uri, answer))
        except Exception:
            # The pool unreachable or throttled: a page, never the gateway's bare 500.
            logger.exception("authorization request failed")
            text = "<p>Sign-in is unavailable for a moment. Try again shortly.</p>"
            return _page(503, "Sign-in unavailable", text)

    # -- the two requests ----------------------------------------------------------

    def _get(self, event: Mapping[str, Any]) -> dict[str, Any]:
        request = self._check(_fields(str(event.get("rawQueryString") or "")))
        if is_loopback_redirect(request.redirect_uri):
            return self._to_pool(event, request)
        nonces = _cookie_nonces(event)
        nonce = nonces[0] if nonces else _new_nonce()
        return self._consent_page(event, request, nonce, set_cookie=not nonces)

    def _post(self, event: Mapping[str, Any]) -> dict[str, Any]:
        headers = request_headers(event)
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/x-www-form-urlencoded":
            raise _Page(400, "This page takes the consent form only.")
        try:
            body = request_body(event).decode("utf-8")
        except (UnicodeDecodeError, ValueError):
            raise _Page(400, "The form is not readable.") from None
        fields = _fields(body)
        if not _from_this_site(event, self.public_base_url):
            raise _Page(403, "This approval was sent from another site; it is refused.")
        request = self._check({k: v for k, v in fields.items() if k in FORWARDED})
        if not any(
            self._token_valid(fields.get(TOKEN_FIELD, ""), nonce, request.params)
            for nonce in _cookie_nonces(event)
        ):
            logger.warning(
                "consent refused: no valid token for client %s", request.client.client_id
            )
            raise _Page(
                403,
                "This approval is not valid: it was not given on this server's page in this "
                f"browser, or it is more than {CONSENT_TTL_S // 60} minutes old. Start the "
                "sign-in again from the application.",
            )
        decision = fields.get(DECISION_FIELD)
        if decision == "approve":
            logger.info("consent given to client %s", request.client.client_id)
            return self._to_pool(event, request)
        if decision == "deny":
            raise _Refusal(
                request.redirect_uri,
                request.params.get("state"),
                "access_denied",
                "the person declined",
            )
        raise _Page(400, "Choose Approve or Deny.")

    # -- the rules ----------------------------------------------------------------

    def _client(self, client_id: str) -> AppClient:
        if is_client_id_url(client_id) and self.documents is not None:
            try:
                document = self.documents.get(client_id)
            except OAuthError as refused:
                raise _Page(400, f"{refused.code}: {refused.message}.") from None
            return AppClient(
                client_id=client_id,
                name=document.name or "",
                redirect_uris=document.redirect_uris,
                scopes=document.scopes,
                code_flow=True,
                host=document.host,
                document=document,
            )
        client = self.clients.describe(client_id) if _CLIENT_ID.fullmatch(client_id) else None
        if client is None:
            raise _Page(400, "invalid_client: this application is not registered with this server.")
        return client

    def _check(self, fields: Mapping[str, str]) -> _Request:
        client = self._client(fields.get("client_id", ""))
        redirect_uri = fields.get("redirect_uri", "")
        if not (
            redirect_matches(client.document, redirect_uri)
            if client.document is not None
            else redirect_uri in client.redirect_uris
        ):
            raise _Page(
                400,
                "invalid_redirect_uri: the address this sign-in would return to "
                "(redirect_uri) is not registered for this application.",
            )
        state = fields.get("state")

        def refuse(code: str, description: str) -> _Refusal:
            return _Refusal(redirect_uri, state, code, description)

        if fields.get("response_type") != "code":
            raise refuse("unsupported_response_type", "response_type must be code")
        if not client.code_flow:
            raise refuse("unauthorized_client", "this client may not use the code grant")
        if fields.get("code_challenge_method") != "S256" or not _CHALLENGE.fullmatch(
            fields.get("code_challenge", "")
        ):
            raise refuse(
                "invalid_request",
                "PKCE is required: send code_challenge (the base64url SHA-256 of the "
                "code verifier) with code_challenge_method=S256",
            )
        requested = fields["scope"].split() if fields.get("scope") else list(client.scopes)
        if not requested or any(scope not in client.scopes for scope in requested):
            raise refuse("invalid_scope", "a requested scope is not allowed for this client")
        params = {name: fields[name] for name in FORWARDED if name in fields}
        return _Request(client, params, requested)

    def _to_pool(self, event: Mapping[str, Any], request: _Request) -> dict[str, Any]:
        if request.client.document is None:
            return _redirect(_with_query(self.pool_authorize_url, request.params))
        if self.document_pool_client is None:
            raise _Page(400, "invalid_client: this server takes no metadata-document clients.")
        # The pool knows one app client for every document client, whose callback is
        # ours; the state it carries back says which client and where to.
        state = seal(
            self.key,
            STATE_PURPOSE,
            {
                "c": request.client.client_id,
                "r": request.redirect_uri,
                "s": request.params.get("state"),
            },
            SIGNIN_STATE_TTL_S,
        )
        params = {
            **request.params,
            "client_id": self.document_pool_client(),
            "redirect_uri": base_url(event, self.public_base_url) + CALLBACK_PATH,
            "state": state,
        }
        return _redirect(_with_query(self.pool_authorize_url, params))

    def _callback(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """The pool's answer for a document client: its code, sealed to the client and
        its redirect URI, sent on there (or the pool's error, with the client's state)."""
        fields = _fields(str(event.get("rawQueryString") or ""))
        sealed = unseal(self.key, STATE_PURPOSE, fields.get("state", ""), self.clock())
        if sealed is None:
            raise _Page(400, "This sign-in is not valid or took too long. Start it again.")
        answer: dict[str, str] = {}
        if "code" in fields:
            code = seal(
                self.key,
                CODE_PURPOSE,
                {"p": fields["code"], "c": sealed["c"], "r": sealed["r"]},
                AUTHORIZATION_CODE_TTL_S,
            )
            answer["code"] = CODE_PREFIX + code
        else:
            answer["error"] = fields.get("error") or "server_error"
            if fields.get("error_description"):
                answer["error_description"] = fields["error_description"]
        if isinstance(sealed.get("s"), str):
            answer["state"] = sealed["s"]
        return _redirect(_with_query(str(sealed["r"]), answer))

    # -- consent --------------------------------------------------------------------

    def _token(self, nonce: str, params: Mapping[str, str], expires: int) -> str:
        message = "\n".join(
            [
                "memory-server consent v1",
                str(expires),
                nonce,
                json.dumps(dict(params), sort_keys=True, separators=(",", ":")),
            ]
        )
        mac = hmac.new(self.key, message.encode(), hashlib.sha256).digest()
        return f"{expires}.{_b64(mac)}"

    def _token_valid(self, token: str, nonce: str, params: Mapping[str, str]) -> bool:
        found = _TOKEN.fullmatch(token)
        if found is None:
            return False
        expires = int(found["expires"])
        now = self.clock()
        if not now <= expires <= now + CONSENT_TTL_S:
            return False
        return hmac.compare_digest(token.encode(), self._token(nonce, params, expires).encode())

    def _consent_page(
        self, event: Mapping[str, Any], request: _Request, nonce: str, *, set_cookie: bool
    ) -> dict[str, Any]:
        base = base_url(event, self.public_base_url)
        action = urlsplit(base).path + AUTHORIZE_PATH
        token = self._token(nonce, request.params, int(self.clock()) + CONSENT_TTL_S)
        target = urlsplit(request.redirect_uri)
        e = html.escape
        hidden = "".join(
            f'<input type="hidden" name="{e(name)}" value="{e(value)}">'
            for name, value in [*request.params.items(), (TOKEN_FIELD, token)]
        )
        asks = "".join(
            f"<li>{e(SCOPE_TEXT.get(scope, scope))} (<code>{e(scope)}</code>)</li>"
            for scope in request.scopes
        )
        resource = request.params.get("resource")
        where = (
            f"<p>Only for <code>{e(resource)}</code>.</p>"
            if resource
            else "<p>In every workspace you are a member of.</p>"
        )
        receiver = (
            f"the application your computer opens <strong>{e(target.scheme)}:</strong> links "
            "with (whichever registered that scheme)"
            if is_private_use_redirect(request.redirect_uri)
            else f"<strong>{e(target.netloc)}</strong>"
        )
        if request.client.host is not None:
            called = (
                f" It calls itself <strong>{e(request.client.name)}</strong>."
                if request.client.name
                else ""
            )
            who = (
                f"<p>An application published by <strong>{e(request.client.host)}</strong> "
                "asks to use your memory-server account.</p>"
                f'<p class="note">Its description is at <code>{e(request.client.client_id)}'
                f"</code>, on {e(request.client.host)}.{called} The name is its own; the "
                "host is where this server read it.</p>"
            )
        else:
            who = (
                f"<p><strong>{e(request.client.name or 'An unnamed application')}</strong> "
                "asks to use your memory-server account.</p>"
                '<p class="note">That is the name the application gave itself when it '
                "registered; this server has not verified it.</p>"
            )
        body = (
            f"{who}"
            f"<p>If you approve and sign in, your sign-in is sent to {receiver}:<br>"
            f"<code>{e(request.redirect_uri)}</code></p>"
            f"<p>It will be able to:</p><ul>{asks}</ul>{where}"
            '<p class="note">Approve only if you started this sign-in in that application '
            "just now.</p>"
            f'<form method="post" action="{e(action)}">{hidden}'
            f'<button type="submit" name="{DECISION_FIELD}" value="approve">Approve</button>'
            f'<button type="submit" name="{DECISION_FIELD}" value="deny">Deny</button>'
            "</form>"
        )
        pool = urlsplit(self.pool_authorize_url)
        # Chrome applies form-action to the redirects after the post too: the pool's
        # page, then the client's redirect URI (Deny, or the pool with a session).
        # A private-use redirect has no origin; its scheme is its CSP source.
        redirect_source = (
            f"{target.scheme}:"
            if is_private_use_redirect(request.redirect_uri)
            else f"{target.scheme}://{target.netloc}"
        )
        form_action = f"'self' {pool.scheme}://{pool.netloc} {redirect_source}"
        cookies = []
        if set_cookie:
            secure = "; Secure" if base.startswith("https://") else ""
            cookies.append(
                f"{COOKIE}={nonce}; Path={action}; Max-Age={CONSENT_TTL_S}; HttpOnly; "
                f"SameSite=Strict{secure}"
            )
        return _page(200, "Allow access to your memory?", body, form_action, cookies)


# -- helpers ------------------------------------------------------------------------


def _fields(text: str) -> dict[str, str]:
    """Form or query parameters; a repeated one is refused (RFC 6749 §3.1)."""
    fields: dict[str, str] = {}
    try:
        pairs = parse_qsl(text, keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise _Page(400, "The request's parameters are not readable.") from None
    for name, value in pairs:
        if name in fields:
            raise _Page(400, f"The parameter {name} is repeated.")
        fields[name] = value
    return fields


def _cookie_nonces(event: Mapping[str, Any]) -> list[str]:
    """The consent cookie's well-formed values in this request (payload 2.0 ``cookies``)."""
    found = []
    for cookie in event.get("cookies") or []:
        name, _, value = str(cookie).partition("=")
        if name.strip() == COOKIE and _NONCE.fullmatch(value.strip()):
            found.append(value.strip())
    return found


def _from_this_site(event: Mapping[str, Any], public_base_url: str | None) -> bool:
    """False when the POST's ``Origin`` is another site's (``null`` included). Without
    an ``Origin`` the cookie and the token decide alone."""
    headers = request_headers(event)
    origin = headers.get("origin")
    if origin is None:
        return True
    key = origin_key(origin)
    if key is None:
        return False
    own = [f"https://{event.get('requestContext', {}).get('domainName', '')}"]
    if public_base_url:
        parts = urlsplit(public_base_url)
        own.append(f"{parts.scheme}://{parts.netloc}")
    if "host" in headers:  # the page was served on the host this request reached
        own.append(f"{key[0]}://{headers['host']}")
    return key in {origin_key(value) for value in own}


def _new_nonce() -> str:
    return secrets.token_urlsafe(32)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _with_query(uri: str, params: Mapping[str, str]) -> str:
    separator = "&" if urlsplit(uri).query else "?"
    return f"{uri}{separator}{urlencode(params)}"


_COMMON_HEADERS = {
    "cache-control": "no-store",
    "pragma": "no-cache",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
}


def _redirect(location: str) -> dict[str, Any]:
    # No referrer: the authorization request's parameters stay out of the next site's logs.
    headers = {**_COMMON_HEADERS, "location": location, "referrer-policy": "no-referrer"}
    return {"statusCode": 302, "headers": headers, "body": ""}


def _page(
    status: int,
    title: str,
    body: str,
    form_action: str = "'none'",
    cookies: list[str] | None = None,
) -> dict[str, Any]:
    document = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )
    headers = {
        **_COMMON_HEADERS,
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": (
            f"default-src 'none'; style-src {_STYLE_SOURCE}; form-action {form_action}; "
            "frame-ancestors 'none'; base-uri 'none'"
        ),
        # same-origin, not no-referrer: with no-referrer a browser sends "Origin: null"
        # on the form's post, which the post's origin check would refuse.
        "referrer-policy": "same-origin",
    }
    answer: dict[str, Any] = {"statusCode": status, "headers": headers, "body": document}
    if cookies:
        answer["cookies"] = cookies
    return answer


def find_app_client(cognito: Any, user_pool_id: str, name: str) -> str:
    """The id of the pool's app client called ``name`` (``ListUserPoolClients``)."""
    token: str | None = None
    while True:
        page = cognito.list_user_pool_clients(
            UserPoolId=user_pool_id, MaxResults=60, **({"NextToken": token} if token else {})
        )
        for client in page.get("UserPoolClients", []):
            if client.get("ClientName") == name:
                return str(client["ClientId"])
        token = page.get("NextToken")
        if not token:
            raise LookupError(f"no app client named {name} in the user pool")


def build_authorization(
    env: Mapping[str, str] = os.environ, *, secret: str | None = None
) -> Authorization:
    """From the template's environment: ``USER_POOL_ID``, ``OAUTH_BASE_URL`` (the pool's
    domain), ``PUBLIC_BASE_URL``; ``secret`` signs consent tokens (in AWS read from
    ``CONSENT_SECRET_ARN`` by ``edge.aws_config.consent_secret``; else ``CONSENT_SECRET``).
    With ``SIGNIN_TABLE`` it answers ``POST /token`` and ``POST /revoke`` too
    (rotation's families live there); with ``DOCUMENT_CLIENT_NAME`` (or
    ``DOCUMENT_CLIENT_ID``, ``make dev``) it takes metadata-document clients, signing
    them in through that app client;
    ``ALLOWED_REDIRECT_URIS`` as registration reads it."""
    import boto3

    from memory_server.signin.registration import allowed_redirect_uris
    from memory_server.signin.registry import SigninTable

    key = env.get("CONSENT_SECRET", "") if secret is None else secret
    if len(key) < CONSENT_SECRET_MIN_CHARS:
        raise RuntimeError(
            f"the consent key must have at least {CONSENT_SECRET_MIN_CHARS} characters"
        )
    cognito = boto3.client("cognito-idp")
    pool_id = env["USER_POOL_ID"]
    oauth_base = env["OAUTH_BASE_URL"].rstrip("/")
    public_base_url = env.get("PUBLIC_BASE_URL") or None
    documents = None
    pool_client: Callable[[], str] | None = None
    if env.get("DOCUMENT_CLIENT_ID"):
        fixed = env["DOCUMENT_CLIENT_ID"]
        pool_client = lambda: fixed  # noqa: E731
    elif env.get("DOCUMENT_CLIENT_NAME"):
        name = env["DOCUMENT_CLIENT_NAME"]
        # Looked up once, on the first document client's sign-in (not at every cold start).
        pool_client = functools.cache(lambda: find_app_client(cognito, pool_id, name))
    if pool_client is not None:
        documents = ClientDocuments(
            allowed_https=allowed_redirect_uris(env.get("ALLOWED_REDIRECT_URIS"))
        )
    token_endpoint = None
    if env.get("SIGNIN_TABLE"):
        token_endpoint = TokenEndpoint(
            pool_token_url=f"{oauth_base}/oauth2/token",
            pool_revoke_url=f"{oauth_base}/oauth2/revoke",
            key=key.encode(),
            families=SigninTable(boto3.client("dynamodb"), env["SIGNIN_TABLE"]),
            documents=documents,
            document_pool_client=pool_client,
            public_base_url=public_base_url,
        )
    return Authorization(
        clients=PoolClients(cognito, pool_id),
        pool_authorize_url=oauth_base + "/oauth2/authorize",
        key=key.encode(),
        public_base_url=public_base_url,
        documents=documents,
        document_pool_client=pool_client,
        token_endpoint=token_endpoint,
    )
