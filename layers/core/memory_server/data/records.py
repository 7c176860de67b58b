"""Records: one typed function per statement on ``memory.memories`` and its history.

Every statement passes the caller's view as parameters (workspace, visible owners,
visible contexts), the first wall; row-level security applies it again. Each function
queues its statement on a request :class:`~.pool.Transaction` and returns a
:class:`~.pool.Pending` of typed rows or a typed outcome.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypedDict, cast

from memory_server.data.pool import Pending, Transaction
from memory_server.data.statements import Row, every, first
from memory_server.domain.addresses import IdAddress, RecordAddress
from memory_server.domain.caller import Caller, PrincipalKind

Operation = Literal["create", "replace", "merge", "supersede", "move", "delete"]


class Placed(TypedDict):
    """Where a record is and which revision of it this is."""

    id: uuid.UUID
    owner_id: uuid.UUID
    context_key: str
    kind: str
    path: str
    title: str
    revision: int


class SummaryRow(Placed):
    """What a list page says of a record (never its body)."""

    updated_at: datetime
    expires_at: datetime | None
    pinned: bool


class RecordRow(SummaryRow):
    """A record as read: where it is, its content and its provenance."""

    workspace_id: uuid.UUID
    body: str
    created_at: datetime
    source: str | None
    created_by: str | None
    created_by_kind: PrincipalKind | None
    updated_by: str | None
    updated_by_kind: PrincipalKind | None


class RevisionRow(Placed):
    """One immutable revision of a record still in view (with the record's expiry and
    pin now)."""

    workspace_id: uuid.UUID
    body: str
    operation: str
    created_at: datetime
    source: str | None
    writer: str | None
    writer_kind: PrincipalKind | None
    expires_at: datetime | None
    pinned: bool


class HistoryRow(TypedDict):
    revision: int
    operation: str
    kind: str
    path: str
    owner_id: uuid.UUID
    created_at: datetime
    source: str | None
    writer: str | None
    writer_kind: PrincipalKind | None


class SkillRow(TypedDict):
    """A skill folder's SKILL.md in the nearest context, its body's head only."""

    id: uuid.UUID
    owner_id: uuid.UUID
    context_key: str
    path: str
    title: str
    revision: int
    head: str


class PinnedRow(Placed):
    """A pinned record for the briefing: the head of its content, and whether more."""

    updated_at: datetime
    content: str
    cut: bool


class RecentRow(Placed):
    """A recent change for the briefing (no body)."""

    updated_at: datetime
    updated_by: str | None
    updated_by_kind: PrincipalKind | None


@dataclass(slots=True)
class BriefRows:
    pinned: list[PinnedRow] = field(default_factory=list)
    recent: list[RecentRow] = field(default_factory=list)
    skills: list[SkillRow] = field(default_factory=list)


class Locked(TypedDict):
    body: str
    revision: int


@dataclass(frozen=True, slots=True)
class Written:
    """A record created or changed: its id, new revision and context."""

    id: uuid.UUID
    revision: int
    context_key: str


@dataclass(frozen=True, slots=True)
class Taken:
    """A create whose address already resolves to a visible record at ``revision``
    (``None``: taken concurrently, by a record not yet known)."""

    revision: int | None


@dataclass(frozen=True, slots=True)
class Missed:
    """A conditional change that changed nothing: the record is at ``revision`` (a
    conflict), or ``revision`` is ``None`` when it moved on or left the view between
    the look-up and the change (explained by :func:`current_revision`)."""

    id: uuid.UUID
    revision: int | None


@dataclass(frozen=True, slots=True)
class Occupied:
    """A move whose destination already resolves to a record."""


@dataclass(frozen=True, slots=True)
class Content:
    """What a new revision writes (a delete writes none)."""

    title: str | None
    body: str | None
    source: str | None


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """A change's say on the record's expiry and pin: ``keep_expiry`` leaves a changed
    record's expiry as it is (a new record's is then ``None``: never), else it becomes
    ``expires_at``; a ``pinned`` of ``None`` leaves the pin (a new record: not pinned)."""

    expires_at: datetime | None = None
    keep_expiry: bool = True
    pinned: bool | None = None


KEEP = Lifecycle()


NO_CONTENT = Content(None, None, None)
# A list page's and a completion's path bound: above every valid path (C collation).
PATH_END = "\U0010ffff"


def view(caller: Caller) -> dict[str, Any]:
    """The caller's view as statement parameters."""
    return {
        "workspace_id": caller.workspace_id,
        "owners": caller.visible_owners(),
        "contexts": list(caller.context.ancestors),
        "principal_id": caller.principal_id,
        "request_id": caller.request_id,
    }


def _contexts(caller: Caller, contexts: list[str] | None) -> list[str]:
    return contexts if contexts is not None else list(caller.context.ancestors)


# -- reads ---------------------------------------------------------------------------


