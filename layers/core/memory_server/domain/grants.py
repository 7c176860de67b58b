"""Grants and token scopes (docs/contract.md §2): effective = token scopes ∩ membership grants."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

Grant = Literal["read", "write:personal", "write:shared", "delete", "admin"]

ALL_GRANTS: tuple[Grant, ...] = ("read", "write:personal", "write:shared", "delete", "admin")

SCOPE_GRANTS: dict[str, Grant] = {
    "memory/read": "read",
    "memory/write.personal": "write:personal",
    "memory/write.shared": "write:shared",
    "memory/delete": "delete",
    "memory/admin": "admin",
}
GRANT_SCOPES: dict[Grant, str] = {grant: scope for scope, grant in SCOPE_GRANTS.items()}


def grants_from_scopes(scopes: Iterable[str]) -> frozenset[Grant]:
    return frozenset(SCOPE_GRANTS[s] for s in scopes if s in SCOPE_GRANTS)


# Grants that change records: each needs ``read`` as well (docs/contract.md §2).
NEEDS_READ: frozenset[Grant] = frozenset({"write:personal", "write:shared", "delete"})


def effective_grants(scopes: Iterable[str], membership: Iterable[str]) -> frozenset[Grant]:
    """What a request may do: only what both the token and the membership allow.

    Writing needs reading: a change names the revision it read, and a write returns
    the row it wrote, so without ``read`` the write and delete grants are dropped.
    """
    member = frozenset(membership)
    granted = frozenset(g for g in grants_from_scopes(scopes) if g in member)
    if "read" not in granted:
        granted -= NEEDS_READ
    return granted


def lacks_read(grants: Iterable[str]) -> bool:
    """A set of grants (or of their scopes' grants) that writes without reading."""
    held = frozenset(grants)
    return "read" not in held and bool(held & NEEDS_READ)


def write_grant(namespace: str) -> Grant:
    return "write:personal" if namespace == "me" else "write:shared"


def sorted_grants(grants: Iterable[str]) -> list[str]:
    order: dict[str, int] = {g: i for i, g in enumerate(ALL_GRANTS)}
    return sorted(set(grants), key=lambda g: order.get(g, len(order)))


# What an MCP client asks for (RFC 9728 scopes_supported) and what self-registered
# clients may be granted: every memory scope but memory/admin, which only the people
# client (memoryctl, the admin API) requests.
MCP_SCOPES: tuple[str, ...] = tuple(s for s in SCOPE_GRANTS if s != "memory/admin")


# -- What an agent key may be (docs/admin.md, "Agent keys") ----------------------------
# The admin API checks a key's name and scopes (admin.models.AgentKeyIn) and that the
# scopes are within its creator's effective grants; the management function, which
# makes the key's app client and cannot see memberships, checks the rest again, so a
# caller that skipped the first check still gets nothing else: a client-credentials
# client named "{workspace}.{name}" with memory scopes only. memory/admin is one of
# them: a key may administer its workspace when an admin (whose own grants include
# admin) gives it that scope, as for a provisioning job.
AGENT_KEY_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


def agent_key_scope_problem(scopes: object) -> str | None:
    """Why ``scopes`` cannot be an agent key's, or None when they can."""
    if not isinstance(scopes, list) or not scopes or not all(isinstance(s, str) for s in scopes):
        return "an agent key has a non-empty list of scopes"
    if len(set(scopes)) != len(scopes):
        return "an agent key's scopes must not repeat"
    unknown = [s for s in scopes if s not in SCOPE_GRANTS]
    if unknown:
        return f"an agent key's scopes are memory scopes, not {' '.join(unknown)}"
    if lacks_read(grants_from_scopes(scopes)):
        return "writing needs reading: an agent key that writes or deletes has memory/read"
    return None
