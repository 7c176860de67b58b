"""Operator commands: what sits above workspaces, run as the owner role.

The one module for every change made outside a tenant's own admin API: ``memoryctl``
(``workspaces``, ``erase``), the migrations function's ``operator`` events, the dev
stack's demo seed, the benchmarks' corpora and the tests' tenants all call these
functions. Creating, listing and deleting workspaces and erasing a person cross
tenants, so they are not routes of the admin API: an operator runs them with the
owner role's database URL (``memoryctl`` locally against ``.dev/endpoint.json``; in
AWS from a bastion or a one-off task with the owner secret, or through the
migrations function).

Rules, the same for every caller:

- Each function runs in one transaction (a savepoint inside the caller's) and
  writes its audit rows in it: in the workspace it changes, with the nil principal
  as actor ("the operator", ``OPERATOR``) and source ``operator``, the operations
  and details the admin API uses (``workspace.create``, ``memory.enable`` /
  ``memory.disable``, ``member.add`` / ``member.change``, ``context.register``,
  ``agent_key.revoke``, ``person.erase``). A workspace's deletion is the exception:
  its audit rows go with it, so the returned report is the record of that one.
- A call that changes nothing writes nothing, so the idempotent forms are safe to
  run on every start (the demo seed runs on every ``make dev``).
- ``create_workspace`` refuses a slug that is taken (and names a first admin);
  ``ensure_workspace`` is the idempotent form (an existing workspace is returned
  unchanged), for seeds and fixtures.
- ``ensure_principal`` creates a principal or returns the existing one unchanged
  (its handle shows in every workspace it belongs to); it refuses a subject that is
  another kind of identity, an agent key, or revoked.
- ``set_membership`` adds or changes a member as the admin API's ``PUT
  …/members/{subject}`` does (people always have a personal namespace; a service
  keeps its own setting unless one is given), without the last-admin rule: the
  operator stands above the workspace's admins, and a workspace made by
  ``ensure_workspace`` has none.
- ``register_context`` registers a private channel or a DM with exactly the given
  members, who must be members of the workspace (as through the admin API). The
  operator may change a private channel's members although it is in none (it holds
  the database, and with it every record, anyway); a DM's participants stay fixed,
  and a DM that holds records of an earlier registration is not registered again
  (:mod:`.rules`). Unregistering and deleting contexts are the admin API's only.
- ``set_membership`` adds a person directly, without an invitation: the operator
  makes a workspace's first admin, seeds and fixtures; an admin invites.

The rules they share with the admin API (memberships, contexts, the memory feature,
the audit rows) are :mod:`.rules`; the statements are :mod:`memory_server.data.operators`
(and :mod:`memory_server.data.admin` where the change is the admin API's own).
"""

from __future__ import annotations

import logging
import re
import secrets
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg

from memory_server.admin import rules
from memory_server.admin.errors import conflict, invalid_field
from memory_server.admin.identity import Directory
from memory_server.admin.models import (
    HANDLE_RULE,
    SUBJECT_PATTERN,
    handle_is_valid,
    registrable_context,
)
from memory_server.admin.rules import OPERATOR as OPERATOR
from memory_server.data import admin as admin_data
from memory_server.data import operators as data
from memory_server.data.operators import Kind as Kind
from memory_server.data.pool import HANDLE_INDEX, HANDLE_TAKEN
from memory_server.domain.errors import AdminError
from memory_server.domain.grants import ALL_GRANTS, lacks_read, sorted_grants
from memory_server.domain.summaries import iso
from memory_server.gateway.events import SLUG_PATTERN

logger = logging.getLogger(__name__)

_SLUG_RULE = "lowercase letters, digits and '-', starting with a letter or digit, ≤ 63"


# -- reports ----------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class WorkspaceCreated(Report):
    id: str
    slug: str
    memory_enabled: bool
    admin_principal_id: str
    admin_subject: str


@dataclass(frozen=True)
class WorkspaceSummary(Report):
    id: str
    slug: str
    memory_enabled: bool
    created_at: str
    members: int
    admins: int
    agent_keys: int
    records: int


@dataclass(frozen=True)
class WorkspaceDeleted(Report):
    slug: str
    records: int
    revisions: int
    members: int
    contexts: int
    audit_events: int
    agent_clients: list[str]
    agent_clients_deleted: list[str]


