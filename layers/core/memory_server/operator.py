"""Operator tasks above a workspace (run as the owner role, outside any tenant).

Used by the demo seed and tests now, and by the operator commands later.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Literal

import psycopg

from .contexts import parse_context
from .errors import invalid
from .grants import ALL_GRANTS, sorted_grants


def create_workspace(
    owner: psycopg.Connection, slug: str, *, memory_enabled: bool = False
) -> uuid.UUID:
    row = owner.execute(
        "INSERT INTO memory.workspaces (slug, memory_enabled) VALUES (%s, %s) "
        "ON CONFLICT (slug) DO UPDATE SET slug = EXCLUDED.slug RETURNING id",
        (slug, memory_enabled),
    ).fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


def ensure_principal(
    owner: psycopg.Connection, kind: Literal["person", "service"], subject: str, handle: str
) -> uuid.UUID:
    row = owner.execute(
        "INSERT INTO memory.principals (kind, subject, handle) VALUES (%s, %s, %s) "
        "ON CONFLICT (subject) DO UPDATE SET handle = EXCLUDED.handle RETURNING id",
        (kind, subject, handle),
    ).fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


def set_membership(
    owner: psycopg.Connection,
    workspace_id: uuid.UUID,
    principal_id: uuid.UUID,
    grants: Iterable[str],
    *,
    personal_namespace: bool | None = None,
) -> None:
    """Add or change a member. People always get a personal namespace; services don't
    unless ``personal_namespace=True``."""
    grant_list = sorted_grants(grants)
    unknown = set(grant_list) - set(ALL_GRANTS)
    if unknown:
        raise invalid(f"unknown grants: {sorted(unknown)}")
    kind_row = owner.execute(
        "SELECT kind FROM memory.principals WHERE id = %s", (principal_id,)
    ).fetchone()
    if kind_row is None:
        raise invalid("no such principal")
    personal = kind_row[0] == "person" if personal_namespace is None else personal_namespace
    owner.execute(
        "INSERT INTO memory.memberships (workspace_id, principal_id, grants, personal_namespace) "
        "VALUES (%s, %s, %s, %s) ON CONFLICT (workspace_id, principal_id) "
        "DO UPDATE SET grants = EXCLUDED.grants, personal_namespace = EXCLUDED.personal_namespace",
        (workspace_id, principal_id, grant_list, personal),
    )


def register_context(
    owner: psycopg.Connection,
    workspace_id: uuid.UUID,
    context_key: str,
    members: Iterable[uuid.UUID],
) -> None:
    """Register a private channel or a DM with its members (replacing the member list)."""
    context = parse_context(context_key)
    if context.kind not in ("channel", "dm"):
        raise invalid("only channels and DMs are registered; threads follow their channel")
    owner.execute(
        "INSERT INTO memory.contexts (workspace_id, context_key, kind, private) "
        "VALUES (%s, %s, %s, true) ON CONFLICT (workspace_id, context_key) DO NOTHING",
        (workspace_id, context.key, context.kind),
    )
    owner.execute(
        "DELETE FROM memory.context_members WHERE workspace_id = %s AND context_key = %s",
        (workspace_id, context.key),
    )
    for member in members:
        owner.execute(
            "INSERT INTO memory.context_members (workspace_id, context_key, principal_id) "
            "VALUES (%s, %s, %s)",
            (workspace_id, context.key, member),
        )
