"""Load: a bounded loopback load test with the official MCP client.

``LOAD_CLIENTS`` clients (16) run a mixed workload for ``LOAD_SECONDS`` (10 in
``make test``; the figures in docs/security.md come from 60): reads, searches and
lists, replacements of a shared hot set at the revision just read (so conflicts are
expected), and remembers. Zero errors other than those conflicts; every change
keeps a gapless history with one outbox row per commit. Prints throughput and
latency percentiles (run with ``-s`` to see them).
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
from collections import Counter, defaultdict
from contextlib import AsyncExitStack
from typing import Any

import pytest

from tests.proof.harness import Inspector, Result, invoke, marker_word, mcp_client, run

pytestmark = [pytest.mark.slow, pytest.mark.alone]  # a timed load run (LOAD_SECONDS)

CLIENTS = int(os.environ.get("LOAD_CLIENTS", "16"))
SECONDS = float(os.environ.get("LOAD_SECONDS", "10"))
HOT = 16  # shared records the writers fight over
DEADLINE_S = 3.0
WEIGHTS = {"read": 30, "search": 25, "list": 10, "replace": 20, "remember": 15}
TOKENS = ["alice"] * 12 + ["release-bot"] * 4  # both may write shared records


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def test_mixed_load(stack: Any, inspector: Inspector, run_id: str) -> None:
    folder = f"proof-load-{run_id}"
    word = marker_word(random.Random(run_id), "load")
    hot = [f"memory://workspace/notes/{folder}/hot-{n}.md" for n in range(HOT)]
    latencies: dict[str, list[float]] = defaultdict(list)
    outcomes: Counter[str] = Counter()
    unexpected: list[str] = []

    async def call(op: str, client: Any, tool: str, **arguments: Any) -> Result:
        """One timed tool call; a conflict is expected only where a replace raced."""
        started = time.perf_counter()
        result = await invoke(client, tool, **arguments)
        latencies[op].append(time.perf_counter() - started)
        outcomes[f"{op}:{result.code or 'ok'}"] += 1
        if result.is_error and (op, result.code) != ("replace", "revision_conflict"):
            unexpected.append(f"{op}: {result.structured}")
        return result

    async def one(client: Any, rng: random.Random, c: int, n: int) -> None:
        op = rng.choices(list(WEIGHTS), list(WEIGHTS.values()))[0]
        uri = rng.choice(hot)
        if op == "read":
            await call(op, client, "memory_read", uri=uri)
        elif op == "search":
            await call(op, client, "memory_search", query=f"{word} {rng.randrange(HOT)}")
        elif op == "list":
            prefix = f"memory://workspace/notes/{folder}/"
            await call(op, client, "memory_list", prefix=prefix, limit=20)
        elif op == "remember":
            await call(
                op,
                client,
                "memory_remember",
                uri=f"memory://workspace/memories/{folder}/c{c}.md",
                fact=f"fact {n}",
                idempotency_key=f"load-{run_id}-{c}-{n}",
            )
        else:  # read, then replace at the revision read
            current = await call("read", client, "memory_read", uri=uri)
            await call(
                op,
                client,
                "memory_write",
                uri=f"memory://record/{current.structured['id']}",
                content=f"{word} {uri[-6:-3]} replaced by {c}-{n}",
                expected_revision=current.structured["revision"],
            )

    async def worker(c: int, client: Any, until: float) -> None:
        rng = random.Random(f"{run_id}-{c}")
        n = 0
        while time.monotonic() < until:
            n += 1
            await one(client, rng, c, n)

    async def scenario() -> float:
        async with mcp_client(stack, "alice") as alice:
            for n, uri in enumerate(hot):
                made = await invoke(
                    alice, "memory_write", uri=uri, content=f"{word} {n}", expected_revision=0
                )
                assert not made.is_error, made.structured
        async with AsyncExitStack() as stack_of_clients:
            clients = [
                await stack_of_clients.enter_async_context(mcp_client(stack, TOKENS[c % 16]))
                for c in range(CLIENTS)
            ]
            started = time.monotonic()
            until = started + SECONDS
            await asyncio.gather(*(worker(c, clients[c], until) for c in range(CLIENTS)))
            return time.monotonic() - started

    elapsed = run(scenario())
    everything = [x for values in latencies.values() for x in values]
    report = {
        "clients": CLIENTS,
        "seconds": round(elapsed, 1),
        "calls": len(everything),
        "per_second": round(len(everything) / elapsed, 1),
        "p50_ms": round(1000 * statistics.median(everything)),
        "p95_ms": round(1000 * percentile(everything, 95)),
        "p99_ms": round(1000 * percentile(everything, 99)),
        "by_op_p50_p95_p99_ms": {
            op: [round(1000 * percentile(v, p)) for p in (50, 95, 99)]
            for op, v in sorted(latencies.items())
        },
        "outcomes": dict(sorted(outcomes.items())),
    }
    print(f"\nload: {report}")

    assert unexpected == [], unexpected[:10]
    assert all(outcomes[f"{op}:ok"] > 0 for op in WEIGHTS), outcomes  # every kind ran
    assert report["p99_ms"] < DEADLINE_S * 1000, report
    _history_is_consistent(inspector, folder)


def _history_is_consistent(inspector: Inspector, folder: str) -> None:
    """Every record the load touched: revisions 1..n, current row = revision n, one
    outbox row per commit."""
    rows = inspector.owner.execute(
        "SELECT m.id::text, m.revision, "
        "  (SELECT array_agg(r.revision ORDER BY r.revision) FROM memory.revisions r "
        "   WHERE r.memory_id = m.id), "
        "  (SELECT count(*) FROM memory.audit_outbox a WHERE a.memory_id = m.id) "
        "FROM memory.memories m WHERE m.path LIKE %s",
        (f"{folder}/%",),
    ).fetchall()
    assert rows
    for mid, revision, revisions, outbox in rows:
        assert revisions == list(range(1, revision + 1)), mid
        assert outbox == revision, mid
