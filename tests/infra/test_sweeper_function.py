"""The scheduled sweeper's handler, as deployed: auditor role, environment, EventBridge."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import psycopg
import pytest
from moto import mock_aws

from tests.builders import audit_tap
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


def test_the_sweeper_publishes_what_is_left_as_the_auditor(
    world: Any, cluster: Cluster, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    made = agent.write(uri="memory://workspace/notes/s.md", content="x", expected_revision=0)
    # Nothing published it (as if EventBridge had been down), and it is old enough.
    with psycopg.connect(cluster.owner_url, autocommit=True) as owner:
        owner.execute(
            "UPDATE memory.audit_outbox SET occurred_at = now() - interval '5 minutes' "
            "WHERE memory_id = %s",
            (made["id"],),
        )

    # What the template sets (without IAM auth: the test server takes a password).
    monkeypatch.setenv("DATABASE_URL", cluster.auditor_url)
    monkeypatch.setenv("DB_IAM_AUTH", "false")
    monkeypatch.setenv("AUDIT_BUS_NAME", "memory-audit-test")
    sweeper = load_function("audit_sweeper")

    result = sweeper.handler({"source": "aws.events"}, LambdaContext())
    assert result["failed"] == 0 and result["published"] >= 1
    mine = [e for e in aws() if e["detail"]["record_id"] == made["id"]]
    assert [(e["detail-type"], e["detail"]["operation"]) for e in mine] == [
        ("MemoryChanged", "create")
    ]
    with psycopg.connect(cluster.owner_url) as owner:
        assert owner.execute(
            "SELECT published_at IS NOT NULL FROM memory.audit_outbox WHERE memory_id = %s",
            (made["id"],),
        ).fetchall() == [(True,)]
    # Published once: a later run (which may find other tests' rows) never resends it.
    sweeper.handler({"source": "aws.events"}, LambdaContext())
    assert not [e for e in aws() if e["detail"]["record_id"] == made["id"]]
