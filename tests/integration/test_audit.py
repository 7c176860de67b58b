"""Audit events reach EventBridge exactly once: after commit, or later by the sweeper."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import boto3
import psycopg
import pytest
from memory_server.operations.audit_events import EventBridgeSink, publish_request, sweep
from moto import mock_aws

from tests.builders import audit_tap


@pytest.fixture
def bus() -> Any:
    with mock_aws():
        events = boto3.client("events", region_name="us-east-1")
        sqs = boto3.client("sqs", region_name="us-east-1")
        yield EventBridgeSink(events, "memory-audit"), audit_tap(events, sqs, "memory-audit")


class FailingSink:
    def put(self, entries):  # type: ignore[no-untyped-def]
        return [False] * len(entries)


def test_each_change_is_published_once(world, bus) -> None:  # type: ignore[no-untyped-def]
    sink, drain = bus
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    made = agent.write(
        uri="memory://workspace/notes/a.md", content="secret body", expected_revision=0
    )
    assert publish_request(world.store.db, agent.caller, sink) == 1
    assert publish_request(world.store.db, agent.caller, sink) == 0  # nothing left
    events = drain()
    assert len(events) == 1
    detail = events[0]["detail"]
    assert events[0]["detail-type"] == "MemoryChanged" and events[0]["source"] == "memory-server"
    assert (
        detail["record_id"] == made["id"]
        and detail["operation"] == "create"
        and detail["revision"] == 1
    )
    assert detail["workspace"] == ws.slug and detail["request_id"] == agent.caller.request_id
    assert "secret body" not in json.dumps(events[0])


def test_sweeper_delivers_what_the_request_could_not(world, cluster, bus) -> None:  # type: ignore[no-untyped-def]
    sink, drain = bus
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    agent.write(uri="memory://workspace/notes/a.md", content="x", expected_revision=0)
    agent.write(uri="memory://workspace/notes/a.md", content="y", expected_revision=1)
    assert publish_request(world.store.db, agent.caller, FailingSink()) == 0  # EventBridge down
    with psycopg.connect(cluster.auditor_url) as auditor:
        published, failed = sweep(auditor, sink, min_age=timedelta(0))
        assert failed == 0 and published >= 2
        # Rows other tests of the session left unpublished come first, a batch at a
        # time; once all are out, a sweep finds nothing (a row is never sent twice:
        # the events below would show it).
        while published:
            published, failed = sweep(auditor, sink, min_age=timedelta(0))
            assert failed == 0
        assert sweep(auditor, sink, min_age=timedelta(0)) == (0, 0)
        # The auditor role can do nothing else.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            auditor.execute("SELECT count(*) FROM memory.memories")
    mine = [e for e in drain() if e["detail"]["workspace"] == ws.slug]
    # The two writes, and the operator's setup (never published by a request).
    assert sorted((e["detail"]["operation"], e["detail"]["revision"]) for e in mine) == [
        ("create", 1),
        ("member.add", 0),
        ("replace", 2),
        ("workspace.create", 0),
    ]
