"""Scheduled audit sweeper: purges expired records and publishes the outbox rows the
endpoint could not.

Runs every minute (EventBridge schedule) as ``memory_auditor``, a role that can only
claim and mark outbox rows (migration ``0005``), through RDS Proxy with an IAM token.
One short connection per run: nothing is held between runs, so an idle deployment
keeps no database connection open. Rows that fail to publish stay for the next run.
"""

from __future__ import annotations

import os
from typing import Any

from memory_server.domain.limits import (
    AUDIT_SWEEP_BATCH,
    AUDIT_SWEEP_RESERVE_MS,
    EXPIRE_SWEEP_BATCH,
)
from memory_server.edge import aws_config, logs
from memory_server.operations import audit_events as audit

logger = logs.function_logger("memory-server-sweeper")
logs.route_to(logger)
_events = aws_config.events_client()  # created once per container; bounded timeouts


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, int]:
    sink = audit.EventBridgeSink(_events, os.environ["AUDIT_BUS_NAME"])
    published = failed = 0
    with aws_config.connect(os.environ, autocommit=True) as auditor:
        expired = 0
        while True:  # expired records first: within a minute of their time
            purged = audit.purge_expired(auditor)
            expired += purged
            if purged < EXPIRE_SWEEP_BATCH or (
                context.get_remaining_time_in_millis() < AUDIT_SWEEP_RESERVE_MS
            ):
                break
        while True:
            done, missed = audit.sweep(auditor, sink, limit=AUDIT_SWEEP_BATCH)
            published, failed = published + done, failed + missed
            # A full, clean batch may mean a backlog (after an EventBridge outage): go on.
            backlog = done == AUDIT_SWEEP_BATCH
            if not backlog or context.get_remaining_time_in_millis() < AUDIT_SWEEP_RESERVE_MS:
                break
    if published or failed or expired:
        logger.info("swept", extra={"published": published, "failed": failed, "expired": expired})
    if failed:
        logger.warning("audit events left for the next run", extra={"failed": failed})
    return {"published": published, "failed": failed, "expired": expired}
