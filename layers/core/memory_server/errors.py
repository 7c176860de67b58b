"""The one error model: every failure a caller can see is a ``ToolError``.

Codes are the closed set of docs/contract.md §5 (Errors). ``details`` carries extra fields that the
contract names (for example ``current_revision`` on a conflict).
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


class ToolError(Exception):
    """A failure reported to the caller as ``{code, message, ...details}``."""

    def __init__(self, code: ErrorCode, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}

    def __repr__(self) -> str:
        return f"ToolError({self.code!r}, {self.message!r})"


def invalid(message: str, **details: Any) -> ToolError:
    return ToolError("invalid_argument", message, **details)


def not_found() -> ToolError:
    # One message for everything outside the caller's view: the text is not an oracle.
    return ToolError("not_found", "no such record in your view")


class ContextUnavailable(Exception):
    """The caller may not use the requested listening context (HTTP 403, one body)."""


class IntegrityViolation(Exception):
    """An internal safety check failed (for example a search hit outside the view)."""
