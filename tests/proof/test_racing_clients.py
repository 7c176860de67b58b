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
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from memory_server.operations.audit_events import purge_expired

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


# -- corrections racing remembers -------------------------------------------------------

SUPERSEDE_RECORDS = 8
# What the eight clients of a record send at once, each with its own key (the record
# says "fact-{r}-0" … "fact-{r}-5"): four corrections of four lines, a second
# correction of line 0, the first correction's new fact stated plainly, two new facts.
SUPERSEDE_ROLES = (
    ("new-{r}-0", "fact-{r}-0"),
    ("new-{r}-1", "fact-{r}-1"),
    ("new-{r}-2", "fact-{r}-2"),
    ("new-{r}-3", "fact-{r}-3"),
    ("other-{r}-0", "fact-{r}-0"),
    ("new-{r}-0", None),
    ("extra-{r}-a", None),
    ("extra-{r}-b", None),
)


def _facts(body: str) -> list[str]:
    """The record's lines as facts (docs/contract.md: "- " items, trimmed)."""
    return [line.strip().removeprefix("- ").strip() for line in body.splitlines()]


def test_supersedes_racing_remembers_keep_every_fact_once(
    stack: Any, inspector: Inspector, run_id: str
) -> None:
    """64 clients, eight per record, correct and add facts at once with their own
    keys, then retry. Whichever order the database chose: a corrected line is gone and
    its new fact there once (of two corrections of one line, exactly one says
    superseded; the other keeps its fact as a plain one), no fact twice; each
    revision is one acknowledged call applied to the revision before it (a
    correction in place, a fact appended), gapless, one audit event each; a retry
    replays its result without a revision."""
    folder = f"memory://workspace/memories/proof-supersede-{run_id}"
    inspector.settle_audit()

    async def scenario() -> tuple[list[str], list[tuple[dict[str, Any], Result, Result]]]:
        async with mcp_client(stack, "alice") as alice:
            ids = []
            for r in range(SUPERSEDE_RECORDS):
                body = "".join(f"- fact-{r}-{j}\n" for j in range(6))
                made = await invoke(
                    alice, "memory_write", uri=f"{folder}/r{r}.md", content=body,
                    expected_revision=0,
                )  # fmt: skip
                assert not made.is_error, made.structured
                ids.append(made.structured["id"])

        async def send(i: int, client: Any) -> tuple[dict[str, Any], Result, Result]:
            r, role = divmod(i, len(SUPERSEDE_ROLES))
            fact, old = (part and part.format(r=r) for part in SUPERSEDE_ROLES[role])
            call = {"uri": f"{folder}/r{r}.md", "fact": fact, "idempotency_key": f"s-{run_id}-{i}"}
            if old is not None:
                call["supersedes"] = old
            first = await invoke(client, "memory_remember", **call)
            return call, first, await invoke(client, "memory_remember", **call)

        tokens = ["release-bot" if i % 3 else "alice" for i in range(CLIENTS)]
        return ids, await with_clients(stack, tokens, send)

    ids, sent = run(scenario())
    problems = [f"{call}: {first.structured}" for call, first, _ in sent if first.is_error]
    assert not problems, problems
    for call, first, retry in sent:
        assert retry.structured == {**first.structured, "replayed": True}, (call, retry)
    history = inspector.history(ids)
    _assert_history_is_gapless(history)
    for r, mid in enumerate(ids):
        mine = [
            (call, first.structured) for call, first, _ in sent if call["uri"].endswith(f"/r{r}.md")
        ]
        entries = history[mid]
        body = entries[-1]["body"]
        expected = [f"fact-{r}-4", f"fact-{r}-5", f"new-{r}-0", f"new-{r}-1", f"new-{r}-2",
                    f"new-{r}-3", f"other-{r}-0", f"extra-{r}-a", f"extra-{r}-b"]  # fmt: skip
        assert sorted(_facts(body)) == sorted(expected), (r, body)
        line_zero = [result for call, result in mine if call.get("supersedes") == f"fact-{r}-0"]
        assert sum(result["superseded"] for result in line_zero) == 1, line_zero
        acked = {result["revision"]: (call, result) for call, result in mine if result["merged"]}
        assert len(acked) == sum(result["merged"] for _, result in mine)  # one revision each
        assert sorted(acked) == [e["revision"] for e in entries[1:]], (sorted(acked), entries)
        for entry in entries[1:]:
            call, result = acked[entry["revision"]]
            before = entries[entry["revision"] - 2]["body"]
            assert entry["operation"] == ("supersede" if result["superseded"] else "merge")
            _assert_applied(before, entry["body"], call, result["superseded"])
        for call, result in mine:
            if not result["merged"]:  # already said at the revision it answered
                said = _facts(entries[result["revision"] - 1]["body"])
                assert call["fact"] in said and call.get("supersedes") not in said, call
    commits = Counter(
        (mid, e["revision"], e["operation"]) for mid, entries in history.items() for e in entries
    )
    assert inspector.outbox(ids) == commits
    assert_each_commit_published_once(inspector, ids)


