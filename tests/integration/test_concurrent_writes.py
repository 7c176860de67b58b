"""Conditional writes and exactly-once merges under real concurrency."""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from memory_server.domain.errors import ToolError
from memory_server.operations.audit_events import purge_expired

pytestmark = pytest.mark.slow  # threads racing on real transactions


def race(n: int, fn) -> list[Any]:  # type: ignore[no-untyped-def]
    """Run ``fn(i)`` on ``n`` threads released together; collect results or ToolErrors."""
    barrier = threading.Barrier(n)

    def run(i: int) -> Any:
        barrier.wait()
        try:
            return fn(i)
        except ToolError as exc:
            return exc

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(run, range(n)))


def history(owner, record_id: str) -> list[tuple[int, str]]:  # type: ignore[no-untyped-def]
    return owner.execute(
        "SELECT revision, operation FROM memory.revisions WHERE memory_id = %s ORDER BY revision",
        (record_id,),
    ).fetchall()


@pytest.mark.parametrize("writers", [2, 32])
def test_one_writer_wins_at_a_revision(world, owner, writers: int) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    made = agent.write(uri="memory://workspace/notes/race.md", content="v1", expected_revision=0)
    outcomes = race(
        writers,
        lambda i: agent.write(
            uri="memory://workspace/notes/race.md", content=f"writer {i}", expected_revision=1
        ),
    )
    wins = [o for o in outcomes if isinstance(o, dict)]
    losses = [o for o in outcomes if isinstance(o, ToolError)]
    assert len(wins) == 1 and wins[0]["revision"] == 2
    assert len(losses) == writers - 1
    assert {(e.code, e.details.get("current_revision")) for e in losses} == {
        ("revision_conflict", 2)
    }
    winner = outcomes.index(wins[0])
    assert agent.read(uri="memory://workspace/notes/race.md")["content"] == f"writer {winner}"
    assert history(owner, made["id"]) == [(1, "create"), (2, "replace")]
    audit = owner.execute(
        "SELECT count(*) FROM memory.audit_outbox WHERE memory_id = %s", (made["id"],)
    ).fetchone()
    assert audit == (2,)


@pytest.mark.parametrize(
    ("tool", "by"), [("write", "path"), ("write", "id"), ("delete", "path"), ("delete", "id")]
)
def test_a_record_changed_while_a_change_waits_is_a_conflict(
    world, owner, tool: str, by: str
) -> None:  # type: ignore[no-untyped-def]
    """The replace or the delete finds the record at the expected revision, then waits
    for the row another transaction holds; that one commits revision 2 first. The
    change does nothing and answers the conflict at revision 2 (not not_found, not a
    lost update)."""
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    made = agent.write(uri="memory://workspace/notes/held.md", content="v1", expected_revision=0)
    uri = "memory://workspace/notes/held.md" if by == "path" else f"memory://record/{made['id']}"
    arguments: dict[str, Any] = {"uri": uri, "expected_revision": 1}
    if tool == "write":
        arguments["content"] = "mine"
    outcome: list[Any] = []
    with owner.transaction():
        owner.execute(
            "UPDATE memory.memories SET revision = 2, body = 'theirs' WHERE id = %s", (made["id"],)
        )
        waiting = threading.Thread(
            target=lambda: outcome.extend(race(1, lambda _: getattr(agent, tool)(**arguments)))
        )
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive()  # blocked on the row, after finding revision 1
    waiting.join(10)
    (error,) = outcome
    assert isinstance(error, ToolError)
    assert (error.code, error.details.get("current_revision")) == ("revision_conflict", 2)
    assert agent.read(uri=uri)["content"] == "theirs"
    assert history(owner, made["id"]) == [(1, "create")]


