"""The front door's token endpoint, ``POST /token``, in front of the pool's.

The RFC 8414 metadata names it, so every client's token requests come here; the pool
(Cognito, or the local stand-in) still issues every token. What it adds:

- **metadata-document clients** (``client_id`` an https URL, :mod:`.cimd`): the pool
  knows them only as one shared app client whose callback is the front door's
  (:mod:`.authorization`). Their code (sealed by the callback: the pool's code, the
  client, its redirect URI) is checked against the request's ``client_id`` and
  ``redirect_uri`` and exchanged at the pool as the shared client's, with the client's
  PKCE verifier and ``resource`` (the access token stays bound to it, RFC 8707);
- **rotation for public clients** (RFC 9700 §4.14.2): a public client's refresh token
  from the pool is kept in the sign-in table and the client gets the front door's
  instead, good for one use. Each use gives a new one; a token used twice means it
  was stolen, so the whole family is revoked: its pool refresh token revoked at the
  pool, every token of the family refused from then on;
- everything else (confidential clients, client credentials, a pool refresh token
  issued before this endpoint existed) is handed on to the pool unchanged.

Its revocation endpoint, ``POST /revoke`` (RFC 7009), takes the same tokens back: one of
the front door's refresh tokens revokes its whole family (every generation, and the
pool's refresh token behind it, revoked at the pool); any other refresh token is handed
on to the pool's ``/oauth2/revoke`` with the client's own credentials, so the pool
checks the client owns it. A token nobody knows, or one already revoked, answers 200.
Access tokens are not revoked (they are JWTs checked without a lookup and end within
the hour): ``unsupported_token_type``.

Errors are RFC 6749 §5.2 JSON: ``invalid_request``, ``invalid_client`` (401),
``invalid_grant``, ``unsupported_grant_type``, ``unsupported_token_type``.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode

from memory_server.domain.errors import OAuthError
from memory_server.domain.limits import (
    REVOKE_TOKEN_MAX_CHARS,
    SIGNIN_POOL_TIMEOUT_S,
    SIGNIN_REFRESH_TOKEN_DAYS,
)
from memory_server.gateway.events import base_url, request_body, request_headers
from memory_server.signin.cimd import ClientDocuments, is_client_id_url
from memory_server.signin.registry import RefreshFamily
from memory_server.signin.sealed import seal, unseal

logger = logging.getLogger(__name__)

TOKEN_PATH = "/token"  # noqa: S105 - a URL path
TOKEN_ROUTE = f"POST {TOKEN_PATH}"
REVOKE_PATH = "/revoke"
REVOKE_ROUTE = f"POST {REVOKE_PATH}"
CALLBACK_PATH = "/authorize/callback"
CODE_PREFIX = "cimd."  # a code the front door's callback sealed
REFRESH_PREFIX = "rt."
CODE_PURPOSE = "code v1"
REFRESH_PURPOSE = "refresh v1"
_NO_STORE = {"cache-control": "no-store", "pragma": "no-cache"}
# A JWT (header.payload.signature, the header a JSON object): the pool's access and ID
# tokens. Its refresh tokens are JWEs (five parts), the front door's start with "rt.".
_JWT = re.compile(r"^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$")

# (url, form, headers) -> (status, body) of a POST to the pool.
Post = Callable[[str, Mapping[str, str], Mapping[str, str]], tuple[int, bytes]]


class Families(Protocol):
    def start_family(self, family: RefreshFamily) -> None: ...
    def family(self, family_id: str) -> RefreshFamily | None: ...
    def advance_family(self, family_id: str, generation: int) -> bool: ...
    def revoke_family(self, family_id: str) -> None: ...


def post_form(url: str, form: Mapping[str, str], headers: Mapping[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(  # noqa: S310 - the pool's https (or local) URL
        url,
        data=urlencode(form).encode(),
        headers={"content-type": "application/x-www-form-urlencoded", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=SIGNIN_POOL_TIMEOUT_S) as response:  # noqa: S310
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as error:
        return int(error.code), bytes(error.read())


def _answer(
    status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"content-type": "application/json", **_NO_STORE, **(headers or {})},
        "body": json.dumps(body),
    }


def _error(status: int, code: str, description: str) -> OAuthError:
    return OAuthError(status, code, description)


def _refused(what: str, error: OAuthError) -> dict[str, Any]:
    logger.info("%s request refused: %s (%s)", what, error.code, error.message)
    headers = {"www-authenticate": 'Basic realm="oauth2"'} if error.status == 401 else {}
    return _answer(error.status, {"error": error.code, "error_description": error.message}, headers)


def _form(event: Mapping[str, Any], headers: Mapping[str, str]) -> dict[str, str]:
    """The request's form fields; a body that is no form, or names a field twice, is
    ``invalid_request`` (RFC 6749 §3.2 and RFC 7009 §2.1 send forms)."""
    content_type = headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        raise _error(400, "invalid_request", "send the request as a form")
    try:
        pairs = parse_qsl(
            request_body(event).decode("utf-8"), keep_blank_values=True, errors="strict"
        )
    except (UnicodeDecodeError, ValueError):
        raise _error(400, "invalid_request", "the form is not readable") from None
    fields: dict[str, str] = {}
    for name, value in pairs:
        if name in fields:
            raise _error(400, "invalid_request", f"the parameter {name} is repeated")
        fields[name] = value
    return fields


@dataclass
class TokenEndpoint:
    pool_token_url: str  # the pool's /oauth2/token
    pool_revoke_url: str  # the pool's /oauth2/revoke
    key: bytes  # seals codes and refresh tokens (the consent key)
    families: Families
    documents: ClientDocuments | None = None
    document_pool_client: Callable[[], str] | None = None  # document clients' app client
    public_base_url: str | None = None
    post: Post = post_form
    clock: Callable[[], float] = time.time

    def route(self, event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
        try:
            return self._token(event)
        except OAuthError as error:
            return _refused("token", error)

    def revoke_route(self, event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
        try:
            return self._revocation(event)
        except OAuthError as error:
            return _refused("revocation", error)

    # -- the request --------------------------------------------------------------

    def _token(self, event: Mapping[str, Any]) -> dict[str, Any]:
        headers = request_headers(event)
        fields = _form(event, headers)
        grant = fields.get("grant_type")
        authorization = headers.get("authorization")
        public = authorization is None and "client_secret" not in fields
        client_id = fields.get("client_id", "")
        if is_client_id_url(client_id):
            if not public:
                raise _error(401, "invalid_client", "a metadata-document client has no secret")
            if grant == "authorization_code":
                return self._document_code(event, fields)
            if grant == "refresh_token":
                return self._refresh(fields)
            raise _error(400, "unsupported_grant_type", "authorization_code or refresh_token")
        if (
            public
            and grant == "refresh_token"
            and fields.get("refresh_token", "").startswith(REFRESH_PREFIX)
        ):
            return self._refresh(fields)
        status, body = self._pool(fields, {"authorization": authorization} if authorization else {})
        if public and grant == "authorization_code" and status == 200:
            return self._rotating(status, body, client_id, client_id)
        return {
            "statusCode": status,
            "headers": {"content-type": "application/json", **_NO_STORE},
            "body": body.decode("utf-8", "replace"),
        }

    def _pool(self, form: Mapping[str, str], headers: Mapping[str, str]) -> tuple[int, bytes]:
        try:
            return self.post(self.pool_token_url, form, headers)
        except OSError as exc:
            logger.error("the pool's token endpoint failed: %s", exc)
            raise _error(
                503, "temporarily_unavailable", "sign-in is unavailable; try again"
            ) from None

    # -- metadata-document clients ------------------------------------------------

    def _document_code(self, event: Mapping[str, Any], fields: Mapping[str, str]) -> dict[str, Any]:
        if self.documents is None or self.document_pool_client is None:
            raise _error(401, "invalid_client", "this server takes no metadata-document clients")
        pool_client = self.document_pool_client()
        client_id = fields["client_id"]
        self.documents.get(client_id)  # still a valid document (cached), else invalid_client
        code = fields.get("code", "")
        sealed = unseal(self.key, CODE_PURPOSE, code.removeprefix(CODE_PREFIX), self.clock())
        if not code.startswith(CODE_PREFIX) or sealed is None:
            raise _error(400, "invalid_grant", "the code is not valid (or has expired)")
        if sealed.get("c") != client_id:
            raise _error(400, "invalid_grant", "the code was issued to another client")
        if sealed.get("r") != fields.get("redirect_uri"):
            raise _error(
                400, "invalid_grant", "redirect_uri differs from the authorization request's"
            )
        form = {
            "grant_type": "authorization_code",
            "code": str(sealed["p"]),
            "client_id": pool_client,
            "redirect_uri": base_url(event, self.public_base_url) + CALLBACK_PATH,
        }
        for name in ("code_verifier", "resource"):
            if name in fields:
                form[name] = fields[name]
        status, body = self._pool(form, {})
        if status != 200:
            return self._pool_refusal(status, body)
        return self._rotating(status, body, client_id, pool_client)

    def _pool_refusal(self, status: int, body: bytes) -> dict[str, Any]:
        """The pool's refusal as the client may see it (the shared client's id is not
        the client's business: only the error code and description pass)."""
        try:
            refused = json.loads(body)
        except ValueError:
            refused = {}
        code = refused.get("error") if isinstance(refused, dict) else None
        if not isinstance(code, str):
            return _answer(
                503,
                {
                    "error": "temporarily_unavailable",
                    "error_description": "sign-in is unavailable; try again",
                },
            )
        if code == "invalid_client":  # the shared client: the request was fine, the setup not
            logger.error("the pool refused the document clients' app client: %s", body[:300])
            return _answer(
                503,
                {
                    "error": "temporarily_unavailable",
                    "error_description": "sign-in is unavailable; try again",
                },
            )
        description = refused.get("error_description")
        answer = {"error": code}
        if isinstance(description, str):
            answer["error_description"] = description[:300]
        return _answer(400 if status < 500 else status, answer)

    # -- rotation ---------------------------------------------------------------------

    def _rotating(
        self, status: int, body: bytes, client_id: str, pool_client: str
    ) -> dict[str, Any]:
        """The pool's token answer with its refresh token swapped for a family's first."""
        tokens = json.loads(body)
        pool_refresh = tokens.pop("refresh_token", None)
        if isinstance(pool_refresh, str):
            family_id = secrets.token_urlsafe(18)
            self.families.start_family(
                RefreshFamily(
                    family_id=family_id,
                    client_id=client_id,
                    pool_client=pool_client,
                    pool_refresh=pool_refresh,
                    generation=0,
                    revoked=False,
                    expires_at=int(self.clock()) + SIGNIN_REFRESH_TOKEN_DAYS * 86_400,
                )
            )
            tokens["refresh_token"] = self._refresh_token(family_id, 0, client_id)
        return _answer(status, tokens)

    def _refresh_token(self, family_id: str, generation: int, client_id: str) -> str:
        payload = {"f": family_id, "g": generation, "c": client_id}
        return REFRESH_PREFIX + seal(
            self.key, REFRESH_PURPOSE, payload, SIGNIN_REFRESH_TOKEN_DAYS * 86_400
        )

    def _refresh(self, fields: Mapping[str, str]) -> dict[str, Any]:
        token = fields.get("refresh_token", "")
        sealed = unseal(self.key, REFRESH_PURPOSE, token.removeprefix(REFRESH_PREFIX), self.clock())
        if not token.startswith(REFRESH_PREFIX) or sealed is None:
            raise _error(400, "invalid_grant", "the refresh token is not valid (or has expired)")
        if sealed.get("c") != fields.get("client_id"):
            raise _error(400, "invalid_grant", "the refresh token was issued to another client")
        family_id, generation = str(sealed["f"]), int(sealed["g"])
        family = self.families.family(family_id)
        if family is None or family.revoked:
            raise _error(400, "invalid_grant", "this sign-in was revoked; sign in again")
        if family.generation != generation or not self.families.advance_family(
            family_id, generation
        ):
            # An old token again (or two uses of one at once): someone else holds a copy.
            self._revoke(family)
            logger.warning("refresh token of family %s reused: the family is revoked", family_id)
            raise _error(
                400,
                "invalid_grant",
                "the refresh token was already used; this sign-in is revoked, sign in again",
            )
        form = {
            "grant_type": "refresh_token",
            "refresh_token": family.pool_refresh,
            "client_id": family.pool_client,
        }
        if "scope" in fields:
            form["scope"] = fields["scope"]
        status, body = self._pool(form, {})
        if status != 200:
            return self._pool_refusal(status, body)
        tokens = json.loads(body)
        tokens.pop("refresh_token", None)  # the pool's own stays with the family
        tokens["refresh_token"] = self._refresh_token(family_id, generation + 1, family.client_id)
        return _answer(200, tokens)

    # -- revocation (RFC 7009) ----------------------------------------------------------

    def _revocation(self, event: Mapping[str, Any]) -> dict[str, Any]:
        headers = request_headers(event)
        fields = _form(event, headers)
        token = fields.get("token", "")
        if not token:
            raise _error(400, "invalid_request", "name the token to revoke (token)")
        # token_type_hint is only a hint (RFC 7009 §2.1): every token is looked up by its
        # own shape, whatever the hint says, and an unknown hint changes nothing.
        authorization = headers.get("authorization")
        public = authorization is None and "client_secret" not in fields
        client_id = fields.get("client_id", "")
        if public and not client_id:
            raise _error(401, "invalid_client", "a public client names itself (client_id)")
        if _JWT.fullmatch(token):
            raise _error(
                400,
                "unsupported_token_type",
                "access tokens are not revoked; revoke the refresh token (its access tokens "
                "end within the hour)",
            )
        if token.startswith(REFRESH_PREFIX):
            if not public:
                raise _error(401, "invalid_client", "the front door's refresh tokens are public")
            return self._revoke_family_token(token, client_id)
        if is_client_id_url(client_id) or len(token) > REVOKE_TOKEN_MAX_CHARS:
            # The pool never handed a document client a token, nor one this long: unknown.
            return _answer(200, {})
        form = {"token": token}
        for name in ("client_id", "client_secret"):
            if name in fields:
                form[name] = fields[name]
        credentials = {"authorization": authorization} if authorization else {}
        try:
            status, body = self.post(self.pool_revoke_url, form, credentials)
        except OSError as exc:
            logger.error("the pool's revocation endpoint failed: %s", exc)
            raise _error(
                503, "temporarily_unavailable", "revocation is unavailable; try again"
            ) from None
        if status == 200:
            return _answer(200, {})
        return self._pool_revocation_refusal(status, body)

    def _revoke_family_token(self, token: str, client_id: str) -> dict[str, Any]:
        sealed = unseal(self.key, REFRESH_PURPOSE, token.removeprefix(REFRESH_PREFIX), self.clock())
        if sealed is None:
            return _answer(200, {})  # not one of ours, or expired: nothing left to revoke
        if sealed.get("c") != client_id:
            raise _error(401, "invalid_client", "the token was issued to another client")
        family = self.families.family(str(sealed["f"]))
        if family is not None and not family.revoked:
            # Any generation ends the sign-in: a client signing out may hold an old one.
            self._revoke(family)
            logger.info("family %s revoked by its client", family.family_id)
        return _answer(200, {})

    def _pool_revocation_refusal(self, status: int, body: bytes) -> dict[str, Any]:
        """The pool's refusal of a revocation, as RFC 7009 words it; the pool failing is
        the only 5xx."""
        try:
            refused = json.loads(body)
        except ValueError:
            refused = {}
        code = refused.get("error") if isinstance(refused, dict) else None
        if status >= 500 or not isinstance(code, str):
            logger.error("the pool's revocation endpoint answered %s: %s", status, body[:200])
            raise _error(503, "temporarily_unavailable", "revocation is unavailable; try again")
        description = refused.get("error_description")
        text = description[:300] if isinstance(description, str) else code
        if code == "invalid_client":
            raise _error(401, code, text)
        raise _error(400, code, text)

    def _revoke(self, family: RefreshFamily) -> None:
        self.families.revoke_family(family.family_id)
        try:
            status, body = self.post(
                self.pool_revoke_url,
                {"token": family.pool_refresh, "client_id": family.pool_client},
                {},
            )
        except OSError as exc:
            status, body = 0, str(exc).encode()
        if status != 200:  # the family stays refused here; the pool's token ends on its own
            logger.error(
                "the pool did not revoke family %s: %s %s", family.family_id, status, body[:200]
            )
