"""The operator path's own statements, on an owner-role connection: workspaces,
principals, registered contexts, erasure and retired agent keys (``admin/operators.py``
runs them, each inside its caller's transaction). What an operator changes the way an
admin does (memory feature, memberships, audit rows) runs the admin statements of
:mod:`.admin`.

The connection runs no pipeline: each function's statement runs when it is called.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal, TypedDict, cast

import psycopg

from memory_server.data import statements

Owner = psycopg.Connection[Any]
Kind = Literal["person", "service"]


class NewWorkspace(TypedDict):
    id: uuid.UUID
    created_at: datetime


class WorkspaceSize(TypedDict):
    id: uuid.UUID
    slug: str
    memory_enabled: bool
    created_at: datetime
    members: int
    admins: int
    agent_keys: int
    records: int


class DoomedWorkspace(TypedDict):
    """A workspace about to be deleted, with what deleting it removes."""

    id: uuid.UUID
    slug: str
    records: int
    revisions: int
    members: int
    contexts: int
    audit_events: int
    agent_clients: list[str]


class PrincipalRow(TypedDict):
    id: uuid.UUID
    kind: Kind
    workspace_id: uuid.UUID | None  # an agent key's workspace
    revoked_at: datetime | None


class MembershipRow(PrincipalRow):
    """A principal and its membership of one workspace (``grants`` is ``None``: not a
    member)."""

    grants: list[str] | None
    personal_namespace: bool | None


class PersonRow(TypedDict):
    id: uuid.UUID
    handle: str
    workspaces: list[str]
    workspace_ids: list[uuid.UUID]


class PersonalErased(TypedDict):
    personal_records: int
    personal_revisions: int
    idempotency_keys: int
    audit_paths_redacted: int


class IdentityErased(TypedDict):
    records_pseudonymised: int
    revisions_pseudonymised: int
    audit_events_pseudonymised: int
    agent_keys_pseudonymised: int
    invitations_pseudonymised: int


class Retired(TypedDict):
    id: uuid.UUID
    workspace_id: uuid.UUID


# -- workspaces ---------------------------------------------------------------------


def create_workspace(owner: Owner, slug: str, memory_enabled: bool) -> NewWorkspace | None:
    """A new workspace; ``None`` when the slug is taken (never an upsert)."""
    params = {"slug": slug, "memory_enabled": memory_enabled}
    return cast(NewWorkspace | None, statements.one(owner, "operator_create_workspace", params))


def find_workspace(owner: Owner, slug: str) -> uuid.UUID | None:
    """The id of the workspace ``slug``, locked for the caller's change."""
    found = statements.one(owner, "operator_find_workspace", {"slug": slug})
    return None if found is None else uuid.UUID(str(found["id"]))


def list_workspaces(owner: Owner) -> list[WorkspaceSize]:
    """Every workspace with its size, by slug."""
    found: list[Any] = statements.rows(owner, "operator_list_workspaces")
    return found


def doomed_workspace(owner: Owner, slug: str) -> DoomedWorkspace | None:
    """The workspace ``slug`` locked for deletion, with what deleting it removes."""
    return cast(DoomedWorkspace | None, statements.one(owner, "operator_workspace", {"slug": slug}))


def delete_workspace(owner: Owner, workspace_id: uuid.UUID) -> None:
    """Delete a workspace; everything in it cascades."""
    statements.run(owner, "operator_delete_workspace", {"workspace_id": workspace_id})


def workspace_has_records(owner: Owner, workspace_id: uuid.UUID) -> bool:
    """Does the workspace hold any record?"""
    found = statements.one(owner, "workspace_has_records", {"workspace_id": workspace_id})
    return found is not None and bool(found["found"])


# -- principals and memberships -------------------------------------------------------


def principal(owner: Owner, kind: Kind, subject: str, handle: str) -> PrincipalRow:
    """The principal for ``subject``, created when missing (an existing one is not
    changed, whatever its kind)."""
    params = {"kind": kind, "subject": subject, "handle": handle}
    found = statements.one(owner, "operator_principal", params)
    assert found is not None  # created or found: the statement always answers
    return cast(PrincipalRow, found)


def rename_principal(owner: Owner, subject: str, handle: str) -> uuid.UUID | None:
    """Give ``subject``'s principal a new handle; ``None`` when there is none (raises a
    unique violation when a member of one of its workspaces holds the handle)."""
    found = statements.one(
        owner, "operator_rename_principal", {"subject": subject, "handle": handle}
    )
    return None if found is None else uuid.UUID(str(found["id"]))