def _assert_applied(before: str, after: str, call: dict[str, Any], superseded: bool) -> None:
    """``after`` is ``before`` with the call applied: the corrected line replaced in
    place by the new fact (dropped, when another line already says it), or the fact
    appended; nothing else moved."""
    old, new = before.splitlines(), after.splitlines()
    fact = f"- {call['fact']}"
    if not superseded:
        assert new == [*old, fact], (before, after, call)
        return
    at = _facts(before).index(call["supersedes"])
    if call["fact"] in _facts(before):
        assert new == old[:at] + old[at + 1 :], (before, after, call)
    else:
        assert new == [*old[:at], fact, *old[at + 1 :]], (before, after, call)
    assert len(set(new)) == len(new), after


# -- expiry racing replaces and the sweeper's purge -----------------------------------------

EXPIRING_RECORDS = 8
EXPIRY_REPLACERS = 16
EXPIRY_LEAD_S = 4.0  # from the records' creation to the first expiry
EXPIRY_SPREAD_S = 0.1  # between one record's expiry and the next's
# The replacers run from this long before each expiry until the record is gone (a
# rescued one: as long after it). A call through the stack takes a few hundred ms
# under this load, so the race spans several of them.
RACE_AROUND_S = 2.5
# When each odd record's rescuer sends its replace removing the expiry, relative to
# the expiry (ms): before the replacers start (rescued), among them, at the expiry
# (too late: its read or its replace finds the record gone).
RESCUE_OFFSETS_MS = (-3000, -1000, -300, 0)
PURGE_EVERY_S = 0.02


@dataclass
class Seen:
    """One read of a racing record: when it was sent and answered, and what it saw."""

    started: float
    ended: float
    found: bool


