"""Constructors of the admin API's errors (``AdminError`` is in :mod:`..errors`).

Named apart from the tool-error helpers of :mod:`..errors` (``invalid``,
``not_found``) because they say different things: which field broke which rule,
and which admin object is missing.
"""

from __future__ import annotations

from ..errors import AdminError


def invalid_field(field: str, rule: str, message: str) -> AdminError:
    """One broken rule, named: what a client needs to fix its request."""
    return AdminError(
        422,
        "invalid_request",
        f"{field}: {message}",
        [{"field": field, "rule": rule, "message": message}],
    )


def missing(what: str) -> AdminError:
    return AdminError(404, "not_found", f"no such {what} in this workspace")


def conflict(message: str) -> AdminError:
    return AdminError(409, "conflict", message)
