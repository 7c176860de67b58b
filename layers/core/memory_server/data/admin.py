"""Workspace administration: the statements of the admin API, and the audit row of
every admin change, whoever makes it.

The admin API runs these in the caller's request transaction (as the runtime role,
so row-level security checks the admin grant again). The statements that change a
workspace the way an admin does (its memory feature, a membership, the audit row) are
the operator path's too (``admin/operators.py``, the owner role): those functions take
either, see :data:`On`. Private contexts and invitations change only through the
``SECURITY DEFINER`` functions of ``infra/schema/70_admin.sql``, which enforce their
rules again (the operator registers contexts with a statement of its own,
:mod:`.operators`); the invitee's acceptance runs before it is a member, in a
transaction of its own (:func:`accept_invitation`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypedDict

import psycopg
from psycopg.types.json import Jsonb

from memory_server.data.pool import Database, Pending, Transaction
from memory_server.data.statements import Row, every, first
from memory_server.domain.caller import PrincipalKind
from memory_server.domain.deadline import Deadline
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
    handle_conflict: bool


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
    created_by_kind: PrincipalKind | None


class ContextRow(TypedDict):
    """A registered context with its members, as subjects (ordered by subject; what
    the admin API answers) and as principal ids (what a change compares), as far as
    the reader may see them (an admin: only of the private contexts it is in), and
    whether the acting principal is one of them."""

    context_key: str
    kind: Literal["channel", "dm"]
    private: bool
    members: list[str]
    member_ids: list[uuid.UUID]
    caller_in_it: bool


class ContextStateRow(TypedDict):
    """What a change of a context needs to know and an admin may not read itself."""

    registered: bool
    private: bool
    caller_in_it: bool
    has_members: bool
    holds_records: bool


class PurgeRow(TypedDict):
    """What deleting a private context wholesale removed."""

    records_deleted: int
    revisions_purged: int


class InvitationRow(TypedDict):
    id: uuid.UUID
    subject: str
    grants: list[Grant]
    personal_namespace: bool | None
    invited_by: str | None
    invited_by_kind: PrincipalKind | None
    created_at: datetime
    expires_at: datetime


class AcceptedRow(TypedDict):
    """An invitation accepted (``outcome`` ``accepted``: the member it made), or
    ``handle_required``: a person new to the service named no handle."""

    outcome: Literal["accepted", "handle_required"]
    principal_id: uuid.UUID | None
    kind: Literal["person", "service"] | None
    handle: str | None
    grants: list[Grant] | None
    personal_namespace: bool | None


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
    writer_kind: PrincipalKind | None
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


def add_member(
    on: On,
    workspace_id: uuid.UUID,
    principal_id: uuid.UUID,
    grants: Sequence[str],
    personal_namespace: bool,
) -> None:
    """Add a member (as the runtime role: only the workspace's own agent keys)."""
    _tx(on).execute(
        "admin_add_member",
        {
            "workspace_id": workspace_id,
            "principal_id": principal_id,
            "grants": list(grants),
            "personal_namespace": personal_namespace,
        },
    )


def change_member(
    on: On,
    workspace_id: uuid.UUID,
    principal_id: uuid.UUID,
    grants: Sequence[str],
    personal_namespace: bool,
) -> None:
    """Replace a member's grants and personal namespace."""
    _tx(on).execute(
        "admin_change_member",
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
    """End a membership and, by trigger, the member's place in private contexts (its
    personal records stay)."""
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


def list_contexts(
    tx: Transaction, workspace_id: uuid.UUID, principal_id: uuid.UUID
) -> Pending[list[ContextRow]]:
    """The registered contexts with their members (those ``principal_id`` may see), by
    key."""
    params = {"workspace_id": workspace_id, "context_key": None, "principal_id": principal_id}
    return tx.query("admin_contexts", params, every)


def context_usage(tx: Transaction) -> Pending[list[UsageRow]]:
    """Contexts that hold records the admin may know of, with counts."""
    return tx.query("admin_context_usage", {}, every)


def context(
    on: On, workspace_id: uuid.UUID, context_key: str, principal_id: uuid.UUID | None = None
) -> Pending[ContextRow | None]:
    """One registered context with its members (as the reader may see them); ``None``:
    not registered."""
    params = {
        "workspace_id": workspace_id,
        "context_key": context_key,
        "principal_id": principal_id,
    }
    return _tx(on).query("admin_contexts", params, first)


def context_state(tx: Transaction, context_key: str) -> Pending[ContextStateRow]:
    """Whether the context is registered and private, whether the caller or anyone is
    in it, and whether it holds records, answered by the database for the admin."""

    def shape(rows: list[Row]) -> ContextStateRow:
        found: ContextStateRow = first(rows)  # the function answers one row, always
        return found

    return tx.query("admin_context_state", {"context_key": context_key}, shape)


def register_context(tx: Transaction, context_key: str, members: Iterable[uuid.UUID]) -> None:
    """Register a private channel or a DM with exactly these members (the database
    refuses what the rules of private contexts refuse)."""
    params = {"context_key": context_key, "members": list(members)}
    tx.execute("admin_register_context", params)


def remove_context(tx: Transaction, context_key: str) -> Pending[bool]:
    """Unregister a context (its members go with it); ``False``: it was not registered."""

    def shape(rows: list[Row]) -> bool:
        return bool(rows[0]["removed"])

    return tx.query("admin_remove_context", {"context_key": context_key}, shape)


def delete_context(
    tx: Transaction, context_key: str, request_id: str | None
) -> Pending[PurgeRow | None]:
    """Delete a private context (or a DM) wholesale; ``None``: it is neither."""
    params = {"context_key": context_key, "request_id": request_id}
    return tx.query("admin_delete_context", params, first)


# -- invitations ---------------------------------------------------------------------------


def invite(
    tx: Transaction,
    subject: str,
    grants: Sequence[str],
    personal_namespace: bool | None,
    *,
    ttl_s: int,
    max_pending: int,
) -> Pending[InvitationRow | None]:
    """Invite ``subject`` (its pending invitation replaced); ``None``: the workspace
    already holds ``max_pending`` invitations for other subjects."""
    params = {
        "subject": subject,
        "grants": list(grants),
        "personal_namespace": personal_namespace,
        "ttl_s": ttl_s,
        "max_pending": max_pending,
    }
    return tx.query("admin_invite", params, first)


def invitations(tx: Transaction) -> Pending[list[InvitationRow]]:
    """The workspace's pending invitations, oldest first."""
    return tx.query("admin_invitations", {}, every)


def revoke_invitation(tx: Transaction, invitation_id: uuid.UUID) -> Pending[bool]:
    """Withdraw a pending invitation; ``False``: there is none with that id here."""

    def shape(rows: list[Row]) -> bool:
        return bool(rows[0]["revoked"])

    return tx.query("admin_revoke_invitation", {"invitation_id": invitation_id}, shape)


def accept_invitation(
    db: Database,
    deadline: Deadline,
    *,
    workspace: str,
    invitation_id: uuid.UUID,
    subject: str,
    person: bool,
    handle: str | None,
    request_id: str | None,
) -> AcceptedRow | None:
    """The invitee (``subject``, from its own verified token; a person's or a
    service's) accepts, in a transaction of its own before it is a member; ``None``:
    nothing it may accept (no such invitation for it, expired, or an identity that may
    not join), alike."""
    params = {
        "workspace": workspace,
        "invitation_id": invitation_id,
        "subject": subject,
        "person": person,
        "handle": handle,
        "request_id": request_id,
    }
    with db.unscoped(deadline, read_only=False) as tx:
        found = tx.query("accept_invitation", params, first)
    row: AcceptedRow | None = found.get()
    return row


# -- the audit trail --------------------------------------------------------------------------


def audit_page(
    tx: Transaction, workspace_id: uuid.UUID, *, before: int | None, limit: int
) -> Pending[list[AuditRow]]:
    """Up to ``limit`` audit rows, newest first, below the id ``before``."""
    params = {"workspace_id": workspace_id, "before": before, "limit": limit}
    return tx.query("admin_audit_page", params, every)
