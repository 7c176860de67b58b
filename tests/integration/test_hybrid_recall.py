"""Hybrid recall on real PostgreSQL with the real local model: records embedded after
their writes commit, found by meaning under the same view as by words, never widened,
never stale, and words alone (flagged) when the embedder cannot answer."""

from __future__ import annotations

import math
import random
import secrets
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import psycopg
import pytest
from memory_local.dev import DevStack
from memory_local.embedder import LocalEmbedder
from memory_local.embedding_worker import EmbeddingWorker
from memory_server.data import embeddings as data
from memory_server.data.migrate import drop_database
from memory_server.data.pool import Database, request_settings
from memory_server.data.provision import Passwords, provision
from memory_server.data.statements import query
from memory_server.domain.addresses import KINDS
from memory_server.domain.caller import Caller
from memory_server.domain.embedding import (
    EmbedderError,
    EmbeddingSpaceMismatch,
    EmbeddingUnavailable,
)
from memory_server.domain.limits import (
    SEARCH_FUSION_CANDIDATES,
    SEARCH_MEANING_INDEX_CANDIDATES,
)
from memory_server.edge.runtime import build_service, require_embeddings
from memory_server.operations.embeddings import EmbedJob, backfill, statement_transactions
from memory_server.operations.store import Store

from tests.builders import Agent, World

DEPLOYS = "memory://workspace/memories/deploys.md"


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


@pytest.fixture
def hybrid(store: Store, embedder: LocalEmbedder) -> Store:
    return Store(store.db, secrets.token_bytes(32), embedder=embedder)


class Down:
    """An embedder whose service is throttling (as Bedrock's ThrottlingException)."""

    def __init__(self, real: LocalEmbedder) -> None:
        self.model, self.dimensions, self.calls = real.model, real.dimensions, 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        raise EmbeddingUnavailable("throttled", "rate exceeded")


def queued(owner: psycopg.Connection, *ids: str) -> dict[str, int]:
    rows = owner.execute(
        "SELECT memory_id::text, attempts FROM memory.embedding_queue WHERE memory_id::text = ANY(%s)",
        (list(ids),),
    ).fetchall()
    return dict(rows)


def embedded(owner: psycopg.Connection, record: str) -> tuple[str, int] | None:
    return owner.execute(
        "SELECT model, dimensions FROM memory.search_embeddings WHERE memory_id = %s", (record,)
    ).fetchone()


def test_a_record_is_found_by_words_at_once_and_by_meaning_after_its_job(
    world: World, hybrid: Store, owner: psycopg.Connection
) -> None:
    ws = world.workspace()
    alice = ws.person("alice")
    agent = Agent(hybrid, ws.caller(alice))
    made = agent.write(
        uri=DEPLOYS,
        content="Production releases go out Tuesday to Thursday; never ship on a Friday.",
        expected_revision=0,
    )
    agent.write(
        uri="memory://workspace/memories/lunch.md",
        content="The team orders pizza for lunch on Wednesdays.",
        expected_revision=0,
    )
    # By its words at once (the job has not run yet): lexical hits, nothing by meaning.
    found = agent.search(query="releases Friday")
    assert [h["uri"] for h in found["hits"]][:1] == [DEPLOYS]
    assert found["hits"][0]["matched_by"] == "words" and found["recall"] == "hybrid"
    assert queued(owner, made["id"]) == {made["id"]: 0}
    # A paraphrase sharing no word with the record finds nothing yet.
    question = "which weekday is forbidden for putting code live?"
    assert DEPLOYS not in [h["uri"] for h in agent.search(query=question)["hits"]]

    EmbedJob(hybrid.db, ws.caller(alice), hybrid.embedder)()  # what runs after the response
    assert queued(owner, made["id"]) == {}
    assert embedded(owner, made["id"]) == (hybrid.embedder.model, 384)
    hits = agent.search(query=question)["hits"]
    assert hits[0]["uri"] == DEPLOYS and hits[0]["matched_by"] == "meaning"
    both = agent.search(query="when do we ship releases")["hits"][0]
    assert (both["uri"], both["matched_by"]) == (DEPLOYS, "both")