def test_a_move_to_a_destination_taken_while_it_waits_is_already_exists(world, owner) -> None:  # type: ignore[no-untyped-def]
    """The move finds its destination free, then waits on the address's unique key for
    a transaction that takes it; once that one commits the move answers already_exists
    (not unavailable) and the record stays where it was."""
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    made = agent.write(uri="memory://workspace/notes/from.md", content="v1", expected_revision=0)
    outcome: list[Any] = []
    with owner.transaction():
        owner.execute(
            "INSERT INTO memory.memories (workspace_id, owner_id, context_key, kind, path,"
            " title, body, revision, created_by, updated_by)"
            " SELECT workspace_id, owner_id, context_key, kind, 'to.md', title, 'theirs', 1,"
            " created_by, updated_by FROM memory.memories WHERE id = %s",
            (made["id"],),
        )
        waiting = threading.Thread(
            target=lambda: outcome.extend(
                race(
                    1,
                    lambda _: agent.move(
                        uri="memory://workspace/notes/from.md",
                        new_uri="memory://workspace/notes/to.md",
                        expected_revision=1,
                    ),
                )
            )
        )
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive()  # blocked on the destination's key
    waiting.join(10)
    (error,) = outcome
    assert isinstance(error, ToolError) and error.code == "already_exists"
    assert agent.read(uri="memory://workspace/notes/from.md")["revision"] == 1
    assert agent.read(uri="memory://workspace/notes/to.md")["content"] == "theirs"
    assert history(owner, made["id"]) == [(1, "create")]


