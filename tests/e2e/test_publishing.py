"""``make dev`` publishes audit events from a process of its own, and goes on
publishing if that process dies (memory_local.publishing, docs/contract.md §8)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kept_alive import KeptAlive, mcp_headers


@pytest.fixture
def client(stack: Any) -> Iterator[KeptAlive]:
    kept = KeptAlive(stack.info["url"], mcp_headers(stack.info["tokens"]["alice"]))
    yield kept
    kept.close()


def write_and_publish(stack: Any, client: KeptAlive, owner_db: Any) -> Any:
    uri = f"memory://workspace/notes/publishing-{uuid.uuid4().hex[:8]}.md"
    made = client.call("memory_write", uri=uri, content="# Published\n", expected_revision=0)
    assert made["revision"] == 1, made
    assert stack.wait_published()
    return owner_db.execute(
        "SELECT count(*), count(published_at) FROM memory.audit_outbox WHERE memory_id = %s",
        [made["id"]],
    ).fetchone()


def test_the_publisher_process_publishes_each_change(
    stack: Any, client: KeptAlive, owner_db: Any
) -> None:
    publisher = stack.publisher
    assert publisher.alive and publisher.process.poll() is None
    handed = publisher.handed
    assert write_and_publish(stack, client, owner_db) == (1, 1)
    assert publisher.handed == handed + 1  # the child published it, not this process


def test_publishing_goes_on_in_process_when_the_publisher_dies(
    stack: Any, client: KeptAlive, owner_db: Any
) -> None:
    publisher = stack.publisher
    try:
        publisher.process.kill()  # the stack's own child, by its PID
        publisher.process.wait(10)
        give_up = time.monotonic() + 10
        while publisher.alive and time.monotonic() < give_up:
            time.sleep(0.05)
        assert not publisher.alive
        handed = publisher.handed
        assert write_and_publish(stack, client, owner_db) == (1, 1)
        assert publisher.handed == handed  # published by the stack's own worker
    finally:
        stack.start_publisher()  # a new child for the tests that follow