def test_meaning_never_widens_the_view(world: World, hybrid: Store) -> None:
    ws = world.workspace()
    alice, bob = ws.person("alice"), ws.person("bob")
    ws.register("dm:alice-bob", alice, bob)
    secret = "memory://workspace/notes/rollout.md"
    in_dm = ws.caller(alice, "dm:alice-bob")
    Agent(hybrid, in_dm).write(
        uri=secret,
        content="The 2.0 launch date is the fourteenth; keep it between us.",
        expected_revision=0,
    )
    Agent(hybrid, ws.caller(bob)).write(
        uri="memory://me/notes/diary.md",
        content="Bob's own diary: dentist on Monday.",
        expected_revision=0,
    )
    EmbedJob(hybrid.db, in_dm, hybrid.embedder)()
    EmbedJob(hybrid.db, ws.caller(bob), hybrid.embedder)()
    question = "when is the big version shipping?"
    # The same person, from the workspace or a channel: not a word of the DM.
    for context in ("workspace", "channel:general"):
        uris = [
            h["uri"]
            for h in Agent(hybrid, ws.caller(alice, context)).search(query=question)["hits"]
        ]
        assert secret not in uris
        assert "memory://me/notes/diary.md" not in uris  # bob's personal notes, never
    assert [h["uri"] for h in Agent(hybrid, in_dm).search(query=question)["hits"]][:1] == [secret]


class Watching:
    """The real model, and what PostgreSQL was doing while it ran: the statements of
    backends in a transaction, seen from another connection (this test process's own
    server, so only this test's)."""

    def __init__(self, real: LocalEmbedder, cluster) -> None:  # type: ignore[no-untyped-def]
        self.model, self.dimensions, self._real = real.model, real.dimensions, real
        self._url = cluster.admin_url  # sees every role's statements
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with psycopg.connect(self._url) as conn:
            rows = conn.execute(
                "SELECT query FROM pg_stat_activity"
                " WHERE state <> 'idle' AND backend_type = 'client backend'"
                " AND pid <> pg_backend_pid()"
            ).fetchall()
        self.seen += [str(r[0]) for r in rows]
        return self._real.embed(texts)


def test_the_words_are_ranked_while_the_question_is_embedded(
    world: World, hybrid: Store, cluster
) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    watching = Watching(hybrid.embedder, cluster)  # type: ignore[arg-type]
    store = Store(hybrid.db, hybrid.cursor_secret, embedder=watching)  # type: ignore[arg-type]
    agent = Agent(store, ws.caller(ws.person("alice")))
    agent.write(uri=DEPLOYS, content="Releases go out on Tuesdays.", expected_revision=0)
    found = agent.search(query="releases Tuesdays")
    assert found["recall"] == "hybrid" and found["hits"][0]["uri"] == DEPLOYS
    # The search's transaction was open, its words' statement sent, before the model ran.
    assert any("memory.search_candidates(" in q for q in watching.seen), watching.seen


def test_a_vector_of_an_older_text_is_never_stored(
    world: World, hybrid: Store, owner: psycopg.Connection, cluster
) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.person("alice")
    agent = Agent(hybrid, ws.caller(alice))
    made = agent.write(uri=DEPLOYS, content="Deploys on Tuesdays.", expected_revision=0)
    with psycopg.connect(cluster.owner_url) as worker:
        claimed = [c for c in data.claim(worker, 1000, 5) if str(c.id) == made["id"]]
        worker.commit()  # the claim holds no lock while the model runs
        assert claimed, "the record is queued"
        # The record changes while its old text is being embedded.
        agent.write(uri=DEPLOYS, content="Deploys on Mondays only.", expected_revision=1)
        vectors = hybrid.embedder.embed([claimed[0].content])
        stored = data.store(
            worker, [(claimed[0], vectors[0])], model=hybrid.embedder.model, dimensions=384
        )
        worker.commit()
    assert stored == 0 and embedded(owner, made["id"]) is None
    assert made["id"] in queued(owner, made["id"])  # still waiting, for the new text
    backfill(cluster.owner_url, hybrid.embedder)
    assert embedded(owner, made["id"]) is not None and queued(owner, made["id"]) == {}


