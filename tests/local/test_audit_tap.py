"""The local stack keeps no state that grows with history (docs/contract.md §8).

Emulated SQS works over every message a queue holds on each send and remembers the
receipt handles of every deleted message, so a tap that keeps events, or keeps one
queue for ever, slows ``make dev`` down as it runs. The tap is drained into a
bounded ring and its queue replaced after ``tap_rotate`` messages. Idempotency
records expire as DynamoDB's TTL would expire them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from memory_local.aws import AUDIT_BUS, AUDIT_TAP_QUEUE, IDEMPOTENCY_TABLE, LocalAws


def publish(aws: LocalAws, first: int, count: int) -> None:
    events = aws.client("events")
    for start in range(first, first + count, 10):
        entries = [
            {
                "Source": "memory-server",
                "DetailType": "MemoryChanged",
                "Detail": json.dumps({"n": n}),
                "EventBusName": AUDIT_BUS,
            }
            for n in range(start, min(start + 10, first + count))
        ]
        assert events.put_events(Entries=entries)["FailedEntryCount"] == 0


def tap_queues(aws: LocalAws) -> list[str]:
    urls = aws.client("sqs").list_queues(QueueNamePrefix=AUDIT_TAP_QUEUE).get("QueueUrls", [])
    return sorted(url.rsplit("/", 1)[1] for url in urls)


@pytest.fixture
def tap(local_aws: LocalAws) -> Iterator[LocalAws]:
    keep, rotate = local_aws.tap_keep, local_aws.tap_rotate
    local_aws.read_audit_events()
    yield local_aws
    local_aws.tap_keep, local_aws.tap_rotate = keep, rotate
    local_aws.read_audit_events()


def test_the_tap_queue_is_replaced_and_nothing_is_lost(tap: LocalAws) -> None:
    tap.tap_rotate = 25
    before = tap_queues(tap)
    assert len(before) == 1
    for batch in range(4):  # 4 x 20 events, drained as make dev drains them
        publish(tap, batch * 20, 20)
        tap.drain_audit_tap()
    publish(tap, 80, 5)  # some left in the current queue
    received = tap.read_audit_events()
    assert [e["detail"]["n"] for e in received] == list(range(85))
    after = tap_queues(tap)
    assert len(after) == 1 and after != before  # rotated; the old queues are gone
    publish(tap, 85, 3)  # the rule delivers to the current queue
    assert [e["detail"]["n"] for e in tap.read_audit_events()] == [85, 86, 87]


def test_the_ring_keeps_only_the_latest_events(tap: LocalAws) -> None:
    tap.tap_keep = 10
    dropped = tap.tap_dropped
    publish(tap, 0, 30)
    tap.drain_audit_tap()
    assert tap.tap_dropped - dropped == 20
    assert [e["detail"]["n"] for e in tap.read_audit_events()] == list(range(20, 30))


def test_a_drained_tap_leaves_the_emulated_queue_empty(tap: LocalAws) -> None:
    publish(tap, 0, 30)
    assert tap.drain_audit_tap() == 30
    sqs = tap.client("sqs")
    (queue_url,) = sqs.list_queues(QueueNamePrefix=AUDIT_TAP_QUEUE)["QueueUrls"]
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"
    assert len(tap.read_audit_events()) == 30


def test_expired_idempotency_records_are_deleted_as_dynamodb_ttl_would(
    local_aws: LocalAws,
) -> None:
    """Moto keeps DynamoDB items past their TTL; make dev deletes them now and then."""
    dynamodb = local_aws.client("dynamodb")
    for key, expiration in (("old-1", 1000), ("old-2", 1999), ("fresh", 4000)):
        dynamodb.put_item(
            TableName=IDEMPOTENCY_TABLE,
            Item={"id": {"S": f"ttl-test-{key}"}, "expiration": {"N": str(expiration)}},
        )
    assert local_aws.expire_idempotency_records(now=2000) >= 2
    left = {
        item["id"]["S"]
        for item in dynamodb.scan(TableName=IDEMPOTENCY_TABLE)["Items"]
        if item["id"]["S"].startswith("ttl-test-")
    }
    assert left == {"ttl-test-fresh"}
