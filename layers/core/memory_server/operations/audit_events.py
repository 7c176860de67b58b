"""Audit events: outbox rows published to EventBridge after the response.

Each committed change wrote one outbox row in its own transaction: the outbox is the
source of truth. :class:`Publisher` is the one post-commit hook (MCP tools and admin
actions): it hands the publishing of the request's rows to :mod:`.after_response`,
so it happens once the response has gone (in Lambda, the invocation's post-invoke
phase). The sweeper publishes whatever is still unpublished after
``AUDIT_SWEEP_MIN_AGE_S`` (a function killed after its response, an EventBridge
outage). Rows are claimed with ``FOR UPDATE SKIP LOCKED`` and marked in the same
transaction as the ``PutEvents`` call, so the two never publish the same row
concurrently; a row published but not marked (the connection lost in between) is
published again under the same ``event_id``: at least once. Events carry no content.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Protocol

import psycopg

from memory_server.data import audit as outbox
from memory_server.data.pool import Database
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.domain.embedding import Embedder
from memory_server.domain.limits import (
    AUDIT_PUBLISH_DEADLINE_S,
    AUDIT_SWEEP_BATCH,
    AUDIT_SWEEP_MIN_AGE_S,
    EVENTS_PUT_MAX_ENTRIES,
    EXPIRE_SWEEP_BATCH,
)
from memory_server.domain.summaries import iso
from memory_server.operations.after_response import AfterResponse
from memory_server.operations.embeddings import EmbedJob

logger = logging.getLogger(__name__)

SOURCE = "memory-server"
DETAIL_TYPE = "MemoryChanged"


class EventSink(Protocol):
    def put(self, entries: Sequence[dict[str, Any]]) -> list[bool]:
        """Send entries; return per-entry success."""
        ...


class EventBridgeSink:
    """``PutEvents`` on the audit bus, in batches, reporting per-entry failures."""

    def __init__(self, client: Any, bus_name: str) -> None:
        self.client = client
        self.bus_name = bus_name

    def put(self, entries: Sequence[dict[str, Any]]) -> list[bool]:
        results: list[bool] = []
        size = EVENTS_PUT_MAX_ENTRIES
        for start in range(0, len(entries), size):
            batch = [{**e, "EventBusName": self.bus_name} for e in entries[start : start + size]]
            response = self.client.put_events(Entries=batch)
            results += ["ErrorCode" not in item for item in response["Entries"]]
        return results


def event_entry(workspace: str, row: Any) -> dict[str, Any]:
    detail = {
        "event_id": row["id"],
        "workspace": workspace,
        "record_id": str(row["memory_id"]),
        "uri": row["uri"],
        "operation": row["operation"],
        "revision": row["revision"],
        "writer": str(row["writer_id"]),
        "source": row["source"],
        "time": iso(row["occurred_at"]),
        "request_id": row["request_id"],
    }
    return {"Source": SOURCE, "DetailType": DETAIL_TYPE, "Detail": json.dumps(detail)}


def publish_request(db: Database, caller: Caller, sink: EventSink) -> int:
    """Publish this request's audit rows; what fails stays for the sweeper."""
    return publish_requests(db, [caller], sink)


def publish_requests(db: Database, callers: Sequence[Caller], sink: EventSink) -> int:
    """Publish the audit rows of several requests of callers with the same settings
    (so the same row-level view) in one transaction and as few ``PutEvents`` as the
    rows need; what fails stays for the sweeper. Returns how many were published."""
    first = callers[0]
    with db.write(first, Deadline.after(AUDIT_PUBLISH_DEADLINE_S)) as tx:
        rows = outbox.claim_request_rows(tx, first.workspace_id, list(callers)).get()
        if not rows:
            return 0
        sent = sink.put([event_entry(first.workspace, row) for row in rows])
        ids = [row["id"] for row, ok in zip(rows, sent, strict=True) if ok]
        outbox.mark_published(tx, first.workspace_id, ids)
    return len(ids)


def publish_or_defer(db: Database, caller: Caller, sink: EventSink | None) -> None:
    """Publish after a committed change; on any failure the sweeper delivers later."""
    if sink is not None:
        _publish_or_defer(db, [caller], sink)


def _publish_or_defer(db: Database, callers: Sequence[Caller], sink: EventSink) -> None:
    try:
        publish_requests(db, callers, sink)
    except Exception:  # the changes are committed; their outbox rows wait for the sweeper
        logger.warning(
            "audit publish deferred to the sweeper",
            exc_info=True,
            extra={
                "workspace": callers[0].workspace,
                "audit_request_ids": [caller.request_id for caller in callers],
            },
        )


@dataclass(frozen=True)
class PublishJob:
    """The post-response job of one request that changed something.

    Jobs with the same ``batch_key`` (same database, sink and caller settings but the
    request) can run as one: :meth:`run_batch` publishes their rows together, which
    the local worker does when several are waiting (``after_response.run_jobs``).
    """

    db: Database
    caller: Caller
    sink: EventSink

    @property
    def batch_key(self) -> Hashable:
        return (id(self.db), id(self.sink), replace(self.caller, request_id=None))

    def __call__(self) -> None:
        _publish_or_defer(self.db, [self.caller], self.sink)

    @staticmethod
    def run_batch(jobs: Sequence[PublishJob]) -> None:
        _publish_or_defer(jobs[0].db, [job.caller for job in jobs], jobs[0].sink)


def sweep(
    auditor: psycopg.Connection[Any],
    sink: EventSink,
    *,
    limit: int = AUDIT_SWEEP_BATCH,
    min_age: timedelta = timedelta(seconds=AUDIT_SWEEP_MIN_AGE_S),
) -> tuple[int, int]:
    """Publish unpublished rows older than ``min_age`` across workspaces.

    Runs as the auditor role. Returns (published, failed).
    """
    with auditor.transaction():
        rows = outbox.claim_unpublished(auditor, limit=limit, min_age=min_age)
        if not rows:
            return 0, 0
        sent = sink.put([event_entry(row["workspace"], row) for row in rows])
        ids = [row["id"] for row, ok in zip(rows, sent, strict=True) if ok]
        outbox.mark_swept(auditor, ids)
    return len(ids), len(rows) - len(ids)


def purge_expired(auditor: psycopg.Connection[Any], *, limit: int = EXPIRE_SWEEP_BATCH) -> int:
    """The sweeper's other task: purge expired records (each with its ``expire``
    tombstone and outbox row, published by a later sweep). Runs as the auditor role;
    returns how many were purged."""
    with auditor.transaction():
        return outbox.purge_expired(auditor, limit=limit)


class Publisher:
    """The one post-commit hook: after a request that changed something (an MCP tool
    or an admin action) has committed, publish that request's audit rows once its
    response has gone (``after_response``; without one, before it returns), and embed
    what it changed when hybrid recall is on."""

    def __init__(
        self,
        db: Database,
        sink: EventSink | None,
        after_response: AfterResponse | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.db = db
        self.sink = sink
        self.after_response = after_response or AfterResponse()
        self.embedder = embedder

    def after_commit(self, caller: Caller) -> None:
        if self.sink is not None:
            self.after_response.submit(PublishJob(self.db, caller, self.sink))
        if self.embedder is not None:  # the changed records' vectors (embeddings.EmbedJob)
            self.after_response.submit(EmbedJob(self.db, caller, self.embedder))