def test_an_embedder_that_cannot_answer_degrades_to_words_flagged(
    world: World, hybrid: Store, owner: psycopg.Connection, caplog: pytest.LogCaptureFixture
) -> None:
    ws = world.workspace()
    alice = ws.person("alice")
    down = Down(hybrid.embedder)  # type: ignore[arg-type]
    degraded = Store(hybrid.db, hybrid.cursor_secret, embedder=down)  # type: ignore[arg-type]
    agent = Agent(degraded, ws.caller(alice))
    made = agent.write(uri=DEPLOYS, content="Releases never on Fridays.", expected_revision=0)
    EmbedJob(degraded.db, ws.caller(alice), down)()  # the write stands; its vector waits
    assert queued(owner, made["id"]) == {made["id"]: 1}
    found = agent.search(query="Fridays releases")
    assert found["recall"] == "lexical (throttled)"
    assert [h["uri"] for h in found["hits"]] == [DEPLOYS]
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    # Back up: the record's next job (or a backfill) embeds it.
    EmbedJob(hybrid.db, ws.caller(alice), hybrid.embedder)()
    assert queued(owner, made["id"]) == {}


def test_backfill_embeds_everything_with_progress_and_a_new_model_starts_over(
    world: World, hybrid: Store, owner: psycopg.Connection, cluster
) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    agent = Agent(hybrid, ws.caller(ws.person("alice")))
    ids = [
        agent.write(
            uri=f"memory://workspace/notes/n{i}.md",
            content=f"Note {i} in Português, 日本語 も",
            expected_revision=0,
        )["id"]
        for i in range(40)
    ]
    seen: list[tuple[int, int | None]] = []
    stored, left = backfill(
        cluster.owner_url, hybrid.embedder, progress=lambda d, t: seen.append((d, t))
    )
    assert stored >= 40 and left == 0
    assert seen[0][0] == 0 and seen[-1][0] == stored and seen[-1][1] is not None
    assert all(embedded(owner, i) for i in ids)
    # Another model: every record is queued again, and none compared across models.
    with psycopg.connect(cluster.owner_url, autocommit=True) as conn:
        assert data.requeue(conn, "another-model@0", 384) >= 40
    stored, left = backfill(cluster.owner_url, hybrid.embedder)  # back to this model
    assert stored >= 40 and left == 0


class Resized:
    """The same model configured with another dimension (Titan's EMBEDDING_DIMENSIONS
    changed): another vector space under the same model id."""

    def __init__(self, real: LocalEmbedder, dimensions: int) -> None:
        self.model, self.dimensions, self._real = real.model, dimensions, real

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [v + [0.0] * (self.dimensions - len(v)) for v in self._real.embed(texts)]


def corrupt_model() -> LocalEmbedder:
    """EMBEDDER's factory for a model file whose checksum is not the pinned one."""
    return LocalEmbedder(model_sha256="0" * 64)