def test_concurrent_creates_make_one_record(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    outcomes = race(
        16,
        lambda i: agent.write(
            uri="memory://workspace/notes/new.md", content=f"{i}", expected_revision=0
        ),
    )
    assert sum(isinstance(o, dict) for o in outcomes) == 1
    assert {o.code for o in outcomes if isinstance(o, ToolError)} == {"revision_conflict"}


def test_sequential_chain_has_no_lost_update(world, owner) -> None:  # type: ignore[no-untyped-def]
    """32 writers that each retry on conflict: every write lands exactly once, in order."""
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    made = agent.write(uri="memory://workspace/notes/log.md", content="", expected_revision=0)

    def append(i: int) -> int:
        while True:
            current = agent.read(uri="memory://workspace/notes/log.md")
            try:
                return agent.write(
                    uri="memory://workspace/notes/log.md",
                    content=current["content"] + f"[{i}]",
                    expected_revision=current["revision"],
                )["revision"]
            except ToolError as exc:
                assert exc.code == "revision_conflict"

    revisions = race(32, append)
    assert sorted(revisions) == list(range(2, 34))
    final = agent.read(uri="memory://workspace/notes/log.md")["content"]
    assert sorted(Counter(final.replace("]", "] ").split()).values()) == [1] * 32
    assert [r for r, _ in history(owner, made["id"])] == list(range(1, 34))


def test_remember_is_exactly_once(world, owner) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    args = {
        "uri": "memory://me/memories/prefs.md",
        "fact": "prefers dark mode",
        "idempotency_key": "retry-key-0001",
        "source": "chat",
    }
    outcomes = race(50, lambda i: agent.remember(**args))
    errors = [o for o in outcomes if isinstance(o, ToolError)]
    assert all(e.code == "unavailable" for e in errors)  # allowed for in-flight duplicates
    results = [o for o in outcomes if isinstance(o, dict)]
    assert sum(not r["replayed"] for r in results) == 1
    first = next(r for r in results if not r["replayed"])
    assert first["merged"] is True and first["revision"] == 1
    for _ in range(50):  # sequential retries after a "lost response"
        again = agent.remember(**args)
        assert again == {**first, "replayed": True}
    assert history(owner, first["id"]) == [(1, "merge")]
    assert agent.read(uri=args["uri"])["content"] == "- prefers dark mode\n"

    with pytest.raises(ToolError) as caught:
        agent.remember(**{**args, "fact": "prefers light mode"})
    assert caught.value.code == "idempotency_key_reused"
    with pytest.raises(ToolError) as caught:
        agent.remember(**{**args, "source": "another source"})
    assert caught.value.code == "idempotency_key_reused"

    # A new key with a fact already present: no new revision.
    same = agent.remember(**{**args, "idempotency_key": "retry-key-0002"})
    assert same["merged"] is False and same["revision"] == 1
    added = agent.remember(**{**args, "idempotency_key": "retry-key-0003", "fact": "uses vim"})
    assert added["merged"] is True and added["revision"] == 2
    assert agent.read(uri=args["uri"])["content"] == "- prefers dark mode\n- uses vim\n"


def test_concurrent_remembers_with_different_keys_all_merge(world, owner) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    outcomes = race(
        24,
        lambda i: agent.remember(
            uri="memory://workspace/memories/team.md",
            fact=f"fact number {i}",
            idempotency_key=f"key-{i:08d}",
        ),
    )
    assert all(isinstance(o, dict) and o["merged"] for o in outcomes), outcomes
    assert sorted(o["revision"] for o in outcomes) == list(range(1, 25))
    content = agent.read(uri="memory://workspace/memories/team.md")["content"]
    assert sorted(content.splitlines()) == sorted(f"- fact number {i}" for i in range(24))


def test_search_statistics_stay_exact_under_concurrent_changes(world, cluster) -> None:  # type: ignore[no-untyped-def]
    """16 agents create, replace, remember into, move and delete records in the same
    cells at once, with overlapping words: no deadlock, no lost count, and afterwards
    the statistics equal a recount of the records."""
    import random

    from tests.integration.test_search import recount_differences

    ws = world.workspace()
    people = [ws.person(f"p{i}") for i in range(4)]
    words = ["kestrel", "owl", "wren", "heron", "egret", "finch", "lark", "rook"]

    def work(i: int) -> int:
        rng = random.Random(i)
        agent = ws.agent(people[i % 4], "channel:birds" if i % 3 == 0 else "workspace")
        done = 0
        for n in range(12):
            ns = "me" if i % 2 else "workspace"
            uri = f"memory://{ns}/notes/t{i}/r{n}.md"
            text = " ".join(rng.choices(words, k=6))
            made = agent.write(uri=uri, content=text, expected_revision=0)
            step = rng.randrange(4)
            if step == 0:
                agent.write(uri=uri, content=" ".join(rng.choices(words, k=3)), expected_revision=1)
            elif step == 1:
                agent.remember(
                    uri=uri, fact=rng.choice(words), idempotency_key=f"concurrent-{i}-{n}"
                )
            elif step == 2:
                agent.move(
                    uri=uri, new_uri=f"memory://{ns}/memories/m{i}/{n}.md", expected_revision=1
                )
            else:
                agent.delete(uri=f"memory://record/{made['id']}", expected_revision=1)
            done += 1
        return done

    outcomes = race(16, work)
    assert outcomes == [12] * 16, [o for o in outcomes if not isinstance(o, int)]
    with psycopg.connect(cluster.admin_url, autocommit=True) as admin:
        assert recount_differences(admin) == []


# -- expiry and corrections under concurrency ---------------------------------------------


def db_clock(conn) -> datetime:  # type: ignore[no-untyped-def]
    """The database's wall clock (expiry is compared with it, not with ours)."""
    return conn.execute("SELECT clock_timestamp()").fetchone()[0]


def wait_for(condition, what: str, timeout_s: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    """Poll ``condition`` until it holds (never a fixed sleep standing in for it)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def lock_waiters(conn) -> int:  # type: ignore[no-untyped-def]
    """Lock requests not granted yet on the session's server (the request held back)."""
    return conn.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()[0]


def purge(cluster) -> int:  # type: ignore[no-untyped-def]
    """One run of the sweeper's purge, as the sweeper's role."""
    with psycopg.connect(cluster.auditor_url, autocommit=True) as auditor:
        return purge_expired(auditor)


def outbox_rows(owner, record_id: str) -> list[tuple[int, str]]:  # type: ignore[no-untyped-def]
    return owner.execute(
        "SELECT revision, operation FROM memory.audit_outbox WHERE memory_id = %s"
        " ORDER BY revision",
        (record_id,),
    ).fetchall()


# A change held back on the record's row lock from before the record's expiry until
# after it: each is what a client may send at the revision it read.
HELD_CHANGES = {
    "replace keeping the expiry": ("write", {"content": "mine", "expected_revision": 1}),
    "replace removing the expiry": (
        "write",
        {"content": "mine", "expected_revision": 1, "expires_at": None},
    ),
    "replace extending the expiry": (
        "write",
        {"content": "mine", "expected_revision": 1, "expires_at": "2035-01-01T00:00:00Z"},
    ),
    "delete": ("delete", {"expected_revision": 1}),
    "move": ("move", {"new_uri": "memory://workspace/notes/moved.md", "expected_revision": 1}),
}


@pytest.mark.parametrize("change", list(HELD_CHANGES))
def test_a_change_held_back_past_the_expiry_changes_nothing(
    world, owner, cluster, change: str
) -> None:  # type: ignore[no-untyped-def]
    """The change finds the record live (its transaction began before the expiry),
    then waits for the row another transaction holds until after the expiry; a reader
    meanwhile gets not_found and the sweeper's purge passes the locked row by. Once
    the row is free the change must find the record expired: it answers not_found
    and writes nothing, rather than committing a revision to a record every reader
    already saw gone (or bringing it back, with its history, by removing the expiry).
    The sweeper then purges it: one tombstone, one audit row per revision."""
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    uri = "memory://workspace/notes/fading.md"
    expiry = db_clock(owner) + timedelta(seconds=1.5)
    made = agent.write(uri=uri, content="v1", expected_revision=0, expires_at=expiry.isoformat())
    tool, arguments = HELD_CHANGES[change]
    # The held change waits past the expiry and the purge below: more than a call's
    # 3 s on a loaded machine, and what it must answer then is not a timeout.
    patient = replace(agent, deadline_s=30.0)
    outcome: list[Any] = []
    with psycopg.connect(cluster.owner_url) as holder:
        with holder.transaction():
            holder.execute("SELECT 1 FROM memory.memories WHERE id = %s FOR UPDATE", (made["id"],))
            waiting = threading.Thread(
                target=lambda: outcome.extend(
                    race(1, lambda _: getattr(patient, tool)(uri=uri, **arguments))
                )
            )
            waiting.start()
            wait_for(lambda: lock_waiters(owner) == 1, "the change to wait for the row")
            assert db_clock(owner) < expiry, "the change must have begun before the expiry"
            wait_for(lambda: db_clock(owner) > expiry, "the expiry")
            with pytest.raises(ToolError) as gone:
                agent.read(uri=uri)
            assert gone.value.code == "not_found"
            purge(cluster)  # passes by the row it cannot lock
            assert history(owner, made["id"]) == [(1, "create")]
        waiting.join(10)
    (answer,) = outcome
    assert isinstance(answer, ToolError) and answer.code == "not_found", answer
    for address in (uri, f"memory://record/{made['id']}"):
        with pytest.raises(ToolError) as still_gone:
            agent.read(uri=address)
        assert still_gone.value.code == "not_found"
    assert history(owner, made["id"]) == [(1, "create")]
    purge(cluster)
    assert history(owner, made["id"]) == [(1, "create"), (2, "expire")]
    assert outbox_rows(owner, made["id"]) == [(1, "create"), (2, "expire")]
    bodies = owner.execute(
        "SELECT count(*) FROM memory.revisions WHERE memory_id = %s AND body IS NOT NULL",
        (made["id"],),
    ).fetchone()
    assert bodies == (0,)


def test_a_remember_held_back_past_the_expiry_keeps_its_fact_in_a_new_record(
    world, owner, cluster
) -> None:  # type: ignore[no-untyped-def]
    """A correction that locked nothing yet when the record expired: it must not land
    in the expired record (acknowledged, yet in nobody's view: a lost fact). The
    record is gone from its expiry on, its path free, so the fact starts a new record;
    the old one is purged with its one tombstone."""
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    uri = "memory://me/memories/profile.md"
    expiry = db_clock(owner) + timedelta(seconds=1.5)
    old = agent.remember(
        uri=uri, fact="name is Alice", idempotency_key="seed-0001", expires_at=expiry.isoformat()
    )
    outcome: list[Any] = []
    with psycopg.connect(cluster.owner_url) as holder:
        with holder.transaction():
            holder.execute("SELECT 1 FROM memory.memories WHERE id = %s FOR UPDATE", (old["id"],))
            waiting = threading.Thread(
                target=lambda: outcome.extend(
                    race(
                        1,
                        lambda _: agent.remember(
                            uri=uri,
                            fact="name is Bob",
                            supersedes="name is Alice",
                            idempotency_key="fix-0001",
                        ),
                    )
                )
            )
            waiting.start()
            wait_for(lambda: lock_waiters(owner) == 1, "the remember to wait for the row")
            assert db_clock(owner) < expiry, "the remember must have begun before the expiry"
            wait_for(lambda: db_clock(owner) > expiry, "the expiry")
        waiting.join(10)
    (answer,) = outcome
    assert isinstance(answer, dict), answer
    assert answer["id"] != old["id"]
    assert (answer["revision"], answer["merged"], answer["superseded"]) == (1, True, False)
    assert agent.read(uri=uri)["content"] == "- name is Bob\n"
    assert history(owner, old["id"]) == [(1, "merge"), (2, "expire")]
    assert outbox_rows(owner, old["id"]) == [(1, "merge"), (2, "expire")]
    assert history(owner, answer["id"]) == [(1, "merge")]
    again = agent.remember(
        uri=uri, fact="name is Bob", supersedes="name is Alice", idempotency_key="fix-0001"
    )
    assert again == {**answer, "replayed": True}


# Four corrections and facts sent at once to a record that says "name is Alice" and
# "likes tea", each with its own key: two supersede the same line, one states one of
# the new facts plainly, one adds another fact.
RACING_FACTS = (
    {"fact": "name is Bob", "supersedes": "name is Alice"},
    {"fact": "name is Carol", "supersedes": "name is Alice"},
    {"fact": "name is Bob"},
    {"fact": "likes coffee"},
)


def test_a_supersede_racing_remembers_keeps_every_fact_once(world, owner) -> None:  # type: ignore[no-untyped-def]
    """Whatever the order: the old line goes exactly once (one result says
    superseded), every new fact is there once, nothing is duplicated, the revisions
    run on without a gap, one per merged result, with one outbox row each; a retry
    of each call replays its result."""
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    for round_ in range(8):
        uri = f"memory://me/memories/round-{round_}.md"
        first = agent.remember(uri=uri, fact="name is Alice", idempotency_key=f"a-{round_:06d}")
        agent.remember(uri=uri, fact="likes tea", idempotency_key=f"t-{round_:06d}")
        calls = [
            {"uri": uri, "idempotency_key": f"r{round_}-{i:06d}", **facts}
            for i, facts in enumerate(RACING_FACTS)
        ]
        outcomes = race(len(calls), lambda i, calls=calls: agent.remember(**calls[i]))
        assert all(isinstance(o, dict) for o in outcomes), outcomes
        lines = agent.read(uri=uri)["content"].splitlines()
        assert sorted(lines) == sorted(
            ["- likes tea", "- name is Bob", "- name is Carol", "- likes coffee"]
        ), (round_, lines)
        assert sum(o["superseded"] for o in outcomes) == 1, outcomes
        merged = sorted(o["revision"] for o in outcomes if o["merged"])
        assert merged == list(range(3, 3 + len(merged))), outcomes
        operations = history(owner, first["id"])
        by_revision = sorted((o for o in outcomes if o["merged"]), key=lambda o: o["revision"])
        assert operations == [
            (1, "merge"),
            (2, "merge"),
            *((o["revision"], "supersede" if o["superseded"] else "merge") for o in by_revision),
        ], operations
        assert outbox_rows(owner, first["id"]) == operations
        bodies = owner.execute(
            "SELECT body FROM memory.revisions WHERE memory_id = %s", (first["id"],)
        ).fetchall()
        for (body,) in bodies:
            assert len(body.splitlines()) == len(set(body.splitlines())), body
        for call, outcome in zip(calls, outcomes, strict=True):
            assert agent.remember(**call) == {**outcome, "replayed": True}
        assert history(owner, first["id"]) == operations