@dataclass(frozen=True)
class PersonErased(Report):
    pseudonym_id: str
    pseudonym: str
    workspaces: list[str]
    personal_records: int
    personal_revisions: int
    idempotency_keys: int
    audit_paths_redacted: int
    records_pseudonymised: int
    revisions_pseudonymised: int
    audit_events_pseudonymised: int
    agent_keys_pseudonymised: int
    invitations_pseudonymised: int
    memberships_removed: int
    invitations_removed: int
    identity_provider: dict[str, bool] = field(default_factory=dict)


# -- shared steps (each inside the caller's transaction) ----------------------------


def _check_slug(slug: str) -> None:
    if not re.fullmatch(SLUG_PATTERN, slug):
        raise invalid_field("slug", "string_pattern_mismatch", _SLUG_RULE)


def _check_identity(subject: str, handle: str, *, prefix: str = "") -> None:
    if not re.fullmatch(SUBJECT_PATTERN, subject):
        raise invalid_field(
            f"{prefix}subject", "string_pattern_mismatch", "not a subject or client id"
        )
    if not handle_is_valid(handle):
        raise invalid_field(f"{prefix}handle", "printable", HANDLE_RULE)


def _check_grants(grants: Iterable[str]) -> list[str]:
    ordered = sorted_grants(grants)
    unknown = sorted(set(ordered) - set(ALL_GRANTS))
    if unknown:
        raise invalid_field(
            "grants", "known_grants", f"unknown grants {unknown}; one of {ALL_GRANTS}"
        )
    if lacks_read(ordered):
        raise invalid_field("grants", "value_error", "writing needs reading: add 'read'")
    return ordered


def _lock_workspace(owner: psycopg.Connection[Any], workspace_id: uuid.UUID) -> bool:
    """The workspace's row lock: changes of one workspace are serialised, as through
    the admin API. Whether its memory feature is on."""
    enabled = admin_data.lock_workspace(owner, workspace_id).get()
    if enabled is None:
        raise AdminError(404, "not_found", f"no workspace with id {workspace_id}")
    return enabled


def _new_workspace(
    owner: psycopg.Connection[Any], slug: str, memory_enabled: bool
) -> uuid.UUID | None:
    """Create the workspace and audit it; None when the slug is taken."""
    made = data.create_workspace(owner, slug, memory_enabled)
    if made is None:
        return None
    event = rules.workspace_created(slug, memory_enabled)
    admin_data.record_event(owner, made["id"], rules.by_operator(), event)
    return made["id"]


def _principal(owner: psycopg.Connection[Any], kind: Kind, subject: str, handle: str) -> uuid.UUID:
    found = data.principal(owner, kind, subject, handle)
    if found["kind"] != kind or found["workspace_id"] is not None or found["revoked_at"]:
        raise conflict("that subject is another kind of identity, an agent key or revoked")
    return found["id"]


def _put_member(
    owner: psycopg.Connection[Any],
    workspace_id: uuid.UUID,
    principal_id: uuid.UUID,
    grants: list[str],
    personal_namespace: bool | None,
) -> bool:
    """Add or change a member (the workspace is locked); False when already so."""
    row = data.membership(owner, workspace_id, principal_id)
    if row is None:
        raise invalid_field("principal_id", "known_principal", "no such principal")
    if row["revoked_at"] is not None or row["workspace_id"] not in (None, workspace_id):
        raise conflict("a revoked agent key, or one bound to another workspace")
    previous = None
    if row["grants"] is not None:
        previous = rules.Membership(row["grants"], bool(row["personal_namespace"]))
    return rules.put_member(
        owner,
        workspace_id,
        rules.by_operator(),
        principal_id,
        row["kind"],
        previous=previous,
        grants=grants,
        personal_namespace=personal_namespace,
    )


# -- workspaces -------------------------------------------------------------------


def create_workspace(
    owner: psycopg.Connection[Any],
    slug: str,
    *,
    admin_subject: str,
    admin_handle: str,
    admin_kind: Kind = "person",
    memory_enabled: bool = False,
) -> WorkspaceCreated:
    """A new workspace with its first admin (all grants). The slug must be free."""
    _check_slug(slug)
    _check_identity(admin_subject, admin_handle, prefix="admin_")
    with owner.transaction():
        made = _new_workspace(owner, slug, memory_enabled)
        if made is None:
            raise conflict(f"a workspace {slug!r} exists")
        admin = _principal(owner, admin_kind, admin_subject, admin_handle)
        _lock_workspace(owner, made)
        _put_member(owner, made, admin, _check_grants(ALL_GRANTS), None)
    return WorkspaceCreated(
        id=str(made),
        slug=slug,
        memory_enabled=memory_enabled,
        admin_principal_id=str(admin),
        admin_subject=admin_subject,
    )


