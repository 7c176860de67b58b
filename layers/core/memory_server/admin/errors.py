"""Constructors of the admin API's errors (``AdminError`` is in :mod:`memory_server.domain.errors`).

Named apart from the tool-error helpers of :mod:`memory_server.domain.errors` (``invalid``,
``not_found``) because they say different things: which field broke which rule,
and which admin object is missing.
"""

from __future__ import annotations

from memory_server.domain.errors import AdminError


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


def unknown_identity() -> AdminError:
    # One answer for an identity that does not exist and one that may not join here
    # (erased, revoked, another workspace's key): no oracle about identities outside.
    return AdminError(
        404,
        "not_found",
        "no identity with this subject can join this workspace "
        "(identities new to the service are created by an operator)",
    )
