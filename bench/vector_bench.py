"""Search by meaning at store scale: the meaning side and a whole hybrid search on the
store benchmark's corpus, with a vector for every record.

Run as ``python -m bench.vector_bench`` (docs/performance.md, "Hybrid recall"). It
reuses (or seeds) the database of ``bench.store_bench`` for ``--records`` and
``--largest``, then gives every record without one a **synthetic** vector: 384
Gaussian numbers drawn by PostgreSQL (a random direction; cosine ignores the
length), in the local model's space and dimension, so the HNSW index and the exact
scan have the real sizes to read. The local model embeds 13-99 records a second, so
real vectors for 100,000 records and more are out of reach here; what is measured is
latency, not recall. The index of that dimension is dropped for the load and built
again afterwards (one build is far cheaper than as many insertions), with the graph
in memory and pgvector's parallel workers. ``--prepare-only`` stops there: the slow
part, to run at a lower priority (``nice``) than the measurement that follows it.

Measured as the store benchmark's reader (its largest workspace, from a thread, so
the view is the workspace's records of that thread and its ancestors), call by call
in turn, so outside load falls on every variant alike:

- ``meaning, index first``: ``memory.search_by_meaning`` as a request sends it
  (runtime role, the caller's settings, RLS), the product's way;
- ``meaning, exact scan``: the same with ``p_index_candidates`` 0;
- ``hybrid search``: the ``memory_search`` tool less its JSON-RPC (words' candidates,
  the meaning side, fusion, hydration, the byte budget), its embedder answering with
  the next synthetic question vector at once (the model's own time is measured in
  ``bench/results/embedder.json``);
- ``other workspace``: the meaning side (the product's way) and the whole hybrid
  search of the first person of the seed's second workspace, from the same thread:
  a view that is a smaller share of the index, which the exact scan answers.

Then ``EXPLAIN (ANALYZE, BUFFERS)`` of the meaning side's two statements, written out
as the function runs them, for the first question, in both views. Results go to ``--output``
(``bench/results/vector-latest.json``), with the seed's, the fill's and the build's
times when this run or the one that prepared the database recorded them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import secrets
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from memory_server.data import embeddings
from memory_server.data.pool import Database, request_settings
from memory_server.data.statements import query
from memory_server.domain.caller import Caller
from memory_server.domain.limits import (
    SEARCH_FUSION_CANDIDATES,
    SEARCH_MEANING_INDEX_CANDIDATES,
)
from memory_server.operations.store import Store
from memory_server.protocol.tools import ToolTable

from . import seed
from .search_bench import SEARCH_KINDS
from .store_bench import Timing, _deadline, caller_of, measure_together
from .timing import RESULTS

MODEL = "synthetic@0"  # the vectors' model: no real model made them
DIMENSIONS = 384
QUESTIONS = 64
OTHER_TENANT = 1  # the seed's second workspace, the largest after the reader's
VECTORS = "synthetic: random Gaussian directions drawn by PostgreSQL, 384 dimensions"

# One vector per record without one: a correlated subquery, so each row draws its
# own (Box-Muller: a standard normal number from two uniform ones).
FILL = """
INSERT INTO memory.search_embeddings (memory_id, model, dimensions, content_hash, embedding)
SELECT d.memory_id, %(model)s, %(dims)s, '\\x00'::bytea,
       (SELECT array_agg(sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))
        FROM generate_series(1, %(dims)s + 0 * length(d.memory_id::text)))::real[]
           ::public.vector
