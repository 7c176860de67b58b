"""The local stack keeps its speed: no stall on a kept-alive connection, and no
slowdown as history grows (docs/contract.md §8, docs/performance.md).

One client keeping its connection open, as MCP hosts do. The thresholds are loose
enough for a shared 2-core machine and far from what the faults they guard against
cost: a Nagle / delayed-ACK stall adds ~40 ms to every call; an audit tap that
keeps every event made each write slower than the one before.
"""

from __future__ import annotations

import statistics
import uuid
from typing import Any

import pytest

from bench.timing import durations_ms
from tests.kept_alive import KeptAlive, mcp_headers, median

pytestmark = pytest.mark.alone  # timed: no other test beside them
CALLS = 100
WRITES = 2000
WINDOW = 100
# The defect this guards against made the last writes 2-4x slower than the first; a
# loaded 2-core machine alone has moved the medians by up to 1.55x.
MAX_RATIO = 2.0
RETRIES = 2  # further windows of writes measured when the last one was slow


@pytest.fixture
def client(stack: Any) -> Any:
    kept = KeptAlive(stack.info["url"], mcp_headers(stack.info["tokens"]["alice"]))
    yield kept
    kept.close()


def test_one_kept_alive_client_reads_with_p50_under_10_ms(client: Any) -> None:
    uri = f"memory://workspace/notes/speed-{uuid.uuid4().hex[:8]}.md"
    made = client.call("memory_write", uri=uri, content="# Speed\n", expected_revision=0)
    assert made["revision"] == 1
    client.call("memory_read", uri=uri)  # warm
    samples = durations_ms(lambda: client.call("memory_read", uri=uri), CALLS)
    assert client.connections == 1
    assert median(samples) < 10, f"memory_read p50 {median(samples):.1f} ms, kept alive"


@pytest.mark.slow
def test_2000_writes_do_not_get_slower(stack: Any, client: Any, owner_db: Any) -> None:
    """The last hundred of 2,000 new notes take no longer than the first hundred (as
    medians), and every one of them has its audit event published.

    As ``make dev`` runs by default: no queue subscribed to the audit bus (the tests'
    tap costs the emulation ~15 ms of CPU an event, more than a write itself, and
    2,000 writes in a row would then measure the machine running out of CPU).
    """
    folder = f"speed-{uuid.uuid4().hex[:8]}"
    ids: list[str] = []

    def write(i: int) -> None:
        made = client.call(
            "memory_write",
            uri=f"memory://workspace/notes/{folder}/n{i:05d}.md",
            content=f"# Note {i}\n\nWritten by the slowdown test.\n",
            expected_revision=0,
        )
        ids.append(made["id"])

    counter = iter(range(WRITES + RETRIES * WINDOW))
    stack.aws.set_audit_tap(False)
    try:
        samples = durations_ms(lambda: write(next(counter)), WRITES)
        first, last = statistics.median(samples[:WINDOW]), statistics.median(samples[-WINDOW:])
        # A burst of load from elsewhere on the machine can slow one window; a store
        # that slows with its history stays slow in the next hundred writes too.
        for _ in range(RETRIES):
            if last / first < MAX_RATIO:
                break
            last = min(last, statistics.median(durations_ms(lambda: write(next(counter)), WINDOW)))
        assert stack.wait_published()
    finally:
        stack.aws.set_audit_tap(True)
    ratio = last / first
    assert ratio < MAX_RATIO, f"first {first:.1f} ms, last {last:.1f} ms: x{ratio:.2f}"
    assert len(set(ids)) == len(ids) >= WRITES
    unpublished = owner_db.execute(
        "SELECT count(*) FROM memory.audit_outbox "
        "WHERE memory_id = ANY(%s::uuid[]) AND published_at IS NULL",
        (ids,),
    ).fetchone()[0]
    assert unpublished == 0, f"{unpublished} of {len(ids)} events not published"
