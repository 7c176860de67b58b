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


def not_a_member() -> AdminError:
    # One answer for every subject that is no member: unknown to the service, another
    # workspace's, or a person the service knows. People (and other workspaces'
    # services) join by accepting an invitation, so no answer tells them apart.
    return AdminError(
        404,
        "not_found",
        "no member with this subject in this workspace: invite it "
        "(POST …/admin/invitations); it joins when it accepts",
    )