FROM memory.search_documents AS d
WHERE NOT EXISTS (SELECT 1 FROM memory.search_embeddings AS e WHERE e.memory_id = d.memory_id)
"""
# The index of that dimension as infra/migrations/0005_embeddings.sql makes it.
INDEX_DEFINITION = (
    "CREATE INDEX {index} ON memory.search_embeddings"
    " USING hnsw ((embedding::public.vector({dims})) public.vector_cosine_ops)"
    " WHERE dimensions = {dims}"
)


class Synthetic:
    """An embedder that answers with the next of its question vectors at once."""

    def __init__(self, questions: Sequence[list[float]]) -> None:
        self.model, self.dimensions = MODEL, DIMENSIONS
        self._questions = questions
        self._next = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vector = self._questions[self._next % len(self._questions)]
        self._next += 1
        return [vector for _ in texts]


def progress(message: str) -> None:
    print(f"[vector-bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def build_memory(vectors: float) -> str:
    """maintenance_work_mem for an HNSW build over this many vectors: the whole graph
    in memory (each element is its vector, 4 bytes a dimension, and its neighbour
    lists), as much again to spare, 1 GB at least. An HNSW build whose graph
    outgrows it goes on element by element on disk, many times slower (pgvector says
    so in a notice)."""
    need = vectors * (DIMENSIONS * 4 + 512) * 2
    return f"{max(1, -(-int(need) // 2**30))}GB"


def _fill_range(
    admin_url: str, seed_value: int, part: int, low: uuid.UUID, high: uuid.UUID | None
) -> None:
    """The synthetic vectors of one range of record ids, in one transaction."""
    bounded = " AND d.memory_id >= %(low)s" + (
        "" if high is None else " AND d.memory_id < %(high)s"
    )
    with psycopg.connect(admin_url, autocommit=True) as conn, conn.transaction():
        # Each range its own random sequence, the same on every seed of these parameters.
        conn.execute("SELECT setseed(%s)", (1 / (seed_value + 2 + part),))
        conn.execute(FILL + bounded, {"model": MODEL, "dims": DIMENSIONS, "low": low, "high": high})


def fill_vectors(admin: psycopg.Connection, admin_url: str, seed_value: int) -> dict[str, Any]:
    """A synthetic vector for every record without one; the index built afterwards.

    The index is dropped for the load and built once afterwards (a load interrupted
    leaves it missing: the next run builds it). The fill runs on one connection per
    core, each over a range of record ids (an INSERT does not run in parallel); the
    build with enough maintenance_work_mem for the graph and pgvector's parallel
    workers (one per core beside the leader's own)."""
    index = f"search_embeddings_{DIMENSIONS}"
    missing = admin.execute(
        "SELECT count(*) FROM memory.search_documents AS d WHERE NOT EXISTS "
        "(SELECT 1 FROM memory.search_embeddings AS e WHERE e.memory_id = d.memory_id)"
    ).fetchone()
    assert missing is not None
    made: dict[str, Any] = {"added": int(missing[0])}
    present = admin.execute("SELECT to_regclass(%s) IS NOT NULL", (f"memory.{index}",)).fetchone()
    assert present is not None
    if missing[0]:
        progress(f"adding {missing[0]:,} synthetic vectors (index {index} dropped meanwhile)")
        started = time.monotonic()
        admin.execute(f"DROP INDEX IF EXISTS memory.{index}")
        workers = max(1, min(4, len(os.sched_getaffinity(0))))
        bounds = [uuid.UUID(int=(2**128 * k) // workers) for k in range(workers)]
        ranges = list(zip(bounds, [*bounds[1:], None], strict=True))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [
                pool.submit(_fill_range, admin_url, seed_value, part, low, high)
                for part, (low, high) in enumerate(ranges)
            ]
            for future in futures:
                future.result()
        admin.execute("DELETE FROM memory.embedding_queue")
        made["fill_s"] = round(time.monotonic() - started, 1)
        made["fill_connections"] = workers
        progress(f"filled in {made['fill_s']} s")
    if missing[0] or not present[0]:
        admin.execute("ANALYZE memory.search_embeddings")
        rows = admin.execute(
            "SELECT reltuples FROM pg_class WHERE oid = 'memory.search_embeddings'::regclass"
        ).fetchone()
        assert rows is not None
        memory = build_memory(max(float(rows[0]), 0.0))
        parallel = max(0, len(os.sched_getaffinity(0)) - 1)
        notices: list[str] = []
        admin.add_notice_handler(lambda d: notices.append(str(d.message_primary)))
        progress(f"building {index} (maintenance_work_mem {memory}, {parallel} parallel workers)")
        started = time.monotonic()
        admin.execute(f"SET maintenance_work_mem = '{memory}'")
        admin.execute(f"SET max_parallel_maintenance_workers = {parallel}")
        admin.execute(INDEX_DEFINITION.format(index=index, dims=DIMENSIONS))
        made["index_build_s"] = round(time.monotonic() - started, 1)
        made["index_build"] = {
            "maintenance_work_mem": memory,
            "max_parallel_maintenance_workers": parallel,
            "notices": notices,
        }
        progress(f"built in {made['index_build_s']} s")
        admin.execute("VACUUM ANALYZE memory.search_embeddings")
    counts = admin.execute(
        "SELECT model, count(*) FROM memory.search_embeddings GROUP BY model"
    ).fetchall()
    made["vectors"] = {str(model): int(n) for model, n in counts}
    size = admin.execute(
        "SELECT pg_size_pretty(pg_relation_size(%s::regclass)),"
        " pg_size_pretty(pg_total_relation_size('memory.search_embeddings'))",
        (f"memory.search_embeddings_{DIMENSIONS}",),
    ).fetchone()
    assert size is not None
    made["index_size"], made["table_total_size"] = size
    return made


def params(caller: Caller, vector: Sequence[float], index_candidates: int) -> dict[str, Any]:
    return {
        "vector": embeddings.vector_literal(vector),
        "model": MODEL,
        "owners": caller.visible_owners(),
        "kinds": SEARCH_KINDS,
        "limit": SEARCH_FUSION_CANDIDATES,
        "index_candidates": index_candidates,
    }


# The meaning side's two statements, as memory.search_by_meaning runs them
# (infra/schema/65_search_vectors.sql; the embedded server has no auto_explain to show
# the function's own), without the can_see and is_live calls the function adds.
EXPLAIN_INDEX = """
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
WITH near AS MATERIALIZED (
    SELECT e.memory_id, e.model,
           e.embedding::public.vector(384) OPERATOR(public.<=>) %(q)s::public.vector(384)
               AS distance
    FROM memory.search_embeddings AS e WHERE e.dimensions = 384
    ORDER BY e.embedding::public.vector(384) OPERATOR(public.<=>) %(q)s::public.vector(384)
    LIMIT %(proposed)s)
SELECT n.memory_id, 1 - n.distance FROM near AS n
JOIN memory.search_documents AS d ON d.memory_id = n.memory_id
WHERE n.model = %(model)s AND d.workspace_id = %(ws)s AND d.owner_id = ANY (%(owners)s)
  AND d.context_key = ANY (%(contexts)s) AND d.kind = ANY (%(kinds)s)
ORDER BY n.distance LIMIT %(wanted)s
"""
EXPLAIN_EXACT = """
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
SELECT d.memory_id, 1 - (e.embedding OPERATOR(public.<=>) %(q)s::public.vector)
FROM memory.search_documents AS d
JOIN memory.search_embeddings AS e ON e.memory_id = d.memory_id
WHERE memory.search_view_cell(d.workspace_id, d.owner_id, d.context_key) = ANY (
        ARRAY(SELECT memory.search_view_cell(%(ws)s, o, c)
              FROM unnest(%(owners)s::uuid[]) AS o, unnest(%(contexts)s::text[]) AS c))
  AND d.workspace_id = %(ws)s AND d.owner_id = ANY (%(owners)s)
  AND d.context_key = ANY (%(contexts)s) AND d.kind = ANY (%(kinds)s)
  AND e.model = %(model)s AND e.dimensions = 384
ORDER BY e.embedding OPERATOR(public.<=>) %(q)s::public.vector
LIMIT %(wanted)s
"""
# The same before the view's btree (search_documents_view): the columns alone.
EXPLAIN_EXACT_COLUMNS = re.sub(
    r"WHERE memory\.search_view_cell.*?\)\)\n  AND ", "WHERE ", EXPLAIN_EXACT, flags=re.S
)
# How many the function has the index propose for this view (the same arithmetic:
# 0 when even 1,000 would not be expected to hold the wanted of the view, the exact
# scan at once).
PROPOSED = """
SELECT v.documents, c.reltuples,
       CASE WHEN ceil(2 * %(wanted)s * c.reltuples / v.documents) <= 1000
            THEN greatest(%(least)s, ceil(2 * %(wanted)s * c.reltuples / v.documents))
            WHEN 1000 * v.documents / c.reltuples >= %(wanted)s THEN 1000
            ELSE 0 END
FROM memory.search_view_statistics(%(ws)s, %(owners)s, %(contexts)s, '{""}') AS v,
     pg_class AS c
WHERE c.oid = 'memory.search_embeddings_384'::regclass
"""


def explain(admin_url: str, caller: Caller, vector: Sequence[float]) -> dict[str, Any]:
    """EXPLAIN ANALYZE of both statements, as the administrator, twice each (the
    second is reported: the pages read by the first are cached)."""
    values = {
        "q": embeddings.vector_literal(vector),
        "model": MODEL,
        "ws": caller.workspace_id,
        "owners": caller.visible_owners(),
        "contexts": list(caller.context.ancestors),
        "kinds": SEARCH_KINDS,
        "wanted": SEARCH_FUSION_CANDIDATES,
        "least": SEARCH_MEANING_INDEX_CANDIDATES,
    }
    plans: dict[str, Any] = {}
    with psycopg.connect(admin_url) as conn:
        row = conn.execute(PROPOSED, values).fetchone()
        assert row is not None
        in_view, indexed, proposed = row
        plans["view_records"], plans["indexed_vectors"] = int(in_view), int(indexed)
        plans["proposed"] = int(proposed)
        # The exact scan as the installed function words it: by the view's cells when
        # it reads them from search_documents_view, else by the columns alone.
        source = conn.execute(
            "SELECT prosrc FROM pg_proc WHERE oid = 'memory.search_by_meaning"
            "(text, text, uuid[], text[], integer, integer)'::regprocedure"
        ).fetchone()
        by_cells = source is not None and "search_view_cell" in str(source[0])
        statements = [("exact", EXPLAIN_EXACT if by_cells else EXPLAIN_EXACT_COLUMNS)]
        plans["exact_by_cells"] = by_cells
        if proposed:
            conn.execute(f"SET LOCAL hnsw.ef_search = {int(proposed)}")
            statements.insert(0, ("index_first", EXPLAIN_INDEX))
        else:
            plans["index_first"] = ["not run: the function goes to the exact scan at once"]
        for name, statement in statements:
            for _ in range(2):
                lines = conn.execute(statement, {**values, "proposed": proposed}).fetchall()
            plans[name] = [re.sub(r"'\[[^']*\]'", "'[…]'", line[0]) for line in lines]
    return plans


def embedded_in_view(owner: psycopg.Connection, caller: Caller) -> int:
    """The embedded records of the kinds searched in the caller's view."""
    owner.execute(query("request_settings"), request_settings(caller, 60_000))
    row = owner.execute(
        "SELECT count(*) FROM memory.search_documents AS d"
        " JOIN memory.search_embeddings AS e USING (memory_id)"
        " WHERE d.workspace_id = %s AND d.owner_id = ANY (%s)"
        " AND d.context_key = ANY (%s) AND d.kind = ANY (%s)",
        (
            caller.workspace_id,
            caller.visible_owners(),
            list(caller.context.ancestors),
            SEARCH_KINDS,
        ),
    ).fetchone()
    assert row is not None
    owner.rollback()
    return int(row[0])


def run(args: argparse.Namespace) -> dict[str, Any]:
    spec = seed.SeedSpec(args.records, args.largest, args.seed)
    rng = random.Random(args.seed)
    questions = [[rng.gauss(0.0, 1.0) for _ in range(DIMENSIONS)] for _ in range(QUESTIONS)]
    with seed.server(True) as (server_url, _):
        cluster, marker = seed.prepare(server_url, spec, reseed=False)
        tenants = seed.load_tenants(cluster, spec)
        with psycopg.connect(cluster.admin_url, autocommit=True) as admin:
            vectors = fill_vectors(admin, cluster.admin_url, args.seed)
        dataset: dict[str, Any] = {
            "records": args.records,
            "largest_workspace": args.largest,
            "seed_s": marker.get("seed_seconds"),  # when it was seeded, by this run or one before
            **vectors,
        }
        if args.prepare_only:
            return {
                "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "command": (
                    f"python -m bench.vector_bench --records {args.records}"
                    f" --largest {args.largest} --prepare-only"
                ),
                "vectors": VECTORS,
                "dataset": dataset,
                "niceness": os.nice(0),
                "load_average": {"before": args.load_before, "after": os.getloadavg()},
            }
        db = Database(cluster.runtime_url, min_size=1, max_size=1)
        try:
            store = Store(db, secrets.token_bytes(32), embedder=Synthetic(questions))
            tools = ToolTable(store)
            reader = caller_of(db, tenants[0], seed.READER_CONTEXT)
            # The largest of the other workspaces, from the same thread: a view that is
            # a smaller share of the index, the exact scan's case.
            other = caller_of(db, tenants[OTHER_TENANT], seed.READER_CONTEXT)
            with psycopg.connect(cluster.owner_url) as owner:
                view = {
                    name: embedded_in_view(owner, caller)
                    for name, caller in (("reader", reader), ("other", other))
                }
            words = ["deploy", "customer", "meeting notes", "release plan", "budget review"]

            def meaning(caller: Caller, candidates: int) -> Any:
                def call(i: int) -> object:
                    with db.read(caller, _deadline(), isolation="repeatable read") as tx:
                        found = embeddings.by_meaning(
                            tx,
                            questions[i % QUESTIONS],
                            model=MODEL,
                            owners=caller.visible_owners(),
                            kinds=SEARCH_KINDS,
                            limit=SEARCH_FUSION_CANDIDATES,
                            index_candidates=candidates,
                        )
                    assert len(found.get()) == SEARCH_FUSION_CANDIDATES
                    return found

                return call

            def hybrid(caller: Caller) -> Any:
                def call(i: int) -> object:
                    return tools.run(
                        "memory_search", caller, {"query": words[i % len(words)]}, _deadline()
                    )

                return call

            progress(
                f"measuring: {view['reader']:,} embedded records in the reader's view,"
                f" {view['other']:,} in the other workspace's"
            )
            timing = Timing(args.iterations, args.warmup, args.budget)
            results = measure_together(
                {
                    "meaning_index_first": (
                        "meaning, index first",
                        meaning(reader, SEARCH_MEANING_INDEX_CANDIDATES),
                    ),
                    "meaning_exact": ("meaning, exact scan", meaning(reader, 0)),
                    "hybrid_search": ("hybrid search (memory_search)", hybrid(reader)),
                    "other_meaning": (
                        "other workspace: meaning",
                        meaning(other, SEARCH_MEANING_INDEX_CANDIDATES),
                    ),
                    "other_hybrid_search": ("other workspace: hybrid search", hybrid(other)),
                },
                timing,
            )
            plans = explain(cluster.admin_url, reader, questions[0])
            plans["other_workspace"] = explain(cluster.admin_url, other, questions[0])
        finally:
            db.close()
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": (
            f"python -m bench.vector_bench --records {args.records} --largest {args.largest}"
        ),
        "vectors": VECTORS,
        "dataset": {
            **dataset,
            "embedded_records_in_view": view["reader"],
            "other_workspace": {
                "slug": tenants[OTHER_TENANT].slug,
                "embedded_in_view": view["other"],
            },
        },
        "niceness": os.nice(0),
        "settings": {"iterations": args.iterations, "warmup": args.warmup, "budget_s": args.budget},
        "results": results,
        "explain": plans,
        "load_average": {"before": args.load_before, "after": os.getloadavg()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--largest", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=42, help="the store benchmark's seed")
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per variant at most")
    parser.add_argument("--output", type=Path, default=RESULTS / "vector-latest.json")
    parser.add_argument(
        "--prepare-only",
        action="store_true",
        help="seed, fill and index, then stop (the slow part, to run at a lower priority)",
    )
    args = parser.parse_args()
    args.load_before = os.getloadavg()
    report = run(args)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    for name, stats in report.get("results", {}).items():
        print(
            f"{name}: p50 {stats['p50']} p95 {stats['p95']} p99 {stats['p99']} ms (n={stats['n']})"
        )


if __name__ == "__main__":
    main()