def membership(
    owner: Owner, workspace_id: uuid.UUID, principal_id: uuid.UUID
) -> MembershipRow | None:
    """The principal ``principal_id`` and its membership of the workspace, if any;
    ``None``: no such principal."""
    params = {"workspace_id": workspace_id, "principal_id": principal_id}
    return cast(MembershipRow | None, statements.one(owner, "operator_membership", params))


def non_members(owner: Owner, workspace_id: uuid.UUID, ids: list[uuid.UUID]) -> list[uuid.UUID]:
    """Those of ``ids`` that are not members of the workspace."""
    params = {"workspace_id": workspace_id, "members": ids}
    return [row["id"] for row in statements.rows(owner, "operator_non_members", params)]


# -- contexts --------------------------------------------------------------------------------


def put_context(
    owner: Owner, workspace_id: uuid.UUID, context_key: str, kind: str, members: list[uuid.UUID]
) -> None:
    """Register a private channel or a DM with exactly these members."""
    params = {
        "workspace_id": workspace_id,
        "context_key": context_key,
        "kind": kind,
        "members": members,
    }
    statements.run(owner, "operator_put_context", params)


def context_holds_records(owner: Owner, workspace_id: uuid.UUID, context_key: str) -> bool:
    """Does the context, or a thread of it, hold any record (in any namespace)?"""
    params = {"workspace_id": workspace_id, "context_key": context_key}
    found = statements.one(owner, "operator_context_holds_records", params)
    return found is not None and bool(found["found"])


# -- erasure and agent keys ---------------------------------------------------------------


def person(owner: Owner, subject: str) -> PersonRow | None:
    """The person ``subject`` names, locked for erasure, with their workspaces."""
    return cast(PersonRow | None, statements.one(owner, "operator_person", {"subject": subject}))


def lock_person(owner: Owner, principal_id: uuid.UUID) -> None:
    """Wait for the person's changes in flight; keep new ones out until commit."""
    statements.run(owner, "operator_lock_person", {"principal_id": principal_id})


def create_pseudonym(owner: Owner, subject: str, handle: str) -> uuid.UUID:
    """The principal that takes an erased person's place."""
    made = statements.one(
        owner, "operator_create_pseudonym", {"subject": subject, "handle": handle}
    )
    assert made is not None
    return uuid.UUID(str(made["id"]))


def _erasure(principal_id: uuid.UUID, pseudonym_id: uuid.UUID) -> dict[str, Any]:
    return {
        "principal_id": principal_id,
        "pseudonym_id": pseudonym_id,
        "principal_text": str(principal_id),
        "pseudonym_text": str(pseudonym_id),
    }


def erase_personal(
    owner: Owner, principal_id: uuid.UUID, pseudonym_id: uuid.UUID
) -> PersonalErased:
    """Purge the person's personal namespace in every workspace (records, revisions,
    idempotency keys, paths in audit rows)."""
    found = statements.one(owner, "operator_erase_personal", _erasure(principal_id, pseudonym_id))
    assert found is not None
    return cast(PersonalErased, found)


def erase_identity(
    owner: Owner, principal_id: uuid.UUID, pseudonym_id: uuid.UUID
) -> IdentityErased:
    """Re-point every place the person's id names a writer or an actor to the
    pseudonym."""
    found = statements.one(owner, "operator_erase_identity", _erasure(principal_id, pseudonym_id))
    assert found is not None
    return cast(IdentityErased, found)


def erase_invitations(owner: Owner, subject: str) -> int:
    """Delete the subject's pending invitations in every workspace; how many."""
    found = statements.one(owner, "operator_erase_invitations", {"subject": subject})
    return 0 if found is None else int(found["invitations"])


def delete_principal(owner: Owner, principal_id: uuid.UUID) -> None:
    """Delete the person's principal; memberships and context memberships cascade."""
    statements.run(owner, "operator_delete_principal", {"principal_id": principal_id})


def live_agent_keys(owner: Owner) -> list[tuple[str, str]]:
    """(workspace slug, client id) of every live agent key."""
    found = statements.rows(owner, "operator_live_agent_keys")
    return [(row["slug"], row["client_id"]) for row in found]


def retire_agent_key(owner: Owner, client_id: str) -> Retired | None:
    """Revoke a live agent key and end its memberships; ``None``: it was not live."""
    return cast(
        Retired | None, statements.one(owner, "operator_retire_agent_key", {"client_id": client_id})
    )