def ensure_workspace(
    owner: psycopg.Connection[Any], slug: str, *, memory_enabled: bool = False
) -> uuid.UUID:
    """The workspace's id, created (without members) when missing. An existing one is
    left as it is, its memory feature included: ``set_memory_enabled`` changes that."""
    _check_slug(slug)
    with owner.transaction():
        made = _new_workspace(owner, slug, memory_enabled)
        return made if made is not None else workspace_id(owner, slug)


def workspace_id(owner: psycopg.Connection[Any], slug: str) -> uuid.UUID:
    """The id of the workspace ``slug`` (404 when there is none)."""
    found = data.find_workspace(owner, slug)
    if found is None:
        raise AdminError(404, "not_found", f"no workspace {slug!r}")
    return found


def set_memory_enabled(
    owner: psycopg.Connection[Any], workspace_id: uuid.UUID, enabled: bool
) -> bool:
    """Turn the workspace's memory feature on or off; False when it already was."""
    with owner.transaction():
        current = _lock_workspace(owner, workspace_id)
        return rules.set_memory(owner, workspace_id, rules.by_operator(), current, enabled)


def list_workspaces(owner: psycopg.Connection[Any]) -> list[WorkspaceSummary]:
    with owner.transaction():
        found = data.list_workspaces(owner)
    return [
        WorkspaceSummary(
            id=str(row["id"]),
            slug=row["slug"],
            memory_enabled=row["memory_enabled"],
            created_at=iso(row["created_at"]),
            members=row["members"],
            admins=row["admins"],
            agent_keys=row["agent_keys"],
            records=row["records"],
        )
        for row in found
    ]


def delete_workspace(
    owner: psycopg.Connection[Any], slug: str, *, directory: Directory | None = None
) -> WorkspaceDeleted:
    """Delete a workspace and all of its data; then its agent keys' app clients.

    The database goes first: once it commits, no token reaches the workspace (no
    membership is left), so an app client that fails to delete afterwards is inert
    and is listed as not deleted for the operator to remove.
    """
    with owner.transaction():
        found = data.doomed_workspace(owner, slug)
        if found is None:
            raise AdminError(404, "not_found", f"no workspace {slug!r}")
        data.delete_workspace(owner, found["id"])
    deleted: list[str] = []
    if directory is not None:
        for client_id in found["agent_clients"]:
            try:
                directory.delete_app_client(client_id)
            except Exception:  # reported as not deleted; it never undoes the delete
                logger.warning("app client %s not deleted", client_id, exc_info=True)
                continue
            deleted.append(client_id)
    return WorkspaceDeleted(
        slug=slug,
        records=found["records"],
        revisions=found["revisions"],
        members=found["members"],
        contexts=found["contexts"],
        audit_events=found["audit_events"],
        agent_clients=list(found["agent_clients"]),
        agent_clients_deleted=deleted,
    )


# -- principals, members and contexts ----------------------------------------------


def ensure_principal(
    owner: psycopg.Connection[Any], kind: Kind, subject: str, handle: str
) -> uuid.UUID:
    """The principal for ``subject``, created when missing (an existing one is not
    changed). Not audited by itself: a principal belongs to no workspace until it is
    made a member, which is audited there."""
    _check_identity(subject, handle)
    with owner.transaction():
        return _principal(owner, kind, subject, handle)


def rename_principal(owner: psycopg.Connection[Any], subject: str, handle: str) -> uuid.UUID:
    """A new handle for an identity (a person or an agent key), in every workspace it is
    in: refused where another member holds it as the uniqueness rule compares handles
    (infra/schema/25_handles.sql). The way out of a duplicate an upgrade flagged: the
    flag goes from both members once their handles differ. Not audited: the audit rows
    name principals by id, never by handle."""
    _check_identity(subject, handle)
    try:
        with owner.transaction():
            renamed = data.rename_principal(owner, subject, handle)
    except psycopg.errors.UniqueViolation as error:
        if error.diag.constraint_name != HANDLE_INDEX:
            raise
        raise conflict(HANDLE_TAKEN) from None
    if renamed is None:
        raise invalid_field("subject", "known_identity", "no identity with this subject")
    return renamed


def set_membership(
    owner: psycopg.Connection[Any],
    workspace_id: uuid.UUID,
    principal_id: uuid.UUID,
    grants: Iterable[str],
    *,
    personal_namespace: bool | None = None,
) -> bool:
    """Add a member or change its grants (the grants given replace the old ones).

    People always have a personal namespace; a service has one only when
    ``personal_namespace=True`` (unchanged when ``None`` and already a member).
    Returns whether anything changed.
    """
    ordered = _check_grants(grants)
    try:
        with owner.transaction():
            _lock_workspace(owner, workspace_id)
            return _put_member(owner, workspace_id, principal_id, ordered, personal_namespace)
    except psycopg.errors.UniqueViolation as error:
        if error.diag.constraint_name != HANDLE_INDEX:
            raise
        raise conflict(HANDLE_TAKEN) from None