def find(
    tx: Transaction,
    caller: Caller,
    address: RecordAddress | IdAddress,
    *,
    contexts: list[str] | None = None,
) -> Pending[RecordRow | None]:
    """The visible record an address names: by id, or what a path resolves to, the
    nearest from ``contexts`` (by default the listening context and up)."""
    params = view(caller)
    if isinstance(address, IdAddress):
        return tx.query("record_by_id", {**params, "id": address.id}, first)
    params.update(
        owner_id=caller.owner_for(address.namespace),
        kind=address.kind,
        path=address.path,
        contexts=_contexts(caller, contexts),
    )
    return tx.query("resolve_address", params, first)


def read_revision(
    tx: Transaction, caller: Caller, record_id: uuid.UUID, revision: int
) -> Pending[RevisionRow | None]:
    """One revision (with its content) of a record still in view."""
    params = {**view(caller), "id": record_id, "revision": revision}
    return tx.query("read_revision", params, first)


def revision_as_of(
    tx: Transaction, caller: Caller, record_id: uuid.UUID, as_of: datetime
) -> Pending[RevisionRow | None]:
    """The revision of a record in view that was current at ``as_of`` (``None``: the
    record did not exist then)."""
    params = {**view(caller), "id": record_id, "as_of": as_of}
    return tx.query("revision_as_of", params, first)


def history(
    tx: Transaction, caller: Caller, record_id: uuid.UUID, limit: int
) -> Pending[list[HistoryRow]]:
    """A record's history, newest first (no bodies)."""
    return tx.query("history", {**view(caller), "id": record_id, "limit": limit}, every)


def list_page(
    tx: Transaction,
    caller: Caller,
    *,
    owners: list[uuid.UUID],
    kind: str | None,
    folder: str,
    after: list[str],
    limit: int,
) -> Pending[list[SummaryRow]]:
    """Up to ``limit`` records of the view under ``folder`` (a path prefix ending in
    ``/``, or empty) in (kind, path, context, id) order after the position ``after``."""
    params = {
        **view(caller),
        "owners": owners,
        "kind": kind,
        "path_low": folder,
        "path_high": folder[:-1] + "0" if folder else PATH_END,  # '0' follows '/'
        "after_kind": after[0],
        "after_path": after[1],
        "after_context": after[2],
        "after_id": after[3],
        "limit": limit,
    }
    return tx.query("list_page", params, every)


def skill_page(
    tx: Transaction,
    caller: Caller,
    *,
    head_chars: int,
    after_path: str,
    after_owner: uuid.UUID,
    limit: int,
) -> Pending[list[SkillRow]]:
    """Up to ``limit`` skill folders' SKILL.md in view, in (path, owner) order."""
    params = {
        **view(caller),
        "head_chars": head_chars,
        "after_path": after_path,
        "after_owner": after_owner,
        "limit": limit,
    }
    return tx.query("skill_page", params, every)


def brief(tx: Transaction, caller: Caller, *, since: datetime | None) -> Pending[BriefRows]:
    """The briefing's reads in one statement: pinned memories and notes in view
    (personal first, then the nearest context, then the newest) with the head of each
    body; others changed after ``since`` (or the latest), newest first; the first
    skills in view. The sizes are ``limits.BRIEF_*`` (constants of the function)."""
    params = {**view(caller), "since": since}

    def shape(rows: list[Row]) -> BriefRows:
        found = BriefRows()
        for row in rows:
            section = row.pop("section")
            if section == "pinned":
                found.pinned.append(cast(PinnedRow, row))
            elif section == "recent":
                found.recent.append(cast(RecentRow, row))
            else:
                found.skills.append(cast(SkillRow, {**row, "head": row["content"]}))
        return found

    return tx.query("brief", params, shape)


def complete_paths(
    tx: Transaction,
    caller: Caller,
    ranges: list[tuple[uuid.UUID, str, str]],
    *,
    skill_folders: bool,
    limit: int,
) -> Pending[list[tuple[uuid.UUID, str, str]]]:
    """The distinct visible paths starting with each range's prefix (an owner, a kind
    and a prefix), up to ``limit`` per range: (owner, kind, path)."""
    params = {
        **view(caller),
        "range_owners": [owner for owner, _, _ in ranges],
        "range_kinds": [kind for _, kind, _ in ranges],
        "range_lows": [low for _, _, low in ranges],
        "range_highs": [low + PATH_END for _, _, low in ranges],
        "skill_folders": skill_folders,
        "limit": limit,
    }

    def shape(rows: list[Row]) -> list[tuple[uuid.UUID, str, str]]:
        return [(row["owner_id"], row["kind"], row["path"]) for row in rows]

    return tx.query("complete_paths", params, shape)


