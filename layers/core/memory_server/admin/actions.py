"""Workspace administration: one function per admin action, each one transaction.

Every action runs as the runtime role inside the caller's request transaction
(``Database.transaction``), so row-level security checks the admin grant again in
the database (migration 0003 and 0007). Every change takes the workspace's row
lock first (changes of one workspace are serialised, which the last-admin rule
needs) and writes its audit row in the same transaction; a request that changes
nothing writes no audit row.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from psycopg import errors as pg_errors
from psycopg.types.json import Jsonb

from memory_server.admin import models as m
from memory_server.admin.errors import conflict, invalid_field, missing, unknown_identity
from memory_server.admin.identity import AgentClients
from memory_server.data import statements as sql_files
from memory_server.data.pool import Connection, Database
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import AdminError
from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES, grants_from_scopes, sorted_grants
from memory_server.domain.limits import ADMIN_DEADLINE_S
from memory_server.domain.summaries import iso

ADMIN_URI = "memory-admin://"


@contextmanager
def _reading(db: Database, caller: Caller) -> Iterator[Connection]:
    with db.read(caller, Deadline.after(ADMIN_DEADLINE_S)) as tx:
        yield tx.conn


@contextmanager
def _changing(db: Database, caller: Caller) -> Iterator[Connection]:
    with db.write(caller, Deadline.after(ADMIN_DEADLINE_S)) as tx:
        sql_files.run(tx.conn, "admin_lock_workspace", {"workspace_id": caller.workspace_id})
        yield tx.conn


def _record(
    conn: Connection, caller: Caller, operation: str, path: str, details: dict[str, Any]
) -> None:
    sql_files.run(
        conn,
        "admin_record_event",
        {
            "workspace_id": caller.workspace_id,
            "uri": ADMIN_URI + path,
            "operation": operation,
            "principal_id": caller.principal_id,
            "source": "admin-api",
            "request_id": caller.request_id,
            "details": Jsonb(details),
        },
    )


def _require_an_admin(conn: Connection, caller: Caller) -> None:
    found = sql_files.one(conn, "admin_count_admins", {"workspace_id": caller.workspace_id})
    if found is None or found["admins"] == 0:
        # Raising rolls the change back: nobody could administer the workspace after it.
        raise conflict("the workspace must keep at least one member with the admin grant")


def _member(row: dict[str, Any]) -> m.Member:
    return m.Member(
        principal_id=str(row["principal_id"]),
        kind=row["kind"],
        subject=row["subject"],
        handle=row["handle"],
        grants=row["grants"],
        personal_namespace=row["personal_namespace"],
        agent_key=row["agent_key"],
    )


# -- the memory feature ---------------------------------------------------------


def get_memory(db: Database, caller: Caller) -> m.MemoryFeature:
    with _reading(db, caller) as conn:
        row = sql_files.one(conn, "admin_get_memory", {"workspace_id": caller.workspace_id})
    assert row is not None  # the caller was just resolved as a member
    return m.MemoryFeature(enabled=row["memory_enabled"])


def set_memory(db: Database, caller: Caller, body: m.MemoryFeatureIn) -> m.MemoryFeature:
    with _changing(db, caller) as conn:
        current = sql_files.one(conn, "admin_get_memory", {"workspace_id": caller.workspace_id})
        assert current is not None
        if current["memory_enabled"] == body.enabled:
            return m.MemoryFeature(enabled=body.enabled)
        sql_files.run(
            conn,
            "admin_set_memory",
            {"workspace_id": caller.workspace_id, "enabled": body.enabled},
        )
        _record(
            conn,
            caller,
            "memory.enable" if body.enabled else "memory.disable",
            "memory",
            {"enabled": body.enabled},
        )
    return m.MemoryFeature(enabled=body.enabled)


# -- members --------------------------------------------------------------------


def list_members(db: Database, caller: Caller) -> m.MemberList:
    with _reading(db, caller) as conn:
        rows = sql_files.rows(conn, "admin_list_members", {"workspace_id": caller.workspace_id})
    return m.MemberList(members=[_member(row) for row in rows])


def put_member(
    db: Database, caller: Caller, subject: str, body: m.MemberIn
) -> tuple[m.Member, bool]:
    """Add or change a member; returns the member and whether it was added.

    Only an identity the service already knows and that may join this workspace is
    added; admins never create identities (they are global: an operator, or the
    identity's own verified first sign-in, makes them). Every other subject gets the
    same answer, so nothing is learnt about identities outside the workspace.
    """
    ws = caller.workspace_id
    with _changing(db, caller) as conn:
        existing = sql_files.one(conn, "admin_member", {"workspace_id": ws, "subject": subject})
        if existing is not None:
            principal_id, kind = existing["principal_id"], existing["kind"]
        else:
            found = sql_files.one(conn, "admin_principal", {"subject": subject})
            if found is None:
                raise unknown_identity()
            principal_id, kind = found["id"], found["kind"]
        if kind == "person":
            if body.personal_namespace is False:
                raise invalid_field(
                    "personal_namespace",
                    "people_have_one",
                    "people always have a personal namespace",
                )
            personal = True
        elif body.personal_namespace is not None:
            personal = body.personal_namespace
        else:
            personal = bool(existing["personal_namespace"]) if existing is not None else False
        grants = sorted_grants(body.grants)
        if (
            existing is not None
            and existing["grants"] == grants
            and existing["personal_namespace"] == personal
        ):
            return _member(existing), False
        saved = sql_files.one(
            conn,
            "admin_put_member",
            {
                "workspace_id": ws,
                "principal_id": principal_id,
                "grants": grants,
                "personal_namespace": personal,
            },
        )
        assert saved is not None
        _require_an_admin(conn, caller)
        details: dict[str, Any] = {
            "principal_id": str(principal_id),
            "grants": grants,
            "personal_namespace": personal,
        }
        if existing is not None:
            details["previous_grants"] = existing["grants"]
            details["previous_personal_namespace"] = existing["personal_namespace"]
        _record(
            conn,
            caller,
            "member.change" if existing is not None else "member.add",
            f"members/{principal_id}",
            details,
        )
        row = sql_files.one(conn, "admin_member", {"workspace_id": ws, "subject": subject})
    assert row is not None
    return _member(row), existing is None


def remove_member(db: Database, caller: Caller, subject: str) -> m.MemberRemoved:
    ws = caller.workspace_id
    with _changing(db, caller) as conn:
        existing = sql_files.one(conn, "admin_member", {"workspace_id": ws, "subject": subject})
        if existing is None:
            raise missing("member")
        if existing["agent_key"]:
            raise conflict(
                "this member is an agent key: revoke it with DELETE …/admin/agent-keys/"
                f"{subject}, which also deletes its app client"
            )
        sql_files.run(
            conn,
            "admin_remove_member",
            {"workspace_id": ws, "principal_id": existing["principal_id"]},
        )
        _require_an_admin(conn, caller)
        _record(
            conn,
            caller,
            "member.remove",
            f"members/{existing['principal_id']}",
            {"principal_id": str(existing["principal_id"]), "grants": existing["grants"]},
        )
    return m.MemberRemoved(removed=subject)


# -- agent keys -----------------------------------------------------------------


def _agent_key(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "client_id": row["client_id"],
        "name": row["name"],
        "scopes": row["scopes"],
        "grants": row["grants"],
        "personal_namespace": row["personal_namespace"],
        "created_at": iso(row["created_at"]),
        "created_by": row["created_by"],
    }


def list_agent_keys(db: Database, caller: Caller) -> m.AgentKeyList:
    with _reading(db, caller) as conn:
        rows = sql_files.rows(conn, "admin_list_agent_keys", {"workspace_id": caller.workspace_id})
    return m.AgentKeyList(agent_keys=[m.AgentKey(**_agent_key(row)) for row in rows])


def _live_key(conn: Connection, caller: Caller, client_id: str) -> dict[str, Any] | None:
    rows = sql_files.rows(conn, "admin_list_agent_keys", {"workspace_id": caller.workspace_id})
    return next((row for row in rows if row["client_id"] == client_id), None)


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
    with _reading(db, caller) as conn:
        names = sql_files.rows(conn, "admin_list_agent_keys", {"workspace_id": caller.workspace_id})
    if any(row["name"] == body.name for row in names):
        raise conflict(f"a live agent key named {body.name!r} exists in this workspace")
    # Cognito client names allow [\w\s+=,.@-]; the slug and the key name fit.
    client_id, secret = directory.create_agent_client(f"{caller.workspace}.{body.name}", scopes)
    try:
        with _changing(db, caller) as conn:
            try:
                created = sql_files.one(
                    conn,
                    "admin_create_agent_key",
                    {"client_id": client_id, "name": body.name, "scopes": scopes},
                )
            except pg_errors.UniqueViolation:  # the name was taken concurrently
                raise conflict(
                    f"a live agent key named {body.name!r} exists in this workspace"
                ) from None
            assert created is not None
            principal_id = created["principal_id"]
            grants = sorted_grants(grants_from_scopes(scopes))
            sql_files.run(
                conn,
                "admin_put_member",
                {
                    "workspace_id": caller.workspace_id,
                    "principal_id": principal_id,
                    "grants": grants,
                    "personal_namespace": body.personal_namespace,
                },
            )
            _record(
                conn,
                caller,
                "agent_key.create",
                f"agent-keys/{client_id}",
                {"client_id": client_id, "principal_id": str(principal_id), "scopes": scopes},
            )
            row = _live_key(conn, caller, client_id)
    except BaseException:
        directory.delete_agent_client(client_id)
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
    with _reading(db, caller) as conn:
        if _live_key(conn, caller, client_id) is None:
            raise missing("agent key")
    deleted = directory.delete_agent_client(client_id) if directory is not None else False
    with _changing(db, caller) as conn:
        row = sql_files.one(conn, "admin_revoke_agent_key", {"client_id": client_id})
        if row is None or row["principal_id"] is None:
            raise missing("agent key")  # revoked concurrently
        _record(
            conn,
            caller,
            "agent_key.revoke",
            f"agent-keys/{client_id}",
            {"client_id": client_id, "principal_id": str(row["principal_id"])},
        )
    return m.AgentKeyRevoked(revoked=client_id, client_deleted=deleted)


# -- contexts -------------------------------------------------------------------


def list_contexts(db: Database, caller: Caller) -> m.ContextList:
    with _reading(db, caller) as conn:
        registered = sql_files.rows(
            conn, "admin_list_contexts", {"workspace_id": caller.workspace_id}
        )
        usage = sql_files.rows(conn, "admin_context_usage")
    return m.ContextList(
        contexts=[
            m.RegisteredContext(
                context=row["context_key"],
                kind=row["kind"],
                private=row["private"],
                members=list(row["members"]),
            )
            for row in registered
        ],
        in_use=[m.ContextUsage(context=r["context_key"], records=r["records"]) for r in usage],
    )


def put_context(
    db: Database, caller: Caller, context_key: str, body: m.ContextIn
) -> m.RegisteredContext:
    """Register a private channel or a DM with exactly these members."""
    registrable = m.registrable_context(context_key)
    key, kind = registrable.key, registrable.kind
    ws = caller.workspace_id
    with _changing(db, caller) as conn:
        found = sql_files.rows(
            conn, "admin_member_ids", {"workspace_id": ws, "subjects": list(body.members)}
        )
        ids = {row["subject"]: row["id"] for row in found}
        missing = [s for s in body.members if s not in ids]
        if missing:
            raise invalid_field(
                "members", "workspace_members", f"not members of this workspace: {missing}"
            )
        members = [ids[s] for s in body.members]
        before = sql_files.rows(conn, "admin_list_contexts", {"workspace_id": ws})
        previous = next((row for row in before if row["context_key"] == key), None)
        if previous is not None and sorted(previous["members"]) == sorted(body.members):
            return _registered(previous)
        sql_files.run(
            conn,
            "admin_put_context",
            {"workspace_id": ws, "context_key": key, "kind": kind, "members": members},
        )
        _record(
            conn,
            caller,
            "context.register",
            f"contexts/{key}",
            {"context": key, "members": sorted(str(i) for i in members)},
        )
        after = sql_files.rows(conn, "admin_list_contexts", {"workspace_id": ws})
    return _registered(next(row for row in after if row["context_key"] == key))


def _registered(row: dict[str, Any]) -> m.RegisteredContext:
    return m.RegisteredContext(
        context=row["context_key"],
        kind=row["kind"],
        private=row["private"],
        members=list(row["members"]),
    )


def remove_context(db: Database, caller: Caller, context_key: str) -> m.ContextRemoved:
    key = m.registrable_context(context_key).key
    with _changing(db, caller) as conn:
        gone = sql_files.one(
            conn, "admin_remove_context", {"workspace_id": caller.workspace_id, "context_key": key}
        )
        if gone is None:
            raise missing("registered context")
        _record(conn, caller, "context.unregister", f"contexts/{key}", {"context": key})
    return m.ContextRemoved(removed=key)


# -- the audit trail ------------------------------------------------------------

_NIL = uuid.UUID(int=0)


def audit_page(db: Database, caller: Caller, params: m.AuditQuery) -> m.AuditPage:
    """Newest first; ``next_cursor`` continues below the last event shown."""
    with _reading(db, caller) as conn:
        rows = sql_files.rows(
            conn,
            "admin_audit_page",
            {
                "workspace_id": caller.workspace_id,
                "before": int(params.cursor) if params.cursor else None,
                "limit": params.limit + 1,
            },
        )
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
