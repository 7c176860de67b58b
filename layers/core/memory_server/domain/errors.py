"""The one error model: every failure a client can see is a ``ServiceError``.

One hierarchy, one mapping to each wire format:

- ``ToolError``: a tool result with ``isError`` (``structuredContent.error`` =
  :meth:`ServiceError.to_dict`); codes are the closed set of docs/contract.md §5.
- ``RpcError``: a JSON-RPC protocol error (:func:`rpc_error_body`).
- ``AdminError``: an admin API answer (:func:`http_answer`), ``422`` with the field
  and rule broken, ``404``/``409``/``503`` for the rest.
- ``EdgeError``: what the HTTP edge answers before any tool or admin action runs
  (401/403 challenges, 404 for a workspace, 403 ``context_unavailable``, 400, 503);
  ``TokenRefused`` is the Lambda authorizer's 401.
- ``OAuthError``: an answer of the product's authorization-server endpoints
  (registration), in the RFC 6749 / RFC 7591 shape ``{"error", "error_description"}``.

Over plain HTTP every ``ServiceError`` answers with :func:`http_answer`; a
``ToolError`` raised inside an admin action (the database timed out, a context id
broke a rule) maps by its code.
"""

from __future__ import annotations

from typing import Any, Literal

ErrorCode = Literal[
    "invalid_argument",
    "not_found",
    "revision_conflict",
    "already_exists",
    "permission_denied",
    "idempotency_key_reused",
    "too_large",
    "timeout",
    "unavailable",
]

# HTTP status of a tool error code, where one reaches plain HTTP (the admin API).
_TOOL_STATUS: dict[str, int] = {
    "invalid_argument": 422,
    "not_found": 404,
    "revision_conflict": 409,
    "already_exists": 409,
    "permission_denied": 403,
    "idempotency_key_reused": 409,
    "too_large": 413,
    "timeout": 503,
    "unavailable": 503,
}
RETRY_AFTER = {"retry-after": "1"}


class ServiceError(Exception):
    """A failure reported to the client: a stable ``code``, a ``message``, details."""

    status = 500  # over plain HTTP; subclasses set their own

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class ToolError(ServiceError):
    """A tool's failure: answered as a tool result with ``isError: true``."""

    code: ErrorCode

    def __init__(self, code: ErrorCode, message: str, **details: Any) -> None:
        super().__init__(code, message, **details)
        self.status = _TOOL_STATUS[code]


class RpcError(ServiceError):
    """A JSON-RPC protocol error (not a tool error): ``code`` is the JSON-RPC number."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(str(code), message)
        self.rpc_code, self.data = code, data


class AdminError(ServiceError):
    """An admin API failure with its HTTP status and, for bad input, the rules broken."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        problems: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(code, message)
        self.status = status
        self.problems = problems or []


class EdgeError(ServiceError):
    """An answer of the HTTP edge before any handler runs.

    ``body`` is ``None`` for an empty answer (a 404 that must not say why);
    ``challenge`` names the scope of a ``WWW-Authenticate`` challenge (401/403).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str = "",
        *,
        body: dict[str, Any] | None = None,
        challenge: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(code, message)
        self.status = status
        self.body = body
        self.challenge = challenge
        self.headers = headers or {}


class TokenRefused(EdgeError):
    """The Lambda authorizer's refusal of a missing or invalid token.

    API Gateway answers 401 ``{"message":"Unauthorized"}`` when an authorizer fails with
    exactly the message ``Unauthorized``, so that is this exception's text; ``reason``
    (why) goes to the log only.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(401, "unauthorized", "Unauthorized", body={"message": "Unauthorized"})
        self.reason = reason


class KeySetUnavailable(Exception):
    """The user pool's key set could not be fetched: the service's fault, not the
    caller's (the authorizer fails, and API Gateway answers 500)."""


class OAuthError(ServiceError):
    """An OAuth error answer (RFC 6749 §5.2, RFC 7591 §3.2.2)."""

    def __init__(
        self, status: int, code: str, description: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(code, description)
        self.status = status
        self.headers = headers or {}


def invalid(message: str, **details: Any) -> ToolError:
    return ToolError("invalid_argument", message, **details)


def not_found() -> ToolError:
    # One message for everything outside the caller's view: the text is not an oracle.
    return ToolError("not_found", "no such record in your view")


def revision_conflict(current_revision: int) -> ToolError:
    return ToolError(
        "revision_conflict",
        f"the record is at revision {current_revision}; re-read it and retry",
        current_revision=current_revision,
    )


def unauthenticated(scope: str) -> EdgeError:
    return EdgeError(401, "unauthorized", body={"message": "Unauthorized"}, challenge=scope)


def insufficient_scope(scope: str) -> EdgeError:
    return EdgeError(403, "insufficient_scope", body={"message": "Forbidden"}, challenge=scope)


def no_such_workspace() -> EdgeError:
    # Not a member, no such workspace, memory off: one empty answer, no oracle.
    return EdgeError(404, "not_found")


class ContextUnavailable(EdgeError):
    """The caller may not listen from the requested context: one identical answer
    whichever the reason (a private channel or DM it is not in, an unregistered DM)."""

    def __init__(self) -> None:
        super().__init__(403, "context_unavailable", body={"error": "context_unavailable"})


def edge_unavailable() -> EdgeError:
    return EdgeError(503, "unavailable", body={"error": "unavailable"}, headers=RETRY_AFTER)


class IntegrityViolation(Exception):
    """An internal safety check failed (for example a search hit outside the view)."""


def rpc_error_body(error: RpcError) -> dict[str, Any]:
    """The JSON-RPC ``error`` member."""
    body: dict[str, Any] = {"code": error.rpc_code, "message": error.message}
    if error.data is not None:
        body["data"] = error.data
    return body


def http_answer(error: ServiceError) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
    """Status, JSON body (``None``: empty) and headers of ``error`` over plain HTTP."""
    if isinstance(error, EdgeError):
        return error.status, error.body, dict(error.headers)
    if isinstance(error, OAuthError):
        oauth = {"error": error.code, "error_description": error.message}
        return error.status, oauth, {"cache-control": "no-store", **error.headers}
    body: dict[str, Any] = {"error": error.code, "message": error.message}
    if isinstance(error, AdminError) and error.problems:
        body["problems"] = error.problems
    headers = dict(RETRY_AFTER) if error.status == 503 else {}
    return error.status, body, headers
