"""Operator commands: what sits above workspaces, run as the owner role.

Creating, listing and deleting workspaces and erasing a person are not things a
workspace admin may do (they cross tenants), so they are not routes of the admin
API: an operator runs them with the owner role's database URL (``memoryctl``
locally against ``.dev/endpoint.json``; in AWS from a bastion or a one-off task
with the owner secret). Each runs in one transaction and says what it did. Each
change is audited in the workspaces it touches, with the nil principal as actor
("the operator"), except a workspace's deletion, whose audit rows go with it:
the returned report is the record of that one.
"""

from __future__ import annotations

import logging
import re
import secrets
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from ..errors import AdminError
from ..gateway_events import SLUG_PATTERN
from ..grants import ALL_GRANTS, sorted_grants
from ..records import iso
from ..sql_files import query
from .errors import conflict, invalid_field
from .identity import Directory
from .models import SUBJECT_PATTERN

logger = logging.getLogger(__name__)

OPERATOR = uuid.UUID(int=0)  # the actor of operator changes in audit rows
_SLUG_RULE = "lowercase letters, digits and '-', starting with a letter or digit, ≤ 63"


def _dicts(conn: psycopg.Connection[Any]) -> psycopg.Cursor[dict[str, Any]]:
    return conn.cursor(row_factory=dict_row)


def _audit(
    conn: psycopg.Connection[Any],
    workspace_id: uuid.UUID,
    operation: str,
    path: str,
    details: dict[str, Any],
) -> None:
    conn.execute(
        query("admin_record_event"),
        {
            "workspace_id": workspace_id,
            "uri": "memory-admin://" + path,
            "operation": operation,
            "principal_id": OPERATOR,
            "source": "operator",
            "request_id": f"operator-{uuid.uuid4()}",
            "details": Jsonb(details),
        },
    )


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
    memberships_removed: int
    identity_provider: dict[str, bool] = field(default_factory=dict)


def create_workspace(
    owner: psycopg.Connection[Any],
    slug: str,
    *,
    admin_subject: str,
    admin_handle: str,
    admin_kind: Literal["person", "service"] = "person",
    memory_enabled: bool = False,
) -> WorkspaceCreated:
    """A new workspace with its first admin (all grants). The slug must be free."""
    if not re.match(SLUG_PATTERN, slug):
        raise invalid_field("slug", "string_pattern_mismatch", _SLUG_RULE)
    if not re.match(SUBJECT_PATTERN, admin_subject):
        raise invalid_field(
            "admin_subject", "string_pattern_mismatch", "not a subject or client id"
        )
    if not 1 <= len(admin_handle) <= 64 or not admin_handle.isprintable():
        raise invalid_field("admin_handle", "printable", "1–64 printable characters")
    with owner.transaction():
        cur = _dicts(owner)
        made = cur.execute(
            query("operator_create_workspace"), {"slug": slug, "memory_enabled": memory_enabled}
        ).fetchone()
        if made is None:
            raise conflict(f"a workspace {slug!r} exists")
        found = cur.execute(
            query("operator_principal"),
            {"kind": admin_kind, "subject": admin_subject, "handle": admin_handle},
        ).fetchone()
        assert found is not None
        if found["kind"] != admin_kind or found["workspace_id"] is not None or found["revoked_at"]:
            raise conflict("that subject is another kind of identity or an agent key")
        grants = sorted_grants(ALL_GRANTS)
        owner.execute(
            query("admin_put_member"),
            {
                "workspace_id": made["id"],
                "principal_id": found["id"],
                "grants": grants,
                "personal_namespace": admin_kind == "person",
            },
        )
        _audit(owner, made["id"], "workspace.create", "workspace", {"slug": slug})
        _audit(
            owner,
            made["id"],
            "member.add",
            f"members/{found['id']}",
            {"principal_id": str(found["id"]), "grants": grants},
        )
    return WorkspaceCreated(
        id=str(made["id"]),
        slug=slug,
        memory_enabled=memory_enabled,
        admin_principal_id=str(found["id"]),
        admin_subject=admin_subject,
    )


