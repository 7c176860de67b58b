"""Workspace administration: one function per admin action, each one transaction.

Every action runs as the runtime role inside the caller's request transaction
(``Database.read`` or ``Database.write``), so row-level security checks the admin grant
again in the database (``infra/schema/10_visibility.sql``; the functions of
``70_admin.sql`` check it themselves). Every change takes the workspace's row
lock first (changes of one workspace are serialised, which the last-admin rule
needs) and writes its audit row in the same transaction; a request that changes
nothing writes no audit row. The rules a change follows, and its audit row, are the
operator path's too (:mod:`.rules`); the statements are :mod:`memory_server.data.admin`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from psycopg import errors as pg_errors

from memory_server.admin import models as m
from memory_server.admin import rules
from memory_server.admin.errors import conflict, invalid_field, missing, not_a_member
from memory_server.admin.identity import AgentClients
from memory_server.data import admin as data
from memory_server.data.admin import AgentKeyRow, ContextRow, InvitationRow, MemberRow
from memory_server.data.pool import Database, Transaction
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import AdminError, ToolError, no_such_workspace
from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES, grants_from_scopes, sorted_grants
from memory_server.domain.limits import (
    ADMIN_DEADLINE_S,
    ADMIN_INVITATION_TTL_S,
    ADMIN_INVITATIONS_MAX,
)
from memory_server.domain.summaries import iso
from memory_server.gateway.events import TokenIdentity


@contextmanager
def _reading(db: Database, caller: Caller) -> Iterator[Transaction]:
    with db.read(caller, Deadline.after(ADMIN_DEADLINE_S)) as tx:
        yield tx


@contextmanager
def _changing(db: Database, caller: Caller) -> Iterator[Transaction]:
    with db.write(caller, Deadline.after(ADMIN_DEADLINE_S)) as tx:
        data.lock_workspace(tx, caller.workspace_id)
        yield tx


@contextmanager
def _unique_handle() -> Iterator[None]:
    """A handle another member holds (the database's rule, 25_handles.sql) is the
    admin API's 409 conflict, with the rule's own message."""
    try:
        yield
    except ToolError as error:
        if error.code != "already_exists":
            raise
        raise conflict(error.message) from None


def _require_an_admin(tx: Transaction, caller: Caller) -> None:
    if data.count_admins(tx, caller.workspace_id).get() == 0:
        # Raising rolls the change back: nobody could administer the workspace after it.
        raise conflict("the workspace must keep at least one member with the admin grant")


def _member(row: MemberRow) -> m.Member:
    return m.Member(
        principal_id=str(row["principal_id"]),
        kind=row["kind"],
        subject=row["subject"],
        handle=row["handle"],
        grants=row["grants"],
        personal_namespace=row["personal_namespace"],
        agent_key=row["agent_key"],
        handle_conflict=row["handle_conflict"],
    )


# -- the memory feature ---------------------------------------------------------


def get_memory(db: Database, caller: Caller) -> m.MemoryFeature:
    with _reading(db, caller) as tx:
        enabled = data.memory_enabled(tx, caller.workspace_id)
    return m.MemoryFeature(enabled=enabled.get())


def set_memory(db: Database, caller: Caller, body: m.MemoryFeatureIn) -> m.MemoryFeature:
    ws = caller.workspace_id
    with _changing(db, caller) as tx:
        enabled = data.memory_enabled(tx, ws).get()
        rules.set_memory(tx, ws, rules.by_admin(caller), enabled, body.enabled)
    return m.MemoryFeature(enabled=body.enabled)


# -- members --------------------------------------------------------------------


def list_members(db: Database, caller: Caller) -> m.MemberList:
    with _reading(db, caller) as tx:
        found = data.list_members(tx, caller.workspace_id)
    return m.MemberList(members=[_member(row) for row in found.get()])


def put_member(
    db: Database, caller: Caller, subject: str, body: m.MemberIn
) -> tuple[m.Member, bool]:
    """Change a member; returns the member and whether it was added.

    Only this workspace's own agent key is added here (as when it was made). Anyone
    else joins by accepting an invitation (:func:`invite`): every other subject that
    is no member (unknown, another workspace's, a person known to the service) gets
    the same answer, so nothing is learnt about identities outside the workspace.
    """
    ws = caller.workspace_id
    with _changing(db, caller) as tx:
        existing = data.member(tx, ws, subject).get()
        if existing is not None:
            principal_id, kind = existing["principal_id"], existing["kind"]
            previous = rules.Membership(existing["grants"], existing["personal_namespace"])
        else:
            found = data.joinable_principal(tx, subject).get()
            if found is None:
                raise not_a_member()
            principal_id, kind, previous = found["id"], found["kind"], None
        changed = rules.put_member(
            tx,
            ws,
            rules.by_admin(caller),
            principal_id,
            kind,
            previous=previous,
            grants=sorted_grants(body.grants),
            personal_namespace=body.personal_namespace,
        )
        if not changed:
            assert existing is not None  # joining always changes something
            return _member(existing), False
        _require_an_admin(tx, caller)
        row = data.member(tx, ws, subject)
    saved = row.get()
    assert saved is not None
    return _member(saved), existing is None


def remove_member(db: Database, caller: Caller, subject: str) -> m.MemberRemoved:
    ws = caller.workspace_id
    with _changing(db, caller) as tx:
        existing = data.member(tx, ws, subject).get()
        if existing is None:
            raise missing("member")
        if existing["agent_key"]:
            raise conflict(
                "this member is an agent key: revoke it with DELETE …/admin/agent-keys/"
                f"{subject}, which also deletes its app client"
            )
        principal_id = existing["principal_id"]
        data.remove_member(tx, ws, principal_id)
        _require_an_admin(tx, caller)
        event = rules.member_removed(principal_id, existing["grants"])
        data.record_event(tx, ws, rules.by_admin(caller), event)
    return m.MemberRemoved(removed=subject)


# -- agent keys -----------------------------------------------------------------


def _agent_key(row: AgentKeyRow) -> dict[str, Any]:
    return {
        "client_id": row["client_id"],
        "name": row["name"],
        "scopes": row["scopes"],
        "grants": row["grants"],
        "personal_namespace": row["personal_namespace"],
        "created_at": iso(row["created_at"]),
        "created_by": row["created_by"],
        "created_by_kind": row["created_by_kind"],
    }


def list_agent_keys(db: Database, caller: Caller) -> m.AgentKeyList:
    with _reading(db, caller) as tx:
        found = data.list_agent_keys(tx, caller.workspace_id)
    return m.AgentKeyList(agent_keys=[m.AgentKey(**_agent_key(row)) for row in found.get()])


def _live_key(keys: list[AgentKeyRow], client_id: str) -> AgentKeyRow | None:
    return next((row for row in keys if row["client_id"] == client_id), None)


def create_agent_key(
    db: Database, caller: Caller, directory: AgentClients | None, body: m.AgentKeyIn
) -> m.AgentKeyCreated:
    """A client-credentials app client bound to this workspace; the secret once.

    Its scopes must be within the creating admin's effective grants: no admin mints a
    key that may do more than the admin's own token and membership allow. The app
    client is created first (its id is the principal's subject); if the database part
    fails, the app client is deleted again, so no key exists that the service does not
    know about.
    """
    wanted = grants_from_scopes(body.scopes)
    beyond = [GRANT_SCOPES[g] for g in ALL_GRANTS if g in wanted and g not in caller.grants]
    if beyond:
        raise AdminError(
            403,
            "permission_denied",
            f"a key cannot have scopes beyond your own grants: {' '.join(beyond)}",
        )
    if directory is None:
        raise AdminError(
            503, "not_configured", "agent keys need the management function (MANAGEMENT_FUNCTION)"
        )
    scopes = [GRANT_SCOPES[g] for g in ALL_GRANTS if g in wanted]  # canonical order
    with _reading(db, caller) as tx:
        keys = data.list_agent_keys(tx, caller.workspace_id)
    if any(row["name"] == body.name for row in keys.get()):
        raise conflict(f"a live agent key named {body.name!r} exists in this workspace")
    # The management function names it {workspace}.{name} (Cognito client names allow
    # [\w\s+=,.@-]; the slug and the key name fit).
    client_id, secret = directory.create_agent_client(
        caller.workspace, body.name, scopes, str(caller.principal_id)
    )
    try:
        with _unique_handle(), _changing(db, caller) as tx:
            try:
                principal_id = data.create_agent_key(tx, client_id, body.name, scopes).get()
            except pg_errors.UniqueViolation:  # the name was taken concurrently
                raise conflict(
                    f"a live agent key named {body.name!r} exists in this workspace"
                ) from None
            grants = sorted_grants(grants_from_scopes(scopes))
            data.add_member(tx, caller.workspace_id, principal_id, grants, body.personal_namespace)
            event = rules.agent_key_created(client_id, principal_id, scopes)
            data.record_event(tx, caller.workspace_id, rules.by_admin(caller), event)
            keys = data.list_agent_keys(tx, caller.workspace_id)
        row = _live_key(keys.get(), client_id)
    except BaseException:
        directory.delete_agent_client(caller.workspace, client_id)
        raise
    assert row is not None
    return m.AgentKeyCreated(**_agent_key(row), client_secret=secret)


def revoke_agent_key(
    db: Database, caller: Caller, directory: AgentClients | None, client_id: str
) -> m.AgentKeyRevoked:
    """Delete the app client, then end the key's membership.

    Only a live key of this workspace is touched (checked first, so no admin can
    delete another workspace's app client). The app client goes first: if the
    database part then fails, a retry finds the key still live and finishes. Tokens
    already issued stop working as soon as the membership is gone, because every
    request resolves the caller's membership afresh.
    """
    with _reading(db, caller) as tx:
        keys = data.list_agent_keys(tx, caller.workspace_id)
    if _live_key(keys.get(), client_id) is None:
        raise missing("agent key")
    deleted = (
        directory.delete_agent_client(caller.workspace, client_id)
        if directory is not None
        else False
    )
    with _changing(db, caller) as tx:
        principal_id = data.revoke_agent_key(tx, client_id).get()
        if principal_id is None:
            raise missing("agent key")  # revoked concurrently
        event = rules.agent_key_revoked(client_id, principal_id)
        data.record_event(tx, caller.workspace_id, rules.by_admin(caller), event)
    return m.AgentKeyRevoked(revoked=client_id, client_deleted=deleted)


# -- contexts -------------------------------------------------------------------


def _registered(row: ContextRow) -> m.RegisteredContext:
    return m.RegisteredContext(
        context=row["context_key"],
        kind=row["kind"],
        private=row["private"],
        # Who is in a private context is its members' business.
        members=list(row["members"]) if row["caller_in_it"] else None,
    )


def list_contexts(db: Database, caller: Caller) -> m.ContextList:
    with _reading(db, caller) as tx:
        registered = data.list_contexts(tx, caller.workspace_id, caller.principal_id)
        usage = data.context_usage(tx)
    return m.ContextList(
        contexts=[_registered(row) for row in registered.get()],
        in_use=[
            m.ContextUsage(context=r["context_key"], records=r["records"]) for r in usage.get()
        ],
    )


def put_context(
    db: Database, caller: Caller, context_key: str, body: m.ContextIn
) -> m.RegisteredContext:
    """Register a private channel or a DM with exactly these members, or change a
    private channel's members: only its own members may (:mod:`.rules`; the database
    checks again, ``memory.admin_register_context``)."""
    context = m.registrable_context(context_key)
    ws = caller.workspace_id
    with _changing(db, caller) as tx:
        found = data.member_ids(tx, ws, list(body.members))
        state = data.context_state(tx, context.key)
        before = data.context(tx, ws, context.key, caller.principal_id)
        members = rules.member_ids(body.members, found.get())
        now = rules.ContextNow.for_admin(state.get(), before.get())
        event = rules.context_change(context, now, members)
        if event is None:
            previous = before.get()
            assert previous is not None  # unchanged: it is registered
            return _registered(previous)
        data.register_context(tx, context.key, members)
        data.record_event(tx, ws, rules.by_admin(caller), event)
        after = data.context(tx, ws, context.key, caller.principal_id)
    registered = after.get()
    assert registered is not None
    return _registered(registered)


def remove_context(db: Database, caller: Caller, context_key: str) -> m.ContextRemoved:
    """Unregister a context: a private one only by its members, and only while it
    holds no records."""
    key = m.registrable_context(context_key).key
    with _changing(db, caller) as tx:
        state = data.context_state(tx, key).get()
        event = rules.context_unregistration(key, rules.ContextNow.for_admin(state, None))
        removed = data.remove_context(tx, key)
        data.record_event(tx, caller.workspace_id, rules.by_admin(caller), event)
    assert removed.get()  # the rules found it registered, under the workspace's lock
    return m.ContextRemoved(removed=key)


def delete_context(db: Database, caller: Caller, context_key: str) -> m.ContextDeleted:
    """Delete a private channel or a DM wholesale, whether the admin is in it or not,
    without reading it: every record of it and its threads deleted as ``memory_delete``
    deletes (revision bodies purged, audited by id), its members removed; it stays
    registered and nobody's."""
    context = m.registrable_context(context_key)
    with _changing(db, caller) as tx:
        state = data.context_state(tx, context.key).get()
        rules.context_deletion(context, rules.ContextNow.for_admin(state, None))
        purged = data.delete_context(tx, context.key, caller.request_id).get()
        assert purged is not None  # the rules found it private, or a DM
        event = rules.context_deleted(context.key, purged["records_deleted"])
        data.record_event(tx, caller.workspace_id, rules.by_admin(caller), event)
    return m.ContextDeleted(
        deleted=context.key,
        records=purged["records_deleted"],
        revisions_purged=purged["revisions_purged"],
    )


# -- invitations ----------------------------------------------------------------


def _invitation(caller: Caller, row: InvitationRow) -> m.Invitation:
    return m.Invitation(
        id=str(row["id"]),
        subject=row["subject"],
        grants=row["grants"],
        personal_namespace=row["personal_namespace"],
        invited_by=row["invited_by"],
        invited_by_kind=row["invited_by_kind"],
        created_at=iso(row["created_at"]),
        expires_at=iso(row["expires_at"]),
        accept=f"/w/{caller.workspace}/admin/invitations/{row['id']}/accept",
    )


def invite(db: Database, caller: Caller, body: m.InvitationIn) -> m.Invitation:
    """Invite a subject; it becomes a member only when it accepts with its own token.

    The same statements run and the same answer comes for every subject that is no
    member, whether the service knows it, another workspace holds it or nobody does,
    so the admin API is no identity oracle. A pending invitation grants nothing.
    """
    ws = caller.workspace_id
    with _changing(db, caller) as tx:
        if data.member(tx, ws, body.subject).get() is not None:
            raise rules.already_a_member()
        made = data.invite(
            tx,
            body.subject,
            sorted_grants(body.grants),
            body.personal_namespace,
            ttl_s=ADMIN_INVITATION_TTL_S,
            max_pending=ADMIN_INVITATIONS_MAX,
        ).get()
        if made is None:
            raise conflict(
                f"this workspace holds {ADMIN_INVITATIONS_MAX} pending invitations: "
                "withdraw some first (DELETE …/invitations/{id})"
            )
        event = rules.invitation_created(made["id"], made["grants"], made["personal_namespace"])
        data.record_event(tx, ws, rules.by_admin(caller), event)
    return _invitation(caller, made)


def list_invitations(db: Database, caller: Caller) -> m.InvitationList:
    with _reading(db, caller) as tx:
        found = data.invitations(tx)
    return m.InvitationList(invitations=[_invitation(caller, row) for row in found.get()])


def revoke_invitation(
    db: Database, caller: Caller, invitation_id: uuid.UUID
) -> m.InvitationRevoked:
    with _changing(db, caller) as tx:
        if not data.revoke_invitation(tx, invitation_id).get():
            raise missing("invitation")
        event = rules.invitation_revoked(invitation_id)
        data.record_event(tx, caller.workspace_id, rules.by_admin(caller), event)
    return m.InvitationRevoked(revoked=str(invitation_id))


def accept_invitation(
    db: Database,
    identity: TokenIdentity,
    workspace: str,
    invitation_id: uuid.UUID,
    body: m.AcceptIn,
    request_id: str | None,
) -> m.Member:
    """The invitee accepts with its own token (a person's, or a service's: its subject
    is its client id). Anything it may not accept (no such workspace, no invitation of
    its own with that id, expired, an identity that may not join) is the one empty 404
    of a workspace it is not a member of."""
    with _unique_handle():
        accepted = data.accept_invitation(
            db,
            Deadline.after(ADMIN_DEADLINE_S),
            workspace=workspace,
            invitation_id=invitation_id,
            subject=identity.subject,
            person=identity.client_id != identity.subject,
            handle=body.handle,
            request_id=request_id,
        )
    if accepted is None:
        raise no_such_workspace()
    if accepted["outcome"] == "handle_required":
        raise invalid_field(
            "handle",
            "required_for_a_new_identity",
            f"you are new to this service: name your handle ({m.HANDLE_RULE})",
        )
    assert accepted["principal_id"] is not None and accepted["kind"] is not None
    return m.Member(
        principal_id=str(accepted["principal_id"]),
        kind=accepted["kind"],
        subject=identity.subject,
        handle=accepted["handle"] or "",
        grants=accepted["grants"] or [],
        personal_namespace=bool(accepted["personal_namespace"]),
        agent_key=False,
    )


# -- the audit trail ------------------------------------------------------------

_NIL = uuid.UUID(int=0)


def audit_page(db: Database, caller: Caller, params: m.AuditQuery) -> m.AuditPage:
    """Newest first; ``next_cursor`` continues below the last event shown."""
    before = int(params.cursor) if params.cursor else None
    with _reading(db, caller) as tx:
        page = data.audit_page(tx, caller.workspace_id, before=before, limit=params.limit + 1)
    rows = page.get()
    events = [
        m.AuditEvent(
            id=row["id"],
            time=iso(row["occurred_at"]),
            operation=row["operation"],
            uri=row["uri"],
            record_id=None if row["memory_id"] == _NIL else str(row["memory_id"]),
            revision=row["revision"],
            actor=str(row["writer_id"]),
            actor_handle=row["writer"],
            actor_kind=row["writer_kind"],
            source=row["source"],
            request_id=row["request_id"],
            details=_details(row["details"]),
            published=row["published"],
        )
        for row in rows[: params.limit]
    ]
    more = len(rows) > params.limit
    return m.AuditPage(events=events, next_cursor=str(events[-1].id) if more else None)


def _details(value: Any) -> dict[str, object] | None:
    if value is None:
        return None
    return dict(value) if isinstance(value, dict) else dict(json.loads(value))
