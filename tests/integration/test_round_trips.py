"""Round trips per tool call, counted on the client: the fixed cost every request pays
(docs/performance.md), and what the data package's pending results are for. A
round trip is a wait for the server inside a request transaction's pipeline: a
result asked for before the transaction ends, or the final sync that carries
``COMMIT``. Caller resolution, one more for every call, happens before the tool."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest


@contextmanager
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every wait for the server in pipeline mode, named by what caused it."""
    waits: list[str] = []
    fetch = psycopg.Cursor._fetch_pipeline
    leave = psycopg.Pipeline.__exit__
    sync = psycopg.Pipeline.sync

    def fetching(cursor: psycopg.Cursor[Any]) -> None:
        if not cursor.pgresult and cursor.connection._pipeline:
            waits.append("fetch")
        fetch(cursor)

    def leaving(pipeline: psycopg.Pipeline, *args: Any) -> None:
        waits.append("sync")
        leave(pipeline, *args)

    def syncing(pipeline: psycopg.Pipeline) -> None:
        waits.append("sync")
        sync(pipeline)

    with monkeypatch.context() as patch:
        patch.setattr(psycopg.Cursor, "_fetch_pipeline", fetching)
        patch.setattr(psycopg.Pipeline, "__exit__", leaving)
        patch.setattr(psycopg.Pipeline, "sync", syncing)
        yield waits


def trips(monkeypatch: pytest.MonkeyPatch, call: Callable[[], Any]) -> int:
    with counted(monkeypatch) as waits:
        call()
    return len(waits)


def test_each_tool_takes_the_round_trips_it_is_documented_to(world, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.agent(ws.person("alice"))
    a, b, c = (f"memory://workspace/notes/{name}.md" for name in ("a", "b", "c"))
    one = lambda f, **kw: trips(monkeypatch, lambda: f(**kw))  # noqa: E731

    # By path every change is one statement sent with COMMIT: one round trip.
    assert one(alice.write, uri=a, content="# A\nfirst", expected_revision=0) == 1
    made = alice.write(uri=b, content="# B", expected_revision=0)
    alice.write(uri=c, content="# C", expected_revision=0)
    assert one(alice.write, uri=a, content="# A\nsecond", expected_revision=1) == 1
    assert one(alice.delete, uri=c, expected_revision=1) == 1
    # By record id the record is read first, then the same statement: two.
    record = f"memory://record/{made['id']}"
    assert one(alice.write, uri=record, content="# B\nagain", expected_revision=1) == 2
    # A move reads the record, then moves it with its destination's look-up: two.
    moved = "memory://workspace/notes/b2.md"
    assert one(alice.move, uri=b, new_uri=moved, expected_revision=2) == 2
    assert one(alice.delete, uri=record, expected_revision=3) == 2

    # Reads: one statement, one round trip; with the history, which needs the
    # record's id, two; a search's ranker runs between its two statements.
    assert one(alice.read, uri=a) == 1
    assert one(alice.read, uri=a, history=True) == 2
    assert one(alice.list) == 1
    assert one(alice.search, query="second") == 2
    # Nothing to rank: no hydration is sent, and COMMIT takes the second.
    assert one(alice.search, query="zzzqqq") == 2

    # A merge: claim the key, find the record, create it, then the key's result
    # with COMMIT; on a record that exists, the row lock and the change as well.
    fact = "memory://workspace/memories/facts.md"
    assert one(alice.remember, uri=fact, fact="one", idempotency_key="merge-key-1") == 4
    assert one(alice.remember, uri=fact, fact="two", idempotency_key="merge-key-2") == 5
    # A replay: claim, then read the stored result, then COMMIT.
    assert one(alice.remember, uri=fact, fact="two", idempotency_key="merge-key-2") == 3


def test_the_count_sees_a_wait_added_inside_a_transaction(world, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A result asked for before the transaction ends is counted, as a read would be
    if an operation fetched each statement as it went."""
    from memory_server.data import records
    from memory_server.domain.addresses import parse_path_address
    from memory_server.domain.deadline import Deadline

    ws = world.workspace()
    alice = ws.agent(ws.person("alice"))
    uri = "memory://workspace/notes/a.md"
    alice.write(uri=uri, content="# A", expected_revision=0)
    address = parse_path_address(uri)

    def read_then_ask_inside() -> None:
        with alice.store.db.read(alice.caller, Deadline()) as tx:
            records.find(tx, alice.caller, address).get()
            records.find(tx, alice.caller, address).get()

    assert trips(monkeypatch, read_then_ask_inside) == 3