def list_workspaces(owner: psycopg.Connection[Any]) -> list[WorkspaceSummary]:
    with owner.transaction():
        rows = _dicts(owner).execute(query("operator_list_workspaces")).fetchall()
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
        for row in rows
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
        found = _dicts(owner).execute(query("operator_workspace"), {"slug": slug}).fetchone()
        if found is None:
            raise AdminError(404, "not_found", f"no workspace {slug!r}")
        owner.execute(query("operator_delete_workspace"), {"workspace_id": found["id"]})
    deleted: list[str] = []
    if directory is not None:
        for client_id in found["agent_clients"]:
            try:
                directory.delete_agent_client(client_id)
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


def erase_person(
    owner: psycopg.Connection[Any], subject: str, *, directory: Directory | None = None
) -> PersonErased:
    """Erase a person: personal records and revisions purged, identity pseudonymised.

    In one transaction: the person's personal namespace is purged in every
    workspace (records, revisions, search documents, idempotency keys, paths in
    audit rows), every place their id names a writer or actor is re-pointed to a new
    pseudonym principal (``erased:…``, handle ``erased-…``), and their principal row
    is deleted with its memberships, so ``resolve_caller`` finds nothing for any
    token they hold. Then, if a user pool is given, their sessions are signed out
    and the user disabled. Shared records they wrote stay, attributed to the
    pseudonym.
    """
    with owner.transaction():
        cur = _dicts(owner)
        person = cur.execute(query("operator_person"), {"subject": subject}).fetchone()
        if person is None:
            raise AdminError(404, "not_found", "no person with that subject")
        tag = secrets.token_hex(4)
        pseudonym = cur.execute(
            query("operator_create_pseudonym"),
            {"subject": f"erased:{uuid.uuid4()}", "handle": f"erased-{tag}"},
        ).fetchone()
        assert pseudonym is not None
        ids = {
            "principal_id": person["id"],
            "pseudonym_id": pseudonym["id"],
            "principal_text": str(person["id"]),
            "pseudonym_text": str(pseudonym["id"]),
        }
        personal = cur.execute(query("operator_erase_personal"), ids).fetchone()
        identity = cur.execute(query("operator_erase_identity"), ids).fetchone()
        assert personal is not None and identity is not None
        cur.execute(query("operator_delete_principal"), ids)
        for workspace_id in person["workspace_ids"]:
            _audit(
                owner,
                workspace_id,
                "person.erase",
                f"members/{pseudonym['id']}",
                {"principal_id": str(pseudonym["id"])},
            )
    outcome = directory.sign_out_and_disable(subject) if directory is not None else {}
    return PersonErased(
        pseudonym_id=str(pseudonym["id"]),
        pseudonym=f"erased-{tag}",
        workspaces=list(person["workspaces"]),
        memberships_removed=len(person["workspace_ids"]),
        identity_provider=outcome,
        **personal,
        **identity,
    )


def live_agent_keys(owner: psycopg.Connection[Any]) -> list[tuple[str, str]]:
    """(workspace slug, client id) of every live agent key."""
    with owner.transaction():
        rows = _dicts(owner).execute(query("operator_live_agent_keys")).fetchall()
    return [(row["slug"], row["client_id"]) for row in rows]


def retire_agent_key(owner: psycopg.Connection[Any], client_id: str, reason: str) -> bool:
    """Revoke a key whose app client no longer exists; False if it was not live."""
    with owner.transaction():
        row = (
            _dicts(owner)
            .execute(query("operator_retire_agent_key"), {"client_id": client_id})
            .fetchone()
        )
        if row is None:
            return False
        _audit(
            owner,
            row["workspace_id"],
            "agent_key.revoke",
            f"agent-keys/{client_id}",
            {"client_id": client_id, "principal_id": str(row["id"]), "reason": reason},
        )
    return True
