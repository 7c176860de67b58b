"""Errors of the admin surface: an HTTP status, a stable code, a message.

The admin API is plain JSON over HTTP (not MCP), so its failures are HTTP answers:
``422`` with the field and the rule for a body or parameter that breaks a rule,
``404``/``409``/``503`` for the rest. Operator functions raise the same type.
"""

from __future__ import annotations

from typing import Any


class AdminError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        problems: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.problems = problems or []

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.problems:
            body["problems"] = self.problems
        return body


def invalid(field: str, rule: str, message: str) -> AdminError:
    """One broken rule, named: what a client needs to fix its request."""
    return AdminError(
        422,
        "invalid_request",
        f"{field}: {message}",
        [{"field": field, "rule": rule, "message": message}],
    )


def not_found(what: str) -> AdminError:
    return AdminError(404, "not_found", f"no such {what} in this workspace")


def conflict(message: str) -> AdminError:
    return AdminError(409, "conflict", message)