def member_ids(
    owner: psycopg.Connection[Any], workspace_id: uuid.UUID, subjects: Iterable[str]
) -> list[uuid.UUID]:
    """Principal ids of members named by subject, in the order given."""
    wanted = list(subjects)
    return rules.member_ids(wanted, admin_data.member_ids(owner, workspace_id, wanted).get())


def register_context(
    owner: psycopg.Connection[Any],
    workspace_id: uuid.UUID,
    context_key: str,
    members: Iterable[uuid.UUID],
) -> bool:
    """Register a private channel or a DM with exactly these members (principal ids,
    members of the workspace), or change a private channel's members (the operator
    stands above the members rule; a DM's participants stay fixed: :mod:`.rules`).
    Returns whether anything changed."""
    context = registrable_context(context_key)
    ids = list(dict.fromkeys(members))  # each once, in the order given
    with owner.transaction():
        _lock_workspace(owner, workspace_id)
        strangers = data.non_members(owner, workspace_id, ids)
        if strangers:
            raise rules.not_members([str(i) for i in strangers])
        before = admin_data.context(owner, workspace_id, context.key).get()
        held = data.context_holds_records(owner, workspace_id, context.key)
        now = rules.ContextNow.for_operator(before, held)
        event = rules.context_change(context, now, ids, by_operator=True)
        if event is None:
            return False
        data.put_context(owner, workspace_id, context.key, context.kind, ids)
        admin_data.record_event(owner, workspace_id, rules.by_operator(), event)
        return True


# -- erasure and agent keys --------------------------------------------------------


def erase_person(
    owner: psycopg.Connection[Any], subject: str, *, directory: Directory | None = None
) -> PersonErased:
    """Erase a person: personal records and revisions purged, identity pseudonymised.

    In one transaction: the person's personal namespace is purged in every
    workspace (records, revisions, search documents, idempotency keys, paths in
    audit rows), their pending invitations are deleted, every place their id names a
    writer or actor is re-pointed to a new
    pseudonym principal (``erased:…``, handle ``erased-…``), and their principal row
    is deleted with its memberships, so ``resolve_caller`` finds nothing for any
    token they hold. Then, if a user pool is given, their sessions are signed out
    and the user disabled. Shared records they wrote stay, attributed to the
    pseudonym.
    """
    with owner.transaction():
        person = data.person(owner, subject)
        if person is None:
            raise AdminError(404, "not_found", "no person with that subject")
        # Their changes in flight finish first (and are purged below); changes that
        # start now wait, then find no membership (memory.lock_membership).
        data.lock_person(owner, person["id"])
        tag = secrets.token_hex(4)
        pseudonym = data.create_pseudonym(owner, f"erased:{uuid.uuid4()}", f"erased-{tag}")
        personal = data.erase_personal(owner, person["id"], pseudonym)
        identity = data.erase_identity(owner, person["id"], pseudonym)
        invitations = data.erase_invitations(owner, subject)
        data.delete_principal(owner, person["id"])
        for workspace in person["workspace_ids"]:
            event = rules.person_erased(pseudonym)
            admin_data.record_event(owner, workspace, rules.by_operator(), event)
    outcome = directory.sign_out_and_disable(subject) if directory is not None else {}
    return PersonErased(
        pseudonym_id=str(pseudonym),
        pseudonym=f"erased-{tag}",
        workspaces=list(person["workspaces"]),
        memberships_removed=len(person["workspace_ids"]),
        invitations_removed=invitations,
        identity_provider=outcome,
        **personal,
        **identity,
    )


def live_agent_keys(owner: psycopg.Connection[Any]) -> list[tuple[str, str]]:
    """(workspace slug, client id) of every live agent key."""
    with owner.transaction():
        return data.live_agent_keys(owner)


def retire_agent_key(owner: psycopg.Connection[Any], client_id: str, reason: str) -> bool:
    """Revoke a key whose app client no longer exists; False if it was not live."""
    with owner.transaction():
        retired = data.retire_agent_key(owner, client_id)
        if retired is None:
            return False
        event = rules.agent_key_revoked(client_id, retired["id"], reason=reason)
        admin_data.record_event(owner, retired["workspace_id"], rules.by_operator(), event)
    return True
