"""Workspace administration: the statements of the admin API, and the audit row of
every admin change, whoever makes it.

The admin API runs these in the caller's request transaction (as the runtime role,
so row-level security checks the admin grant again). The statements that change a
workspace the way an admin does (its memory feature, a membership, a registered
context, the audit row) are the operator path's too (``admin/operators.py``, the owner
role): those functions take either, see :data:`On`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypedDict

import psycopg
from psycopg.types.json import Jsonb

from memory_server.data.pool import Pending, Transaction
from memory_server.data.statements import Row, every, first
from memory_server.domain.grants import Grant

ADMIN_URI = "memory-admin://"

On = Transaction | psycopg.Connection[Any]
"""Where a statement shared with the operator path runs: the admin API's request
transaction (queued, pipelined: a result asked for inside the block costs a round
trip), or an operator's owner connection, which runs no pipeline: each statement
runs when called, its errors raise there and its result is already here."""


def _tx(on: On) -> Transaction:
    return on if isinstance(on, Transaction) else Transaction(on)


# -- rows -------------------------------------------------------------------------


class MemberRow(TypedDict):
    """A member of the workspace as the admin API shows it."""

    principal_id: uuid.UUID
    kind: Literal["person", "service"]
    subject: str
    handle: str
    grants: list[Grant]
    personal_namespace: bool
    agent_key: bool


class PrincipalRow(TypedDict):
    id: uuid.UUID
    kind: Literal["person", "service"]


class MemberIdRow(TypedDict):
    subject: str
    id: uuid.UUID


class AgentKeyRow(TypedDict):
    principal_id: uuid.UUID
    client_id: str
    name: str
    scopes: list[str]
    grants: list[Grant]
    personal_namespace: bool
    created_at: datetime
    created_by: str | None


class ContextRow(TypedDict):
    """A registered context with its members, as subjects (ordered by subject; what
    the admin API answers) and as principal ids (what a change compares)."""

    context_key: str
    kind: Literal["channel", "dm"]
    private: bool
    members: list[str]
    member_ids: list[uuid.UUID]


class UsageRow(TypedDict):
    context_key: str
    records: int


class AuditRow(TypedDict):
    id: int
    occurred_at: datetime
    operation: str
    uri: str
    memory_id: uuid.UUID
    revision: int
    writer_id: uuid.UUID
    writer: str | None
    source: str | None
    request_id: str | None
    details: Any
    published: bool


# -- the audit row ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Event:
    """What an admin change audits: the operation, what it changed (a path below
    ``memory-admin://``) and its details."""

    operation: str
    path: str
    details: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Actor:
    """Who made an admin change: an admin through the API (``admin-api``, the
    request's id) or the operator (the nil principal, ``operator``)."""

    principal_id: uuid.UUID
    source: str
    request_id: str | None


def record_event(on: On, workspace_id: uuid.UUID, actor: Actor, event: Event) -> None:
    """The change's audit row, in the change's own transaction (published after commit
    like every outbox row; nil record id, revision 0)."""
    _tx(on).execute(
        "admin_record_event",
        {
            "workspace_id": workspace_id,
            "uri": ADMIN_URI + event.path,
            "operation": event.operation,
            "principal_id": actor.principal_id,
            "source": actor.source,
            "request_id": actor.request_id,
            "details": Jsonb(event.details),
        },
    )


# -- the workspace and its memory feature ---------------------------------------------


def lock_workspace(on: On, workspace_id: uuid.UUID) -> Pending[bool | None]:
    """The workspace's row lock: its changes are serialised (the last-admin rule reads,
    then writes). Whether its memory feature is on; ``None``: no such workspace."""

    def shape(rows: list[Row]) -> bool | None:
        return bool(rows[0]["memory_enabled"]) if rows else None

    return _tx(on).query("admin_lock_workspace", {"workspace_id": workspace_id}, shape)


def memory_enabled(tx: Transaction, workspace_id: uuid.UUID) -> Pending[bool]:
    """Whether the memory feature is on (the caller was resolved as a member)."""

    def shape(rows: list[Row]) -> bool:
        assert rows, "the caller was just resolved as a member"
        return bool(rows[0]["memory_enabled"])

    return tx.query("admin_get_memory", {"workspace_id": workspace_id}, shape)


def set_memory(on: On, workspace_id: uuid.UUID, enabled: bool) -> None:
    """Turn the memory feature on or off."""
    _tx(on).execute("admin_set_memory", {"workspace_id": workspace_id, "enabled": enabled})


# -- members ---------------------------------------------------------------------------


def list_members(tx: Transaction, workspace_id: uuid.UUID) -> Pending[list[MemberRow]]:
    """Every member, agent keys marked, people before services."""
    return tx.query("admin_list_members", {"workspace_id": workspace_id}, every)


def member(tx: Transaction, workspace_id: uuid.UUID, subject: str) -> Pending[MemberRow | None]:
    """The member ``subject`` names, its membership locked for a change (a revoked key
    is no member)."""
    params = {"workspace_id": workspace_id, "subject": subject}
    return tx.query("admin_member", params, first)


def joinable_principal(tx: Transaction, subject: str) -> Pending[PrincipalRow | None]:
    """The principal ``subject`` names if it may join this workspace; ``None`` reads
    alike for an unknown identity and one that may not join."""
    return tx.query("admin_principal", {"subject": subject}, first)


def put_member(
    on: On,
    workspace_id: uuid.UUID,
    principal_id: uuid.UUID,
    grants: Sequence[str],
    personal_namespace: bool,
) -> None:
    """Add a member or replace its grants and personal namespace."""
    _tx(on).execute(
        "admin_put_member",
        {
            "workspace_id": workspace_id,
            "principal_id": principal_id,
            "grants": list(grants),
            "personal_namespace": personal_namespace,
        },
    )


def count_admins(tx: Transaction, workspace_id: uuid.UUID) -> Pending[int]:
    """How many members hold the admin grant."""

    def shape(rows: list[Row]) -> int:
        return int(rows[0]["admins"]) if rows else 0

    return tx.query("admin_count_admins", {"workspace_id": workspace_id}, shape)


def remove_member(tx: Transaction, workspace_id: uuid.UUID, principal_id: uuid.UUID) -> None:
    """End a membership and the member's place in private contexts (its personal
    records stay)."""
    tx.execute("admin_remove_member", {"workspace_id": workspace_id, "principal_id": principal_id})


def member_ids(on: On, workspace_id: uuid.UUID, subjects: list[str]) -> Pending[list[MemberIdRow]]:
    """The principal ids of those of ``subjects`` that are members."""
    params = {"workspace_id": workspace_id, "subjects": subjects}
    return _tx(on).query("admin_member_ids", params, every)


# -- agent keys --------------------------------------------------------------------------


def list_agent_keys(tx: Transaction, workspace_id: uuid.UUID) -> Pending[list[AgentKeyRow]]:
    """The workspace's live agent keys with their membership."""
    return tx.query("admin_list_agent_keys", {"workspace_id": workspace_id}, every)


def create_agent_key(
    tx: Transaction, client_id: str, name: str, scopes: list[str]
) -> Pending[uuid.UUID]:
    """A new agent key's principal, bound to the caller's workspace (raises a unique
    violation at the result when a live key has the name)."""

    def shape(rows: list[Row]) -> uuid.UUID:
        return uuid.UUID(str(rows[0]["principal_id"]))

    params = {"client_id": client_id, "name": name, "scopes": scopes}
    return tx.query("admin_create_agent_key", params, shape)


def revoke_agent_key(tx: Transaction, client_id: str) -> Pending[uuid.UUID | None]:
    """Revoke a live agent key of the caller's workspace: its principal; ``None`` when
    there is no such key."""

    def shape(rows: list[Row]) -> uuid.UUID | None:
        found = rows[0]["principal_id"] if rows else None
        return None if found is None else uuid.UUID(str(found))

    return tx.query("admin_revoke_agent_key", {"client_id": client_id}, shape)


# -- contexts ------------------------------------------------------------------------------


def list_contexts(tx: Transaction, workspace_id: uuid.UUID) -> Pending[list[ContextRow]]:
    """The registered contexts with their members, by key."""
    params = {"workspace_id": workspace_id, "context_key": None}
    return tx.query("admin_contexts", params, every)


def context_usage(tx: Transaction) -> Pending[list[UsageRow]]:
    """Contexts that hold records the admin may know of, with counts."""
    return tx.query("admin_context_usage", {}, every)


def context(on: On, workspace_id: uuid.UUID, context_key: str) -> Pending[ContextRow | None]:
    """One registered context with its members; ``None``: not registered."""
    params = {"workspace_id": workspace_id, "context_key": context_key}
    return _tx(on).query("admin_contexts", params, first)


def put_context(
    on: On, workspace_id: uuid.UUID, context_key: str, kind: str, members: Iterable[uuid.UUID]
) -> None:
    """Register a private channel or a DM with exactly these members."""
    _tx(on).execute(
        "admin_put_context",
        {
            "workspace_id": workspace_id,
            "context_key": context_key,
            "kind": kind,
            "members": list(members),
        },
    )


def remove_context(tx: Transaction, workspace_id: uuid.UUID, context_key: str) -> Pending[bool]:
    """Unregister a context (its members go with it); ``False``: it was not registered."""
    params = {"workspace_id": workspace_id, "context_key": context_key}
    return tx.query("admin_remove_context", params, bool)


# -- the audit trail --------------------------------------------------------------------------


def audit_page(
    tx: Transaction, workspace_id: uuid.UUID, *, before: int | None, limit: int
) -> Pending[list[AuditRow]]:
    """Up to ``limit`` audit rows, newest first, below the id ``before``."""
    params = {"workspace_id": workspace_id, "before": before, "limit": limit}
    return tx.query("admin_audit_page", params, every)
