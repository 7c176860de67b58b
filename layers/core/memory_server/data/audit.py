"""The audit outbox: a request's rows published after its response, and the sweeper's
batches (its purge of expired records too, which writes their outbox rows). Every
change wrote its outbox row in its own transaction."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any, TypedDict

import psycopg

from memory_server.data import statements
from memory_server.data.pool import Pending, Transaction
from memory_server.data.statements import every
from memory_server.domain.caller import Caller


class OutboxRow(TypedDict):
    id: int
    memory_id: uuid.UUID
    uri: str
    operation: str
    revision: int
    writer_id: uuid.UUID
    source: str | None
    request_id: str | None
    occurred_at: datetime


class SweptRow(OutboxRow):
    workspace: str


def claim_request_rows(
    tx: Transaction, workspace_id: uuid.UUID, callers: list[Caller]
) -> Pending[list[OutboxRow]]:
    """These requests' unpublished rows, locked so the sweeper skips them meanwhile.
    The publishing transaction commits without waiting for its WAL flush: losing the
    mark in a crash only means the sweeper sends those events again (same event id)."""
    tx.execute("publish_commit_async", {})
    params = {"workspace_id": workspace_id, "request_ids": [c.request_id for c in callers]}
    return tx.query("request_audit_rows", params, every)


def mark_published(tx: Transaction, workspace_id: uuid.UUID, ids: list[int]) -> None:
    tx.execute("mark_audit_published", {"workspace_id": workspace_id, "ids": ids})


def claim_unpublished(
    auditor: psycopg.Connection[Any], *, limit: int, min_age: timedelta
) -> list[SweptRow]:
    """The sweeper's batch (as the auditor role, in its open transaction): unpublished
    rows of every workspace older than ``min_age``, locked until marked."""
    rows: list[Any] = statements.rows(
        auditor, "sweep_claim_unpublished", {"limit": limit, "min_age": min_age}
    )
    return rows


def mark_swept(auditor: psycopg.Connection[Any], ids: list[int]) -> None:
    statements.run(auditor, "sweep_mark_published", {"ids": ids})


def purge_expired(auditor: psycopg.Connection[Any], *, limit: int) -> int:
    """Purge up to ``limit`` expired records like deletes (operation ``expire``), in
    one transaction; how many were purged."""
    row = statements.one(auditor, "sweep_expired", {"limit": limit})
    return int(row["purged"]) if row else 0