def service_env(cluster, embedder: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {
        "DATABASE_URL": cluster.runtime_url,
        "CURSOR_SECRET": secrets.token_urlsafe(32),
        "EMBEDDER": embedder,
    }


def test_a_corrupt_model_file_stops_the_service_at_start(cluster) -> None:  # type: ignore[no-untyped-def]
    spec = f"python:{__name__}:corrupt_model"
    with pytest.raises(EmbedderError, match=r"SHA-256 .* expected"):
        build_service(service_env(cluster, spec))


def test_vectors_of_another_model_or_dimension_refuse_the_start_naming_the_re_embed(
    world: World, hybrid: Store, owner: psycopg.Connection, cluster
) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    agent = Agent(hybrid, ws.caller(ws.person("alice")))
    made = agent.write(
        uri=DEPLOYS,
        content="Production releases go out Tuesday to Thursday; never ship on a Friday.",
        expected_revision=0,
    )
    backfill(cluster.owner_url, hybrid.embedder)
    assert hybrid.embedder is not None
    require_embeddings(hybrid.db, hybrid.embedder)  # one space, the configured one
    local = f"python:{LocalEmbedder.__module__}:LocalEmbedder"
    build_service(service_env(cluster, local)).db.close()

    # A model change: the stored vector is now another model's.
    owner.execute(
        "UPDATE memory.search_embeddings SET model = 'older-model@1' WHERE memory_id = %s",
        (made["id"],),
    )
    with pytest.raises(EmbeddingSpaceMismatch) as refused:
        require_embeddings(hybrid.db, hybrid.embedder)
    message = str(refused.value)
    assert "older-model@1 (384 dimensions)" in message
    assert "`memoryctl embeddings backfill`" in message
    with pytest.raises(EmbeddingSpaceMismatch, match="memoryctl embeddings backfill"):
        build_service(service_env(cluster, local))  # the service itself, at start
    # Until then no search compares across spaces: the other model's vector is not read.
    question = "which weekday is forbidden for putting code live?"
    assert DEPLOYS not in [h["uri"] for h in agent.search(query=question)["hits"]]

    # The re-embed the message names puts every record in the configured space.
    stored, left = backfill(cluster.owner_url, hybrid.embedder)
    assert stored >= 1 and left == 0
    require_embeddings(hybrid.db, hybrid.embedder)
    assert embedded(owner, made["id"]) == (hybrid.embedder.model, 384)
    assert agent.search(query=question)["hits"][0]["uri"] == DEPLOYS

    # A dimension change under the same model id is another space too, and the
    # backfill for it re-embeds every record (not only those of another model).
    resized = Resized(hybrid.embedder, 512)  # type: ignore[arg-type]
    with pytest.raises(EmbeddingSpaceMismatch, match="384 dimensions"):
        require_embeddings(hybrid.db, resized)  # type: ignore[arg-type]
    with psycopg.connect(cluster.owner_url, autocommit=True) as conn:
        assert data.requeue(conn, resized.model, 512) >= 1
        assert data.requeue(conn, hybrid.embedder.model, 384) >= 1
    backfill(cluster.owner_url, hybrid.embedder)
    require_embeddings(hybrid.db, hybrid.embedder)


def test_make_dev_serves_at_once_on_the_float_paths_vectors_and_embeds_again(
    world: World,
    hybrid: Store,
    owner: psycopg.Connection,
    cluster,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path,  # type: ignore[no-untyped-def]
) -> None:
    # A .dev/ from before the 8-bit graph: its vectors carry the float path's model id.
    ws = world.workspace()
    agent = Agent(hybrid, ws.caller(ws.person("alice")))
    made = agent.write(uri=DEPLOYS, content="Releases go out on Tuesdays.", expected_revision=0)
    backfill(cluster.owner_url, hybrid.embedder)
    assert hybrid.embedder is not None and hybrid.embedder.model.endswith("+q8")
    before = hybrid.embedder.model.removesuffix("+q8")
    owner.execute(
        "UPDATE memory.search_embeddings SET model = %s WHERE memory_id = %s", (before, made["id"])
    )
    with pytest.raises(EmbeddingSpaceMismatch):
        require_embeddings(hybrid.db, hybrid.embedder)
    other = owner.execute(
        "SELECT count(*) FROM memory.search_embeddings WHERE model <> %s",
        (hybrid.embedder.model,),
    ).fetchone()
    monkeypatch.setenv("EMBEDDER", f"python:{LocalEmbedder.__module__}:LocalEmbedder")
    DevStack(tmp_path)._forget_other_space(cluster.owner_url)  # before the handler starts
    said = capsys.readouterr().out
    assert other is not None and other[0] >= 1
    assert f"stored vectors are of {before} (384): {other[0]:,} deleted" in said
    assert embedded(owner, made["id"]) is None  # only the other space's vectors went
    require_embeddings(hybrid.db, hybrid.embedder)  # so the handler starts at once
    assert agent.search(query="which day do releases go out")["hits"][0]["uri"] == DEPLOYS
    backfill(cluster.owner_url, hybrid.embedder)  # what the embedding worker runs first
    assert embedded(owner, made["id"]) == (hybrid.embedder.model, 384)


@pytest.mark.alone  # within a second: no other test beside it
def test_make_devs_embedding_worker_embeds_each_write_within_a_second_and_ends_with_stdin(
    world: World, store: Store, owner: psycopg.Connection, cluster, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("EMBEDDER", f"python:{LocalEmbedder.__module__}:LocalEmbedder")
    ws = world.workspace()
    agent = Agent(store, ws.caller(ws.person("alice")))  # a store that embeds nothing itself
    first = agent.write(uri=DEPLOYS, content="We ship on Tuesdays.", expected_revision=0)
    worker = EmbeddingWorker(cluster.owner_url, quiet=True)
    try:
        until = time.monotonic() + 60  # the model loads, then the backfill runs
        while embedded(owner, first["id"]) is None and time.monotonic() < until:
            time.sleep(0.05)
        assert embedded(owner, first["id"]) is not None
        # Idle now: a new write is found by meaning within a second.
        later = agent.write(
            uri="memory://workspace/memories/lunch.md",
            content="The team orders pizza on Wednesdays.",
            expected_revision=0,
        )
        written = time.monotonic()
        while embedded(owner, later["id"]) is None and time.monotonic() < written + 5:
            time.sleep(0.02)
        assert embedded(owner, later["id"]) is not None
        assert time.monotonic() - written < 1.0
    finally:
        worker.close()
    assert worker.process.returncode == 0


# -- The meaning side's two ways: the vector index first, the exact scan of the view --
# Vectors here are made up (seeded, unit length) and written as the owner, so which
# records are nearest the question is known: the model would make that a guess. Each
# test has a database of its own: how many vectors the index holds decides the way.

MADE_UP = "made-up-model@0"


@dataclass
class Alone:
    """A database of one test's own: its world, and its owner's URL."""

    world: World
    owner: psycopg.Connection
    owner_url: str


@pytest.fixture
def alone(cluster) -> Iterator[Alone]:  # type: ignore[no-untyped-def]
    database = f"memalone_{secrets.token_hex(6)}"
    passwords = Passwords(cluster.passwords["owner"], cluster.passwords["runtime"])
    made = provision(cluster.admin_url, passwords, database=database)
    db = Database(made.runtime_url, min_size=1, max_size=2)
    try:
        with psycopg.connect(made.owner_url, autocommit=True) as owner:
            store = Store(db, cursor_secret=secrets.token_bytes(32))
            yield Alone(World(store, owner), owner, made.owner_url)
    finally:
        db.close()
        drop_database(cluster.admin_url, database)


def made_up_unit(rng: random.Random, near: Sequence[float] | None = None) -> list[float]:
    """A random unit vector of 384 dimensions; ``near``: within a small angle of that
    one (cosine about 0.98; two random ones are about 0)."""
    made = [rng.gauss(0.0, 1.0) for _ in range(384)]
    if near is not None:
        made = [x + 0.01 * n for x, n in zip(near, made, strict=True)]
    length = math.sqrt(sum(x * x for x in made))
    return [x / length for x in made]


def give_vectors(owner: psycopg.Connection, vectors: dict[str, list[float]]) -> None:
    """Store these vectors as the owner, take the records off the queue, and analyse
    the table (what the index holds is read from its statistics)."""
    with owner.cursor() as cur:
        cur.executemany(
            "INSERT INTO memory.search_embeddings"
            " (memory_id, model, dimensions, content_hash, embedding)"
            " VALUES (%s, %s, 384, '\\x00', %s::public.vector)",
            [(i, MADE_UP, data.vector_literal(v)) for i, v in vectors.items()],
        )
    owner.execute("DELETE FROM memory.embedding_queue")
    owner.execute("ANALYZE memory.search_embeddings")


def by_meaning(
    owner_url: str,
    caller: Caller,
    question: Sequence[float],
    index_candidates: int = SEARCH_MEANING_INDEX_CANDIDATES,
    kinds: Sequence[str] = KINDS,
) -> tuple[list[str], dict[str, int | bool]]:
    """The meaning side as a request runs it (the caller's settings, the statement of
    data/embeddings.py), and what it read in the transaction: scans of the
    384-dimension vector index, and whether the vectors' table was read any other way
    (a sequential scan, its primary key: the exact scan)."""
    with psycopg.connect(owner_url) as conn:
        conn.execute(query("request_settings"), request_settings(caller, 60_000))
        found = conn.execute(
            query("search_by_meaning"),
            {
                "vector": data.vector_literal(question),
                "model": MADE_UP,
                "owners": caller.visible_owners(),
                "kinds": list(kinds),
                "limit": SEARCH_FUSION_CANDIDATES,
                "index_candidates": index_candidates,
            },
        ).fetchall()
        index = conn.execute(
            "SELECT pg_stat_get_xact_numscans('memory.search_embeddings_384'::regclass)"
        ).fetchone()
        table = conn.execute(
            "SELECT pg_stat_get_xact_numscans('memory.search_embeddings'::regclass)"
            " + sum(pg_stat_get_xact_numscans(indexrelid)) FROM pg_index"
            " WHERE indrelid = 'memory.search_embeddings'::regclass"
            " AND indexrelid <> 'memory.search_embeddings_384'::regclass"
        ).fetchone()
    assert index is not None and table is not None
    return [str(row[0]) for row in found], {"index": index[0], "exact": table[0] > 0}


def notes(agent: Agent, prefix: str, count: int, namespace: str = "workspace") -> list[str]:
    return [
        agent.write(
            uri=f"memory://{namespace}/notes/{prefix}-{i}.md",
            content=f"{prefix} note {i}",
            expected_revision=0,
        )["id"]
        for i in range(count)
    ]


def nearest(
    ids: Sequence[str], vectors: dict[str, list[float]], question: Sequence[float]
) -> list[str]:
    return sorted(ids, key=lambda i: -sum(x * y for x, y in zip(vectors[i], question, strict=True)))


def test_the_index_answers_when_enough_of_the_view_is_near_and_never_widens_it(
    alone: Alone,
) -> None:
    rng = random.Random(30)
    question = made_up_unit(rng)
    ws = alone.world.workspace()
    store = alone.world.store
    alice, bob = ws.person("alice"), ws.person("bob")
    ws.register("dm:alice-bob", alice, bob)
    seen = notes(Agent(store, ws.caller(alice)), "seen", SEARCH_FUSION_CANDIDATES + 30)
    # The nearest vectors of all are outside alice's view from the workspace: a DM's
    # records and bob's personal ones.
    dm = notes(Agent(store, ws.caller(alice, "dm:alice-bob")), "dm", 10)
    diary = notes(Agent(store, ws.caller(bob)), "diary", 10, namespace="me")
    vectors = {i: made_up_unit(rng) for i in seen}
    vectors.update({i: made_up_unit(rng, near=question) for i in dm + diary})
    give_vectors(alone.owner, vectors)

    found, scans = by_meaning(alone.owner_url, ws.caller(alice), question)
    assert scans == {"index": 1, "exact": False}  # the index's proposal was the answer
    assert not set(found) & set(dm + diary)
    # The exact scan of the view finds the same records in the same order.
    exact, scans = by_meaning(alone.owner_url, ws.caller(alice), question, index_candidates=0)
    assert scans == {"index": 0, "exact": True}
    assert found == exact == nearest(seen, vectors, question)[:SEARCH_FUSION_CANDIDATES]
    # In the DM its records are the nearest, and bob's diary is still not there.
    in_dm, scans = by_meaning(alone.owner_url, ws.caller(alice, "dm:alice-bob"), question)
    assert scans == {"index": 1, "exact": False}
    assert in_dm[:10] == nearest(dm, vectors, question) and not set(in_dm) & set(diary)


def test_a_small_view_in_a_big_index_goes_to_the_exact_scan_at_once(alone: Alone) -> None:
    rng = random.Random(31)
    question = made_up_unit(rng)
    small, big = alone.world.workspace(), alone.world.workspace()
    alice = small.person("alice")
    store = alone.world.store
    mine = notes(Agent(store, small.caller(alice)), "mine", 5)
    # Another workspace holds more vectors, all nearer the question: 1,000 proposed by
    # the index would not be expected to hold the candidates wanted from a view of 5.
    theirs = notes(Agent(store, big.caller(big.person("carol"))), "theirs", 210)
    vectors = {i: made_up_unit(rng) for i in mine}
    vectors.update({i: made_up_unit(rng, near=question) for i in theirs})
    give_vectors(alone.owner, vectors)

    found, scans = by_meaning(alone.owner_url, small.caller(alice), question)
    assert scans == {"index": 0, "exact": True}
    assert found == nearest(mine, vectors, question)


def test_too_few_of_the_view_among_the_proposed_falls_back_to_the_exact_scan(
    alone: Alone,
) -> None:
    rng = random.Random(32)
    question = made_up_unit(rng)
    ws = alone.world.workspace()
    alice = ws.person("alice")
    agent = Agent(alone.world.store, ws.caller(alice))
    # The view is the whole index, but only five of its records are skills: the index
    # proposes its nearest, too few of them are of the kind asked for, and the exact
    # scan answers.
    others = notes(agent, "note", SEARCH_FUSION_CANDIDATES + 30)
    skills = [
        agent.write(
            uri=f"memory://workspace/skills/s{i}/SKILL.md",
            content=f"---\nname: s{i}\ndescription: skill {i}\n---\n",
            expected_revision=0,
        )["id"]
        for i in range(5)
    ]
    vectors = {i: made_up_unit(rng, near=question) for i in others}
    vectors.update({i: made_up_unit(rng) for i in skills})
    give_vectors(alone.owner, vectors)

    found, scans = by_meaning(alone.owner_url, ws.caller(alice), question, kinds=["skills"])
    assert scans == {"index": 1, "exact": True}
    assert found == nearest(skills, vectors, question)


def test_an_owners_claim_commits_as_its_statement_ends(alone: Alone) -> None:
    """The backfill's and make dev's worker's session: the claim is a transaction of
    its own that no COMMIT from the (lower-priority) worker has to end, so a writer
    re-queuing the record never waits for that process to be scheduled."""
    ws = alone.world.workspace()
    agent = Agent(alone.world.store, ws.caller(ws.person("alice")))
    made = agent.write(uri=DEPLOYS, content="We ship on Tuesdays.", expected_revision=0)
    with (
        psycopg.connect(alone.owner_url, autocommit=True) as worker,
        statement_transactions(worker) as conn,
    ):
        claimed = data.claim(conn, 32, 5)
        assert [c.id for c in claimed] == [uuid.UUID(made["id"])]
        assert worker.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        seen = alone.owner.execute(
            "SELECT claimed_at IS NOT NULL FROM memory.embedding_queue WHERE memory_id = %s",
            (made["id"],),
        ).fetchone()
        assert seen == (True,)  # committed: another connection sees the claim