def current_revision(tx: Transaction, caller: Caller, record_id: uuid.UUID) -> Pending[int | None]:
    """The revision a visible record is at (``None``: it is not in view)."""

    def shape(rows: list[Row]) -> int | None:
        return rows[0]["revision"] if rows else None

    return tx.query("current_revision", {**view(caller), "id": record_id}, shape)


def lock(tx: Transaction, caller: Caller, record_id: uuid.UUID) -> Pending[Locked | None]:
    """Lock a visible record for a read-modify-write; its latest body and revision."""
    return tx.query("lock_record", {**view(caller), "id": record_id}, first)


# -- changes (each writes its revision and audit rows in the same statement) -----------


def _written(rows: list[Row]) -> Written | None:
    if not rows:
        return None
    return Written(rows[0]["id"], rows[0]["revision"], rows[0]["context_key"])


def _change_params(
    caller: Caller,
    address: RecordAddress,
    content: Content,
    operation: Operation,
    life: Lifecycle = KEEP,
) -> dict[str, Any]:
    return {
        **view(caller),
        "owner_id": caller.owner_for(address.namespace),
        "kind": address.kind,
        "path": address.path,
        "title": content.title,
        "body": content.body,
        "source": content.source,
        "operation": operation,
        "uri": address.uri,
        "expires_at": None if life.keep_expiry else life.expires_at,
        "keep_expiry": life.keep_expiry,
        "pinned": life.pinned,
    }


def create_unless_taken(
    tx: Transaction,
    caller: Caller,
    address: RecordAddress,
    *,
    context_key: str,
    content: Content,
    life: Lifecycle = KEEP,
) -> Pending[Written | Taken]:
    """Create a record in ``context_key`` unless its address already resolves to a
    visible record from the listening context; one statement."""
    params = {
        **_change_params(caller, address, content, "create", life),
        "context_key": context_key,
    }

    def shape(rows: list[Row]) -> Written | Taken:
        if not rows:
            return Taken(None)
        row = rows[0]
        if not row["created"]:
            return Taken(row["revision"])
        return Written(row["id"], row["revision"], row["context_key"])

    return tx.query("create_record_unless_taken", params, shape)


def create(
    tx: Transaction,
    caller: Caller,
    address: RecordAddress,
    *,
    context_key: str,
    content: Content,
    operation: Operation,
    life: Lifecycle = KEEP,
) -> Pending[Written | None]:
    """Create a record in ``context_key`` (``None``: its address was taken concurrently)."""
    params = {
        **_change_params(caller, address, content, operation, life),
        "context_key": context_key,
    }
    return tx.query("create_record", params, _written)


def change_at(
    tx: Transaction,
    caller: Caller,
    address: RecordAddress,
    *,
    record_id: uuid.UUID | None,
    contexts: list[str] | None,
    expected_revision: int,
    content: Content,
    operation: Literal["replace", "delete"],
    life: Lifecycle = KEEP,
) -> Pending[Written | Missed | None]:
    """Replace or delete, at ``expected_revision``, the record ``record_id`` (when
    given, at ``address``) or else the record ``address`` resolves to from
    ``contexts``: one statement, in which the look-up, the revision check and the
    change happen. ``None``: nothing visible there."""
    params = {
        **_change_params(caller, address, content, operation, life),
        "id": record_id,
        "contexts": _contexts(caller, contexts),
        "expected_revision": expected_revision,
    }

    def shape(rows: list[Row]) -> Written | Missed | None:
        if not rows:
            return None
        row = rows[0]
        if not row["changed"]:
            return Missed(row["id"], row["revision"])
        return Written(row["id"], row["revision"], row["context_key"])

    return tx.query("change_record_at", params, shape)


def change(
    tx: Transaction,
    caller: Caller,
    record_id: uuid.UUID,
    address: RecordAddress,
    *,
    expected_revision: int,
    content: Content,
    operation: Operation,
    life: Lifecycle = KEEP,
) -> Pending[Written | None]:
    """Change a locked visible record at ``expected_revision`` (a merge under its row
    lock). ``None``: it moved on or left the view."""
    params = {
        **_change_params(caller, address, content, operation, life),
        "id": record_id,
        "expected_revision": expected_revision,
    }
    return tx.query("change_record", params, _written)


def move(
    tx: Transaction,
    caller: Caller,
    record_id: uuid.UUID,
    destination: RecordAddress,
    *,
    expected_revision: int,
    content: Content,
) -> Pending[Written | Occupied | None]:
    """Move a visible record at ``expected_revision`` to ``destination`` unless the
    destination already resolves to a record. ``None``: it moved on or left the view."""
    params = {
        **_change_params(caller, destination, content, "move"),
        "id": record_id,
        "expected_revision": expected_revision,
    }

    def shape(rows: list[Row]) -> Written | Occupied | None:
        if not rows:
            return None
        if not rows[0]["moved"]:
            return Occupied()
        return Written(rows[0]["id"], rows[0]["revision"], rows[0]["context_key"])

    return tx.query("move_record", params, shape)
