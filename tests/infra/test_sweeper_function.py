"""The scheduled sweeper's handler, as deployed: auditor role, environment, EventBridge."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import psycopg
import pytest
from memory_server.data.migrate import drop_database
from memory_server.data.pool import Database
from memory_server.data.provision import Passwords, Provisioned, provision
from memory_server.operations.store import Store
from moto import mock_aws

from tests.builders import World, audit_tap
from tests.conftest import Cluster
from tests.infra.conftest import load_function


class LambdaContext:
    function_name = "memory-server-dev-AuditSweeperFunction"
    function_version = "$LATEST"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:sweeper"
    aws_request_id = str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        yield audit_tap(boto3.client("events"), boto3.client("sqs"), "memory-audit-test")


@pytest.fixture
def own_database(cluster: Cluster) -> Iterator[Provisioned]:
    """A database of its own on the session's server. The sweeper publishes every row
    old enough: on the session's database, that is the backlog every earlier test
    left unpublished (thousands of rows to the emulated EventBridge)."""
    database = f"memsweep_{uuid.uuid4().hex[:12]}"
    passwords = Passwords(cluster.passwords["owner"], cluster.passwords["runtime"])
    try:
        yield provision(cluster.admin_url, passwords, database=database)
    finally:
        drop_database(cluster.admin_url, database)


def test_the_sweeper_publishes_what_is_left_as_the_auditor(
    own_database: Provisioned, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = Database(own_database.runtime_url, min_size=1, max_size=2)
    try:
        with psycopg.connect(own_database.owner_url, autocommit=True) as owner:
            ws = World(Store(db, cursor_secret=b"c" * 32), owner).workspace()
            agent = ws.agent(ws.person("alice"))
            made = agent.write(
                uri="memory://workspace/notes/s.md", content="x", expected_revision=0
            )
            # Nothing published it (as if EventBridge had been down), and it is old enough.
            owner.execute(
                "UPDATE memory.audit_outbox SET occurred_at = now() - interval '5 minutes' "
                "WHERE memory_id = %s",
                (made["id"],),
            )
    finally:
        db.close()

    # What the template sets (without IAM auth: the test server takes a password).
    monkeypatch.setenv("DATABASE_URL", own_database.auditor_url)
    monkeypatch.setenv("DB_IAM_AUTH", "false")
    monkeypatch.setenv("AUDIT_BUS_NAME", "memory-audit-test")
    sweeper = load_function("audit_sweeper")

    result = sweeper.handler({"source": "aws.events"}, LambdaContext())
    assert result["failed"] == 0 and result["published"] >= 1
    mine = [e for e in aws() if e["detail"]["record_id"] == made["id"]]
    assert [(e["detail-type"], e["detail"]["operation"]) for e in mine] == [
        ("MemoryChanged", "create")
    ]
    with psycopg.connect(own_database.owner_url) as owner:
        assert owner.execute(
            "SELECT published_at IS NOT NULL FROM memory.audit_outbox WHERE memory_id = %s",
            (made["id"],),
        ).fetchall() == [(True,)]
    # Published once: a later run never resends it.
    sweeper.handler({"source": "aws.events"}, LambdaContext())
    assert not [e for e in aws() if e["detail"]["record_id"] == made["id"]]
