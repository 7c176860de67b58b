"""Concurrency (docs/contract.md §5): 64 official MCP clients racing replacements, deletes,
moves and remembers on the same records.

Every acknowledged change must be in the history exactly once and every history
entry must be an acknowledged change (nothing lost, nothing phantom), revisions run
1, 2, 3 … without gaps, a merge is applied to the state it follows (no lost update,
no fact merged twice), and each commit has exactly one outbox row and reaches the
audit bus under exactly one event id (at least once: copies share the id).
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.proof.harness import (
    Inspector,
    Result,
    assert_each_commit_published_once,
    invoke,
    mcp_client,
    run,
)

pytestmark = pytest.mark.slow  # 64 racing clients: seconds per test

CLIENTS = 64
OPS_PER_CLIENT = 2
RETRIES = 4
MAX_BURSTS = 5
KINDS = ("replace", "move", "remember", "delete")
# Errors a racing client may legitimately get; each must have changed nothing.
RACE_ERRORS = {"revision_conflict", "not_found", "unavailable", "timeout"}


async def with_clients(
    stack: Any, tokens: list[str], body: Callable[[int, Any], Awaitable[Any]]
) -> list[Any]:
    """Connect every client first, then release them together."""
    start = asyncio.Event()
    async with AsyncExitStack() as stack_of_clients:
        clients = [await stack_of_clients.enter_async_context(mcp_client(stack, t)) for t in tokens]

        async def one(i: int) -> Any:
            await start.wait()
            return await body(i, clients[i])

        tasks = [asyncio.create_task(one(i)) for i in range(len(tokens))]
        start.set()
        return list(await asyncio.gather(*tasks))


def test_one_writer_wins_at_a_revision(stack: Any, inspector: Inspector, run_id: str) -> None:
    uri = f"memory://workspace/notes/proof-race-{run_id}/one-winner.md"

    async def scenario() -> tuple[Result, list[Result]]:
        async with mcp_client(stack, "alice") as alice:
            made = await invoke(alice, "memory_write", uri=uri, content="v1", expected_revision=0)

        async def write(i: int, client: Any) -> Result:
            return await invoke(
                client, "memory_write", uri=uri, content=f"writer {i}", expected_revision=1
            )

        tokens = ["alice" if i % 4 else "release-bot" for i in range(CLIENTS)]
        return made, await with_clients(stack, tokens, write)

    made, outcomes = run(scenario())
    wins = [i for i, o in enumerate(outcomes) if not o.is_error]
    assert len(wins) == 1, [o.structured for o in outcomes if not o.is_error]
    losers = {
        (o.code, o.structured["error"].get("current_revision")) for o in outcomes if o.is_error
    }
    assert losers == {("revision_conflict", 2)}
    history = inspector.history([made.structured["id"]])[made.structured["id"]]
    assert [(h["revision"], h["operation"], h["body"]) for h in history] == [
        (1, "create", "v1"),
        (2, "replace", f"writer {wins[0]}"),
    ]


@dataclass
class Ack:
    """One successful call, as the client saw it."""

    op: str
    tag: str
    result: dict[str, Any]
    read_revision: int | None = None
    content: str | None = None
    new_path: str | None = None
    fact: str | None = None


@dataclass
class Tally:
    acks: list[Ack] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)


def test_racing_replacements_deletes_moves_and_remembers(
    stack: Any, inspector: Inspector, run_id: str
) -> None:
    folder = f"proof-mix-{run_id}"
    hot = [f"memory://workspace/notes/{folder}/hot-{n}.md" for n in range(3)]
    same_key = {
        "uri": f"memory://workspace/memories/{folder}/same-key.md",
        "fact": "exactly once",
        "idempotency_key": f"same-{run_id}",
    }
    tally = Tally()
    between_bursts = asyncio.Barrier(CLIENTS)
    decided: dict[int, bool] = {}
    inspector.settle_audit()

    async def act(i: int, client: Any, token: str) -> None:
        rng = random.Random(f"{run_id}-{i}")
        if i % 4 == 0:  # a quarter of the clients also send one identical remember
            outcome = await invoke(client, "memory_remember", **same_key)
            record(outcome, Ack("same-key", f"c{i}", outcome.structured))
        # Bursts until every kind of change has committed at least once under the race
        # (a conflict-heavy burst may see no delete win), so the proof never runs idle.
        for burst in range(MAX_BURSTS):
            await between_bursts.wait()
            # Decided once per burst, by whichever client resumes first, so that every
            # client leaves on the same burst (else the barrier would wait for ever).
            if decided.setdefault(burst, set(KINDS) <= {a.op for a in tally.acks}):
                return
            for j in range(OPS_PER_CLIENT):
                await one_op(client, token, rng, f"b{burst}c{i}o{j}")

    async def one_op(client: Any, token: str, rng: random.Random, tag: str) -> None:
        uri = rng.choice(hot)
        # Remembers recreate what moves and deletes take away, keeping the paths hot.
        weights = {"replace": 3, "remember": 3, "move": 2, "delete": 2 if token == "alice" else 0}
        op = rng.choices(list(weights), list(weights.values()))[0]
        if op == "remember":
            fact = f"fact {tag}"
            outcome = await invoke(
                client, "memory_remember", uri=uri, fact=fact, idempotency_key=f"key-{run_id}-{tag}"
            )
            record(outcome, Ack(op, tag, outcome.structured, fact=fact))
            return
        for attempt in range(RETRIES):  # a careful client re-reads after a conflict
            code = await read_then_act(client, op, uri, f"{tag}a{attempt}")
            if code != "revision_conflict":
                break

    async def read_then_act(client: Any, op: str, uri: str, tag: str) -> str | None:
        current = await invoke(client, "memory_read", uri=uri)
        if current.is_error:
            tally.errors[f"read:{current.code}"] += 1
            return current.code
        rid, revision = current.structured["id"], current.structured["revision"]
        by_id = f"memory://record/{rid}"
        if op == "replace":
            content = f"replaced by {tag}"
            outcome = await invoke(
                client, "memory_write", uri=by_id, content=content, expected_revision=revision
            )
            record(outcome, Ack(op, tag, outcome.structured, revision, content=content))
        elif op == "move":
            new_path = f"{folder}/moved-{tag}.md"
            outcome = await invoke(
                client,
                "memory_move",
                uri=by_id,
                new_uri=f"memory://workspace/notes/{new_path}",
                expected_revision=revision,
            )
            record(outcome, Ack(op, tag, outcome.structured, revision, new_path=new_path))
        else:
            outcome = await invoke(client, "memory_delete", uri=by_id, expected_revision=revision)
            record(outcome, Ack(op, tag, outcome.structured, revision))
        return outcome.code

    def record(outcome: Result, ack: Ack) -> None:
        if outcome.is_error:
            tally.errors[f"{ack.op}:{outcome.code}"] += 1
        else:
            tally.acks.append(ack)

    async def scenario() -> None:
        async with mcp_client(stack, "alice") as alice:
            for uri in hot:
                made = await invoke(
                    alice, "memory_write", uri=uri, content="seed", expected_revision=0
                )
                assert not made.is_error, made.structured
        tokens = ["release-bot" if i % 4 == 3 else "alice" for i in range(CLIENTS)]
        await with_clients(stack, tokens, lambda i, c: act(i, c, tokens[i]))

    run(scenario())

    assert {code.split(":")[1] for code in tally.errors} <= RACE_ERRORS, tally.errors
    ops_done = Counter(a.op for a in tally.acks)
    print(f"race: committed {dict(ops_done)}; refused {dict(tally.errors)}")  # shown on failure
    assert all(ops_done[op] > 0 for op in KINDS), ops_done

    ids = _race_ids(inspector, folder)
    history = inspector.history(ids)
    _assert_history_is_gapless(history)
    _assert_history_matches_acks(history, tally.acks, folder)
    _assert_same_key_merged_once(tally.acks, history)
    _assert_current_state_is_last_revision(inspector, history)
    _assert_one_audit_event_per_commit(inspector, history)


def _race_ids(inspector: Inspector, folder: str) -> list[str]:
    rows = inspector.owner.execute(
        "SELECT DISTINCT memory_id::text FROM memory.revisions "
        "WHERE workspace_id = %s AND path LIKE %s",
        (inspector.workspace_id("acme"), f"{folder}/%"),
    ).fetchall()
    return [mid for (mid,) in rows]


def _assert_history_is_gapless(history: dict[str, list[dict[str, Any]]]) -> None:
    for mid, entries in history.items():
        revisions = [e["revision"] for e in entries]
        assert revisions == list(range(1, len(entries) + 1)), (mid, revisions)
        operations = [e["operation"] for e in entries]
        assert operations[0] in ("create", "merge"), (mid, operations)
        assert "delete" not in operations[:-1], (mid, operations)  # nothing after a delete
        if operations[-1] == "delete":  # delete purges every body
            assert all(e["body"] is None for e in entries), mid


def _assert_history_matches_acks(
    history: dict[str, list[dict[str, Any]]], acks: list[Ack], folder: str
) -> None:
    """A bijection between acknowledged commits and history entries."""
    expected: dict[tuple[str, int], tuple[str, Ack | None]] = {}

    def expect(mid: str, revision: int, operation: str, ack: Ack | None) -> None:
        assert (mid, revision) not in expected, f"two acks claim revision {revision} of {mid}"
        expected[(mid, revision)] = (operation, ack)

    for ack in acks:
        r = ack.result
        if ack.op == "delete":
            expect(r["id"], r["deleted_revision"] + 1, "delete", ack)
            assert r["deleted_revision"] == ack.read_revision
        elif ack.op in ("replace", "move"):
            assert r["revision"] == ack.read_revision + 1, ack  # built on what was read
            expect(r["id"], r["revision"], ack.op, ack)
        elif ack.op == "remember" or (ack.op == "same-key" and not r["replayed"]):
            assert r["merged"] and not r["replayed"], ack  # every race fact is new
            expect(r["id"], r["revision"], "merge", ack)

    actual = {
        (mid, e["revision"]): e
        for mid, entries in history.items()
        for e in entries
        if not (e["revision"] == 1 and e["operation"] == "create")  # the seeds
    }
    assert set(actual) == set(expected), {
        "unacknowledged commits": sorted(set(actual) - set(expected)),
        "acknowledged but missing": sorted(set(expected) - set(actual)),
    }
    for key, entry in actual.items():
        operation, ack = expected[key]
        assert entry["operation"] == operation, (key, entry, ack)
        previous = history[key[0]][key[1] - 2]["body"] if key[1] > 1 else ""
        if entry["body"] is None or ack is None:
            continue  # purged by a later delete: only who/when/what remain
        if operation == "replace":
            assert entry["body"] == ack.content, (key, entry["body"])
        elif operation == "move":
            assert (entry["path"], entry["body"]) == (ack.new_path, previous), key
        elif operation == "merge" and ack.fact is not None:
            base = previous if not previous or previous.endswith("\n") else previous + "\n"
            assert entry["body"] == base + f"- {ack.fact}\n", (key, previous, entry["body"])
        facts = [line for line in entry["body"].splitlines() if line.startswith("- ")]
        assert len(facts) == len(set(facts)), f"a fact merged twice in {key}"
    assert all(e["path"].startswith(f"{folder}/") for v in history.values() for e in v)


def _assert_same_key_merged_once(acks: list[Ack], history: dict[str, list[dict[str, Any]]]) -> None:
    results = [a.result for a in acks if a.op == "same-key"]
    first = [r for r in results if not r["replayed"]]
    assert len(first) == 1, results
    assert all(r == {**first[0], "replayed": True} for r in results if r["replayed"])
    entries = history[first[0]["id"]]
    assert [(e["revision"], e["operation"], e["body"]) for e in entries] == [
        (1, "merge", "- exactly once\n")
    ]


def _assert_current_state_is_last_revision(
    inspector: Inspector, history: dict[str, list[dict[str, Any]]]
) -> None:
    rows = inspector.owner.execute(
        "SELECT id::text, revision, path, body FROM memory.memories WHERE id = ANY(%s::uuid[])",
        (list(history),),
    ).fetchall()
    current = {mid: (revision, path, body) for mid, revision, path, body in rows}
    for mid, entries in history.items():
        last = entries[-1]
        if last["operation"] == "delete":
            assert mid not in current, mid
        else:
            assert current[mid] == (last["revision"], last["path"], last["body"]), mid


def _assert_one_audit_event_per_commit(
    inspector: Inspector, history: dict[str, list[dict[str, Any]]]
) -> None:
    commits = Counter(
        (mid, e["revision"], e["operation"]) for mid, entries in history.items() for e in entries
    )
    assert inspector.outbox(history) == commits  # one outbox row per commit
    # The sweeper publishes whatever the requests could not publish themselves.
    assert_each_commit_published_once(inspector, history)