def test_expiry_racing_replaces_and_the_sweepers_purge(
    stack: Any, inspector: Inspector, run_id: str
) -> None:
    """Records expire while clients replace them at the revision they read (keeping
    the expiry), the sweeper's purge runs in a loop, and on every other record one
    client sends, around the expiry, a replace that removes it. Each record ends one
    legal way: rescued (that replace acknowledged, no expiry, never purged) or expired
    (purged once: one ``expire`` tombstone, no content left); never both, and no read
    finds a record after another read already found it gone. Every acknowledged
    replace is in the history once, revisions gapless, one audit event per revision."""
    folder = f"memory://workspace/notes/proof-expiry-{run_id}"
    acks: dict[str, list[tuple[int, str]]] = {}
    seen: dict[str, list[Seen]] = {}
    rescues: dict[str, Result] = {}
    errors: Counter[str] = Counter()
    inspector.settle_audit()

    async def scenario() -> list[str]:
        tokens = ["release-bot" if i % 4 == 3 else "alice" for i in range(EXPIRY_REPLACERS)]
        async with AsyncExitStack() as opened:
            clients = [await opened.enter_async_context(mcp_client(stack, t)) for t in tokens]
            start = inspector.clock() + timedelta(seconds=EXPIRY_LEAD_S)
            ids, expiry = [], {}
            for r in range(EXPIRING_RECORDS):
                at = start + timedelta(seconds=EXPIRY_SPREAD_S * r)
                made = await invoke(
                    clients[0], "memory_write", uri=f"{folder}/r{r}.md", content="seed",
                    expected_revision=0, expires_at=at.isoformat(),
                )  # fmt: skip
                assert not made.is_error, made.structured
                ids.append(made.structured["id"])
                expiry[made.structured["id"]] = at
                acks[made.structured["id"]], seen[made.structured["id"]] = [], []
            end = max(expiry.values()) + timedelta(seconds=RACE_AROUND_S)
            purger = asyncio.create_task(asyncio.to_thread(purge_until, end))
            tasks = [
                replace_around(i, clients[i], ids[i % len(ids)], expiry)
                for i in range(len(clients))
            ]
            tasks += [
                rescue(clients[r], ids[r], expiry[ids[r]], RESCUE_OFFSETS_MS[r // 2])
                for r in range(1, EXPIRING_RECORDS, 2)
            ]  # fmt: skip
            await asyncio.gather(*tasks)
            await purger
            return ids

    def purge_until(end: datetime) -> None:
        """The sweeper's purge, again and again through the race (as the stack's own
        sweeper, every few milliseconds instead of seconds)."""
        with psycopg.connect(inspector.auditor_url, autocommit=True) as auditor:
            while datetime.now(UTC) < end:
                purge_expired(auditor)
                time.sleep(PURGE_EVERY_S)  # a pace, not a wait: the server shares the process

    async def until(moment: datetime) -> None:
        """Until a wall-clock time (the schedule of the race, not a wait for a state)."""
        await asyncio.sleep(max(0.0, (moment - datetime.now(UTC)).total_seconds()))

    async def read(client: Any, mid: str) -> Result:
        started = time.monotonic()
        current = await invoke(client, "memory_read", uri=f"memory://record/{mid}")
        seen[mid].append(Seen(started, time.monotonic(), not current.is_error))
        return current

    async def replace_around(i: int, client: Any, mid: str, expiry: dict[str, datetime]) -> None:
        """From shortly before the expiry until the record is gone (or, rescued, until
        shortly after the expiry)."""
        await until(expiry[mid] - timedelta(seconds=RACE_AROUND_S))
        end = expiry[mid] + timedelta(seconds=RACE_AROUND_S)
        n = 0
        while not (datetime.now(UTC) > end and mid in rescues):
            assert datetime.now(UTC) < end + timedelta(seconds=30), f"{mid} never went"
            current = await read(client, mid)
            if current.is_error:
                errors[f"read:{current.code}"] += 1
                return
            content = f"c{i}-{n}"
            n += 1
            out = await invoke(
                client, "memory_write", uri=f"memory://record/{mid}", content=content,
                expected_revision=current.structured["revision"],
            )  # fmt: skip
            if out.is_error:
                errors[f"replace:{out.code}"] += 1
            else:
                assert out.structured["revision"] == current.structured["revision"] + 1
                acks[mid].append((out.structured["revision"], content))

    async def rescue(client: Any, mid: str, at: datetime, offset_ms: int) -> None:
        await until(at + timedelta(milliseconds=offset_ms))
        for _ in range(50):  # a careful client re-reads after a conflict
            current = await read(client, mid)
            if current.is_error:
                rescues[mid] = current
                return
            out = await invoke(
                client, "memory_write", uri=f"memory://record/{mid}", content="rescued",
                expected_revision=current.structured["revision"], expires_at=None,
            )  # fmt: skip
            if out.code != "revision_conflict":
                rescues[mid] = out
                if not out.is_error:
                    acks[mid].append((out.structured["revision"], "rescued"))
                return
        raise AssertionError("the rescue never got past the conflicts")

    ids = run(scenario())
    rescued = {mid for mid, out in rescues.items() if not out.is_error}
    committed = sum(len(done) for done in acks.values())
    latency = sorted(s.ended - s.started for reads in seen.values() for s in reads)
    print(
        f"expiry race: {committed} replaced, {len(rescued)} rescued; refused {dict(errors)}; read p50 {latency[len(latency) // 2]:.3f}s"
    )
    assert {code.split(":")[1] for code in errors} <= RACE_ERRORS, errors
    assert all(out.code == "not_found" for out in rescues.values() if out.is_error), rescues
    # Both outcomes happened: the first rescue came before any contention, the last
    # at the expiry itself.
    assert ids[1] in rescued and ids[EXPIRING_RECORDS - 1] not in rescued, rescues
    inspector.purge_until_gone(mid for mid in ids if mid not in rescued)
    history = inspector.history(ids)
    _assert_history_is_gapless_with_expiry(history)
    rows: dict[str, datetime | None] = dict(
        inspector.owner.execute(
            "SELECT id::text, expires_at FROM memory.memories WHERE id = ANY(%s::uuid[])", (ids,)
        ).fetchall()
    )
    for mid in ids:
        operations = [e["operation"] for e in history[mid]]
        if mid in rescued:
            assert "expire" not in operations and rows.get(mid, "gone") is None, (mid, operations)
        else:
            assert operations[-1] == "expire" and mid not in rows, (mid, operations)
            assert all(e["body"] is None for e in history[mid]), mid
        replaced = [(e["revision"], e["body"]) for e in history[mid] if e["operation"] == "replace"]
        if mid in rescued:
            assert sorted(acks[mid]) == replaced, mid
        else:
            assert sorted(r for r, _ in acks[mid]) == [r for r, _ in replaced], mid
        reads = seen[mid]
        gone = min((s.ended for s in reads if not s.found), default=None)
        back = [s for s in reads if s.found and gone is not None and s.started > gone]
        assert not back, f"{mid} was found again after a read found it gone"
    assert {mid for mid in ids if any(not s.found for s in seen[mid])} >= set(ids) - rescued
    commits = Counter(
        (mid, e["revision"], e["operation"]) for mid, entries in history.items() for e in entries
    )
    assert inspector.outbox(ids) == commits
    assert_each_commit_published_once(inspector, ids)


def _assert_history_is_gapless_with_expiry(history: dict[str, list[dict[str, Any]]]) -> None:
    for mid, entries in history.items():
        assert [e["revision"] for e in entries] == list(range(1, len(entries) + 1)), mid
        operations = [e["operation"] for e in entries]
        assert operations[0] == "create" and set(operations[1:-1]) <= {"replace"}, operations
        assert operations[-1] in ("replace", "expire", "create"), operations
