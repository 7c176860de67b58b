"""Store benchmark: latency of the memory operations on a large multi-tenant corpus.

Run as ``python -m bench.store_bench`` (``make bench``); see docs/performance.md.

Each operation is timed three ways, warm, one request at a time:

- ``operation``: the Python operation (``memory_read``, ``memory_search``, ...) as the
  runtime role, through row-level security, including validation and formatting;
- ``sql_rls``: only the SQL that operation sends, in the same kind of transaction
  (runtime role, ``set_config`` preamble, RLS), to separate Python from database time;
- ``floor``: the plainest equivalent SQL as the superuser: no RLS, no preamble, no
  second phase. The ratio operation/floor is the price of the design.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import secrets
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from memory_server.data import records, search
from memory_server.data.pool import Database, Isolation, Transaction, request_settings
from memory_server.data.records import Content, view
from memory_server.data.search import HitRow, Terms
from memory_server.data.statements import query
from memory_server.domain.addresses import (
    Namespace,
    parse_path_address,
    parse_record_address,
    record_uri,
)
from memory_server.domain.arguments import ReadArgs, WriteArgs
from memory_server.domain.arguments import parse_args as tool_args
from memory_server.domain.caller import SHARED_OWNER, Caller
from memory_server.domain.content import derive_title
from memory_server.domain.contexts import parse_context
from memory_server.domain.deadline import Deadline
from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES
from memory_server.domain.limits import SEARCH_FETCH_BUDGET, SEARCH_SCORE_BUDGET
from memory_server.domain.ranking import Candidate, DeterministicRanker
from memory_server.domain.search_query import parse_query
from memory_server.operations import memory_read, memory_write
from memory_server.operations.membership import resolve_caller
from memory_server.operations.store import Store
from memory_server.protocol.tools import ToolTable
from psycopg import sql
from psycopg.rows import tuple_row

from . import search_bench, seed
from .corpus import COMMON_TERM, RARE_TERM, TYPICAL_TERM, TextGenerator
from .vocabulary import load_words

RESULTS = seed.ROOT / "bench" / "results" / "latest.json"
ALL_SCOPES = [GRANT_SCOPES[g] for g in ALL_GRANTS]
SEARCH_KINDS = search_bench.SEARCH_KINDS
QUESTIONS_PER_CASE = 24  # natural-language questions per case, cycled through
LIST_LIMIT = 20  # memory_list's default page size
READ_TARGETS = 2000
PENDING_WRITES = 1000
# Generous, instead of the 3 s request default: the benchmark measures slow calls
# (a cold first search for a common term can take seconds), it does not cancel them.
DEADLINE_S = 60.0

TARGETS_MS = {  # operation p95 (and p99 for search): docs/performance.md, Targets
    "read_by_path": {"p95": 2.0},
    "conditional_write": {"p95": 5.0},
    "brief": {"p95": 30.0},
    "search_rare": {"p95": 15.0, "p99": 50.0},
    "search_typical": {"p95": 15.0, "p99": 50.0},
    "search_common": {"p95": 15.0, "p99": 50.0},
    "search_words_1": {"p95": 15.0, "p99": 50.0},
    "search_words_3": {"p95": 15.0, "p99": 50.0},
    "search_words_8": {"p95": 15.0, "p99": 50.0},
}
MAX_FLOOR_RATIO = 1.5
# The measurements --cases may name; all of them by default. With fewer, the sections
# that belong to a whole run (write path, GIN pending list, plans) are left out.
CASE_GROUPS = ("read", "list", "brief", "search", "write")

FLOOR_READ = """
SELECT m.id, m.workspace_id, m.owner_id, m.context_key, m.kind, m.path, m.title, m.body,
       m.revision, m.created_at, m.updated_at, m.source, c.handle, u.handle
FROM memory.memories AS m
LEFT JOIN memory.principals AS c ON c.id = m.created_by
LEFT JOIN memory.principals AS u ON u.id = m.updated_by
WHERE m.workspace_id = %(workspace_id)s AND m.owner_id = %(owner_id)s AND m.kind = %(kind)s
  AND m.path = %(path)s AND m.context_key = ANY (%(contexts)s)
LIMIT 1
"""
FLOOR_WRITE = """
UPDATE memory.memories
SET title = %(title)s, body = %(body)s, revision = revision + 1, updated_at = now(),
    updated_by = %(principal_id)s
WHERE id = %(id)s AND revision = %(expected_revision)s
RETURNING id, revision, context_key
"""
FLOOR_LIST = """
SELECT id, owner_id, context_key, kind, path, title, revision, updated_at
FROM memory.memories
WHERE workspace_id = %(workspace_id)s AND owner_id = ANY (%(owners)s)
  AND context_key = ANY (%(contexts)s)
ORDER BY kind, path, context_key, id
LIMIT %(limit)s
"""

# The briefing's floor: its two reads of records, plainly, as the superuser (no RLS,
# no function, handles not looked up).
FLOOR_BRIEF = """
(SELECT id, updated_at, left(body, 4096) AS content
 FROM memory.memories
 WHERE workspace_id = %(workspace_id)s AND owner_id = ANY (%(owners)s)
   AND context_key = ANY (%(contexts)s) AND pinned
 ORDER BY updated_at DESC LIMIT 20)
UNION ALL
(SELECT id, updated_at, NULL
 FROM memory.memories
 WHERE workspace_id = %(workspace_id)s AND owner_id = ANY (%(owners)s)
   AND context_key = ANY (%(contexts)s) AND NOT pinned
 ORDER BY updated_at DESC LIMIT 20)
"""
BRIEF_PINNED = 10  # records of the measured view pinned for the briefing
BRIEF_OVER_LIST = 2.0  # the briefing's p95 at most this many list pages (issue 22)

Timed = Callable[[int], object]


def caller_of(db: Database, tenant: seed.Tenant, context: str) -> Caller:
    """The tenant's first person, listening from ``context``, as the server resolves it."""
    membership = resolve_caller(
        db,
        workspace=tenant.slug,
        subject=tenant.people[0].subject,
        scopes=ALL_SCOPES,
        context=parse_context(context),
    )
    assert membership is not None
    return membership.caller


def _deadline() -> Deadline:
    return Deadline.after(DEADLINE_S)


# --- statistics ----------------------------------------------------------------------


def percentile(ordered: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def summarize(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    return {
        "n": len(ordered),
        "p50": round(percentile(ordered, 0.50), 3),
        "p95": round(percentile(ordered, 0.95), 3),
        "p99": round(percentile(ordered, 0.99), 3),
        "mean": round(statistics.fmean(ordered), 3),
        "min": round(ordered[0], 3),
        "max": round(ordered[-1], 3),
    }


@dataclass(frozen=True, slots=True)
class Timing:
    iterations: int  # timed calls per measurement, unless the time budget runs out
    warmup: int  # untimed calls first
    budget_s: float  # per measurement (a quarter of it again for the warm-up)


# Enough warm-up to reach a connection's steady state even where statements are
# prepared (psycopg's default prepares on the 5th execution, and PostgreSQL's plan
# cache may switch to a generic plan after 5 more).
MIN_WARMUP = 12
MIN_SAMPLES = 20


def measure(label: str, call: Timed, timing: Timing) -> dict[str, float]:
    """Warm up, then time calls one after another (milliseconds)."""
    return measure_together({"only": (label, call)}, timing)["only"]


def measure_together(
    calls: Mapping[str, tuple[str, Timed]], timing: Timing
) -> dict[str, dict[str, float]]:
    """Time several variants in turn, call by call, so that outside load on a shared
    machine falls on all of them alike (for variants whose pages fit together)."""
    index = 0
    deadline = time.monotonic() + timing.budget_s * len(calls) / 4
    while index < timing.warmup and (index < MIN_WARMUP or time.monotonic() < deadline):
        for _, call in calls.values():
            call(index)
        index += 1
    samples: dict[str, list[float]] = {key: [] for key in calls}
    rounds = 0
    deadline = time.monotonic() + timing.budget_s * len(calls)
    while rounds < timing.iterations and (rounds < MIN_SAMPLES or time.monotonic() < deadline):
        for key, (_, call) in calls.items():
            started = time.perf_counter_ns()
            call(index)
            samples[key].append((time.perf_counter_ns() - started) / 1e6)
        index += 1
        rounds += 1
    return {
        key: _report(label, samples[key], timing.iterations) for key, (label, _) in calls.items()
    }


def _report(label: str, samples: list[float], wanted: int) -> dict[str, float]:
    stats = summarize(samples)
    cut = f"  (time budget: {len(samples)} calls)" if len(samples) < wanted else ""
    print(
        f"  {label:<34} p50 {stats['p50']:8.3f}  p95 {stats['p95']:8.3f}  "
        f"p99 {stats['p99']:8.3f} ms{cut}",
        file=sys.stderr,
        flush=True,
    )
    return stats


# --- the benchmark -------------------------------------------------------------------


@dataclass(slots=True)
class WriteTarget:
    id: uuid.UUID
    path: str
    revision: int

    @property
    def uri(self) -> str:
        return record_uri("workspace", "notes", self.path)


class Bench:
    def __init__(
        self, cluster: seed.Cluster, tenants: list[seed.Tenant], args: argparse.Namespace
    ) -> None:
        self.cluster = cluster
        self.tenants = tenants
        self.timing = Timing(args.iterations, args.warmup, args.budget)
        self.rng = random.Random(args.seed + 1)
        # One connection: every statement the operations send is prepared on it, as on
        # a warm Lambda container's connection.
        self.db = Database(cluster.runtime_url, min_size=1, max_size=1)
        self.store = Store(self.db, cursor_secret=secrets.token_bytes(32))
        self.tools = ToolTable(self.store)
        # Like the product's pool, no server-side prepared statements: every floor
        # statement is planned for its values too, so the ratio compares designs.
        self.admin = psycopg.connect(cluster.admin_url, autocommit=True, prepare_threshold=None)
        largest, writers = tenants[0], tenants[seed.WRITER_TENANT]
        self.reader = caller_of(self.db, largest, seed.READER_CONTEXT)
        self.writer = caller_of(self.db, writers, "workspace")
        self.seed = args.seed
        self.bands: search_bench.Bands | None = None
        text = TextGenerator(random.Random(args.seed + 2))
        self.bodies = [text.document().body for _ in range(64)]

    def close(self) -> None:
        self.db.close()
        self.admin.close()

    @contextmanager
    def rls(
        self, caller: Caller, *, read_only: bool = True, search: bool = False
    ) -> Iterator[Transaction]:
        """The transaction the operation opens (runtime role, settings first)."""
        if not read_only:
            with self.db.write(caller, _deadline()) as tx:
                yield tx
            return
        isolation: Isolation = "repeatable read" if search else "read committed"
        with self.db.read(caller, _deadline(), isolation=isolation) as tx:
            yield tx

    # -- read by path --

    def read_targets(self) -> list[dict[str, Any]]:
        caller = self.reader
        rows = self.admin.execute(
            "SELECT owner_id, kind, path FROM memory.memories "
            "WHERE workspace_id = %s AND owner_id = ANY (%s) AND context_key = ANY (%s) "
            "ORDER BY random() LIMIT %s",
            (
                caller.workspace_id,
                caller.visible_owners(),
                list(caller.context.ancestors),
                READ_TARGETS,
            ),
        ).fetchall()
        targets = []
        for owner_id, kind, path in rows:
            namespace: Namespace = "workspace" if owner_id == SHARED_OWNER else "me"
            targets.append(
                {
                    "uri": record_uri(namespace, kind, path),
                    "owner_id": owner_id,
                    "kind": kind,
                    "path": path,
                }
            )
        return targets

    def bench_read(self) -> dict[str, dict[str, float]]:
        caller = self.reader
        targets = self.read_targets()
        calls = self.timing.iterations + max(self.timing.warmup, MIN_WARMUP)
        # Each variant reads its own random sequence of records.
        pick, pick_sql, pick_floor = (
            [self.rng.randrange(len(targets)) for _ in range(calls)] for _ in range(3)
        )

        def read(i: int) -> dict[str, Any]:
            args = tool_args(ReadArgs, {"uri": targets[pick[i]]["uri"]})
            return memory_read(self.store, caller, args, _deadline())

        def sql_rls(i: int) -> object:
            address = parse_record_address(targets[pick_sql[i]]["uri"])
            with self.db.read(caller, _deadline()) as tx:
                found = records.find(tx, caller, address)
            row = found.get()
            assert row
            return row

        def floor_read(target: dict[str, Any]) -> object:
            params = {
                "workspace_id": caller.workspace_id,
                "owner_id": target["owner_id"],
                "kind": target["kind"],
                "path": target["path"],
                "contexts": list(caller.context.ancestors),
            }
            row = self.admin.execute(FLOOR_READ, params).fetchone()
            assert row is not None
            return row

        def floor(i: int) -> object:
            return floor_read(targets[pick_floor[i]])

        # Warm: every target's pages once, so no flavour pays for first touches that
        # an earlier flavour then saves the next one.
        for target in targets:
            floor_read(target)
        assert read(0)["content"]
        return self._three("read_by_path", read, sql_rls, floor)

    # -- conditional write --

    def write_targets(self) -> list[WriteTarget]:
        rows = self.admin.execute(
            "SELECT id, path, revision FROM memory.memories "
            "WHERE workspace_id = %s AND owner_id = %s AND path LIKE 'bench/write-%%' "
            "ORDER BY path",
            (self.writer.workspace_id, SHARED_OWNER),
        ).fetchall()
        assert len(rows) == seed.WRITE_TARGETS, "write targets missing"
        return [WriteTarget(*row) for row in rows]

    def bench_write(self) -> dict[str, dict[str, float]]:
        caller = self.writer
        targets = self.write_targets()

        def body(i: int) -> str:
            return self.bodies[i % len(self.bodies)]

        def operation(i: int) -> object:
            target = targets[i % len(targets)]
            args = tool_args(
                WriteArgs,
                {"uri": target.uri, "content": body(i), "expected_revision": target.revision},
            )
            result = memory_write(self.store, caller, args, _deadline())
            target.revision = result["revision"]
            return result

        def sql_rls(i: int) -> object:
            target = targets[(i + len(targets) // 3) % len(targets)]
            address = parse_path_address(target.uri)
            content = Content(derive_title("notes", target.path, body(i)), body(i), None)
            with self.rls(caller, read_only=False) as tx:
                current = records.find(tx, caller, address).get()
                assert current is not None
                changed = records.change(
                    tx,
                    caller,
                    current["id"],
                    address,
                    expected_revision=target.revision,
                    content=content,
                    operation="replace",
                )
            row = changed.get()
            assert row is not None
            target.revision = row.revision
            return row

        def floor(i: int) -> object:
            target = targets[(i + 2 * len(targets) // 3) % len(targets)]
            params = {
                "id": target.id,
                "expected_revision": target.revision,
                "body": body(i),
                "title": derive_title("notes", target.path, body(i)),
                "principal_id": caller.principal_id,
            }
            row = self.admin.execute(FLOOR_WRITE, params).fetchone()
            assert row is not None
            target.revision = row[1]
            return row

        # The variants run in turn on different thirds of the targets (no row is
        # rewritten three times in a row), and warm-up rewrites every target first.
        warmup = max(self.timing.warmup, len(targets))
        return self._three("conditional_write", operation, sql_rls, floor, warmup=warmup)

    def bench_write_cost(self) -> dict[str, Any]:
        """What keeping search up to date adds to a write: the conditional write timed
        with every search trigger, without the statistics triggers, and without any
        search maintenance (then with all again). Afterwards the writer workspace's
        documents and statistics are brought back in line, and checked."""
        caller = self.writer
        targets = self.write_targets()
        statistics_triggers = [
            "memories_search_statistics_added",
            "memories_search_statistics_changed",
            "memories_search_statistics_removed",
        ]
        variants = {
            "all_search_maintenance": [],
            "without_statistics": statistics_triggers,
            "without_search_maintenance": [*statistics_triggers, "memories_search_document"],
            "all_search_maintenance_again": [],
        }

        contents = dict(
            self.admin.execute(
                "SELECT id, body FROM memory.memories WHERE id = ANY (%s)",
                ([t.id for t in targets],),
            ).fetchall()
        )

        def write(i: int, content: str) -> object:
            target = targets[i % len(targets)]
            args = tool_args(
                WriteArgs,
                {"uri": target.uri, "content": content, "expected_revision": target.revision},
            )
            result = memory_write(self.store, caller, args, _deadline())
            target.revision = result["revision"]
            contents[target.id] = content
            return result

        workloads: dict[str, Timed] = {
            # A whole new ~1 KB body: every word of the old one out, every new one in.
            "replace": lambda i: write(i, self.bodies[i % len(self.bodies)]),
            # One more line, as memory_remember adds a fact: a handful of new words.
            "append": lambda i: write(
                i,
                contents[targets[i % len(targets)].id] + f"\n- noted item {i} for later\n",
            ),
        }
        timing = replace(self.timing, warmup=max(self.timing.warmup, len(targets)))
        found: dict[str, Any] = {}
        print("conditional_write, search maintenance on and off:", file=sys.stderr)
        try:
            for workload, operation in workloads.items():
                found[workload] = {}
                for name, disabled in variants.items():
                    for trigger in disabled:
                        self.admin.execute(
                            sql.SQL("ALTER TABLE memory.memories DISABLE TRIGGER {}").format(
                                sql.Identifier(trigger)
                            )
                        )
                    try:
                        found[workload][name] = measure(f"{workload}: {name}", operation, timing)
                    finally:
                        for trigger in disabled:
                            self.admin.execute(
                                sql.SQL("ALTER TABLE memory.memories ENABLE TRIGGER {}").format(
                                    sql.Identifier(trigger)
                                )
                            )
        finally:
            self.repair_search(caller.workspace_id, [t.id for t in targets])
        for runs in found.values():
            for p in ("p50", "p95", "p99"):
                both = (runs["all_search_maintenance"][p], runs["all_search_maintenance_again"][p])
                runs[f"statistics_add_{p}"] = round(min(both) - runs["without_statistics"][p], 3)
                runs[f"search_maintenance_adds_{p}"] = round(
                    min(both) - runs["without_search_maintenance"][p], 3
                )
        return found

    def repair_search(self, workspace_id: Any, ids: list[Any]) -> None:
        """Bring the documents of ``ids`` and the statistics of a workspace back in line
        with its records (after writes with search triggers off), and check them."""
        admin = self.admin
        with admin.transaction():
            admin.execute(
                "UPDATE memory.memories SET updated_at = updated_at + interval '1 microsecond' "
                "WHERE id = ANY (%s)",
                (ids,),
            )
            admin.execute(
                "DELETE FROM memory.search_statistics WHERE workspace_id = %s", (workspace_id,)
            )
            admin.execute(
                "INSERT INTO memory.search_statistics "
                "SELECT workspace_id, owner_id, context_key, l, count(*) FROM memory.memories, "
                "unnest(memory.search_lexemes(search_vector, path)) AS l "
                "WHERE workspace_id = %s GROUP BY 1, 2, 3, 4",
                (workspace_id,),
            )
        stale = admin.execute(
            "SELECT count(*) FROM memory.memories m JOIN memory.search_documents d "
            "ON d.memory_id = m.id WHERE m.id = ANY (%s) AND (d.updated_at <> m.updated_at "
            "OR d.terms <> memory.search_terms(m.search_vector, m.path))",
            (ids,),
        ).fetchone()
        assert stale == (0,), f"{stale} search documents still stale"

    # -- search --

    def search_sql(self, caller: Caller, text: str) -> list[HitRow]:
        """Both phases of memory_search, as SQL, sent as memory_search sends them:
        candidates, ranking, then hydration with the commit."""
        parsed = parse_query(text)
        terms = Terms(parsed.words, parsed.phrases, parsed.excluded)
        owners = caller.visible_owners()
        with self.db.read(caller, _deadline(), isolation="repeatable read") as tx:
            scored = search.candidates(
                tx,
                terms,
                owners=owners,
                kinds=search_bench.SEARCH_KINDS,
                limit=8,
                fetch_budget=SEARCH_FETCH_BUDGET,
                score_budget=SEARCH_SCORE_BUDGET,
            ).get()
            offered = [Candidate(c.id, c.score) for c in scored.scored]
            ranked = DeterministicRanker().rank(text, offered, 8)
            ids = [c.id for c in ranked]
            hydrated = search.hydrate(tx, caller, terms, ids, owners) if ranked else None
        return list(hydrated.get().values()) if hydrated is not None else []

    def search_floor(self, caller: Caller, text: str) -> list[tuple[Any, ...]]:
        return self.admin.execute(
            search_bench.FLOOR_SEARCH, search_bench.floor_params(caller, text)
        ).fetchall()

    def bench_search(self, name: str, texts: list[str]) -> dict[str, Any]:
        """Each variant cycles through the same questions."""
        caller = self.reader

        def search(i: int) -> dict[str, Any]:
            # Validation, the domain call and the byte budget: a tool call less its JSON-RPC.
            text = texts[i % len(texts)]
            return self.tools.run("memory_search", caller, {"query": text}, _deadline())

        def sql_rls(i: int) -> object:
            return self.search_sql(caller, texts[i % len(texts)])

        def floor(i: int) -> object:
            return self.search_floor(caller, texts[i % len(texts)])

        for text in texts:
            assert search(texts.index(text))["hits"], f"no hits for {text!r}"
        result = self._three(name, search, sql_rls, floor)
        result["questions"] = texts
        result["top_8_against_floor"] = self.overlap(texts)
        return result

    def overlap(self, texts: list[str]) -> dict[str, Any]:
        """Does the bounded search return the exhaustive floor's top 8, question by
        question? And how did each search end (proved exact, or budget spent)?"""
        caller = self.reader
        identical = same_set = 0
        shared = []
        outcomes: dict[str, int] = {}
        with (
            psycopg.connect(self.cluster.owner_url, autocommit=True) as owner,
            owner.transaction(force_rollback=True),
        ):
            owner.execute(query("request_settings"), request_settings(caller, 60_000))
            for text in texts:
                found = [
                    h["id"]
                    for h in self.tools.run("memory_search", caller, {"query": text}, _deadline())[
                        "hits"
                    ]
                ]
                best = [str(row[0]) for row in self.search_floor(caller, text)]
                identical += found == best
                same_set += set(found) == set(best)
                shared.append(len(set(found) & set(best)) / max(len(best), 1))
                events = search_bench.trace(owner, search_bench.search_params(caller, text))
                done = next((e["done"] for e in events if "done" in e), "?")
                outcomes[done] = outcomes.get(done, 0) + 1
        return {
            "questions": len(texts),
            "identical_top_8": identical,
            "same_top_8_set": same_set,
            "mean_share_of_floor_top_8": round(statistics.fmean(shared), 4),
            "how_searches_ended": outcomes,
        }

    def search_cases(self) -> dict[str, list[str]]:
        bands = search_bench.word_bands(self.admin, self.reader, [*load_words(), RARE_TERM])
        cases = {
            "search_rare": [RARE_TERM],
            "search_typical": [TYPICAL_TERM],
            "search_common": [COMMON_TERM],
        }
        for n in (1, 3, 8):
            cases[f"search_words_{n}"] = search_bench.questions(
                bands, n, QUESTIONS_PER_CASE, self.seed
            )
        self.bands = bands
        return cases

    # -- list --

    def list_params(self, caller: Caller) -> dict[str, Any]:
        """memory_list's parameters for the first page without a prefix."""
        return {
            **view(caller),
            "kind": None,
            "path_low": "",
            "path_high": "\U0010ffff",
            "after_kind": "",
            "after_path": "",
            "after_context": "",
            "after_id": str(SHARED_OWNER),
            "limit": LIST_LIMIT + 1,
        }

    def bench_list(self) -> dict[str, dict[str, float]]:
        caller = self.reader
        params = self.list_params(caller)

        def list_page(_: int) -> dict[str, Any]:
            return self.tools.run("memory_list", caller, {}, _deadline())

        def sql_rls(_: int) -> object:
            with self.db.read(caller, _deadline()) as tx:
                page = records.list_page(
                    tx,
                    caller,
                    owners=caller.visible_owners(),
                    kind=None,
                    folder="",
                    after=["", "", "", str(SHARED_OWNER)],
                    limit=LIST_LIMIT + 1,
                )
            return page.get()

        def floor(_: int) -> object:
            return self.admin.execute(FLOOR_LIST, {**params, "limit": LIST_LIMIT + 1}).fetchall()

        # The response budget, not the page size, may bound the page (see budget.py).
        assert list_page(0)["items"]
        return self._three("list_first_page", list_page, sql_rls, floor)

    # -- the briefing --

    def bench_brief(self) -> dict[str, dict[str, float]]:
        """memory_brief at its default budget, with a few records of the view pinned."""
        caller = self.reader
        self.admin.execute(
            "UPDATE memory.memories SET pinned = true WHERE id IN ("
            " SELECT id FROM memory.memories WHERE workspace_id = %s AND owner_id = %s"
            " AND context_key = 'workspace' AND kind IN ('memories', 'notes')"
            " ORDER BY id LIMIT %s)",
            (caller.workspace_id, SHARED_OWNER, BRIEF_PINNED),
        )

        def brief(_: int) -> dict[str, Any]:
            return self.tools.run("memory_brief", caller, {}, _deadline())

        def sql_rls(_: int) -> object:
            with self.db.read(caller, _deadline()) as tx:
                found = records.brief(tx, caller, since=None)
            return found.get()

        def floor(_: int) -> object:
            return self.admin.execute(FLOOR_BRIEF, view(caller)).fetchall()

        made = brief(0)
        # Ten long pinned records fill the 4096 bytes: contents cut, later items dropped.
        assert made["pinned"] and made["truncated"], made
        return self._three("brief", brief, sql_rls, floor)

    def _three(
        self,
        name: str,
        operation: Timed,
        sql_rls: Timed,
        floor: Timed,
        warmup: int | None = None,
    ) -> dict[str, Any]:
        print(f"{name}:", file=sys.stderr)
        # One variant after the other, each warmed up on its own: interleaving them
        # call by call would have each evict the others' pages from shared_buffers
        # (the 10% search's working sets do not fit together) and time that instead.
        timing = self.timing if warmup is None else replace(self.timing, warmup=warmup)
        result: dict[str, Any] = {
            "operation": measure("operation", operation, timing),
            "sql_rls": measure("SQL under RLS", sql_rls, timing),
            "floor": measure("raw-SQL floor", floor, timing),
        }
        for p in ("p50", "p95", "p99"):
            result[f"ratio_{p}"] = round(result["operation"][p] / result["floor"][p], 2)
        return result

    # -- fixed costs --

    def bench_baseline(self) -> dict[str, dict[str, float]]:
        """What every operation pays before any work, and the floor's own round trip."""
        caller = self.reader

        def preamble(_: int) -> object:
            with self.rls(caller):
                return None

        def one_trip(_: int) -> object:
            return self.db.ping(_deadline(), caller)

        def round_trip(_: int) -> object:
            return self.admin.execute("SELECT 1").fetchone()

        print("baseline:", file=sys.stderr)
        calls = {
            "transaction_preamble": ("pool + BEGIN + set_config + COMMIT", preamble),
            "read_select_1": ("read(SELECT 1): one round trip", one_trip),
            "floor_round_trip": ("SELECT 1 (superuser)", round_trip),
        }
        return measure_together(calls, self.timing)

    # -- the GIN pending list --

    def clean_pending_list(self) -> int:
        """Merge search_documents' GIN pending list into the index; pages it held."""
        row = self.admin.execute(
            "SELECT gin_clean_pending_list('memory.search_documents_document'::regclass)"
        ).fetchone()
        assert row is not None
        return int(row[0])

    def bench_pending_list(self) -> dict[str, Any]:
        """Rare-term search after PENDING_WRITES writes (in another workspace) have gone
        to the GIN pending list, which every search then scans in full."""
        targets = self.write_targets()
        for i in range(PENDING_WRITES):
            target = targets[i % len(targets)]
            body = self.bodies[i % len(self.bodies)]
            title = derive_title("notes", target.path, body)
            self.admin.execute(
                FLOOR_WRITE,
                {
                    "id": target.id,
                    "expected_revision": target.revision,
                    "body": body,
                    "title": title,
                    "principal_id": self.writer.principal_id,
                },
            )
            target.revision += 1
        caller = self.reader

        def search(_: int) -> object:
            return self.tools.run("memory_search", caller, {"query": RARE_TERM}, _deadline())

        print(f"search_rare after {PENDING_WRITES} writes elsewhere:", file=sys.stderr)
        stats = measure("operation", search, self.timing)
        # The plan shows the scan of the pending list directly (buffers), free of noise.
        plan, _ = search_bench.explain_search(self.cluster.owner_url, caller, RARE_TERM)
        return {
            "writes": PENDING_WRITES,
            "search_rare_operation": stats,
            "search_rare_plans": plan,
            "pages": self.clean_pending_list(),
        }

    # -- plans --

    def explain_all(self, cases: dict[str, list[str]]) -> tuple[dict[str, str], dict[str, Any]]:
        """Plans of the statements the operations send, as they were executed: through
        the pooled connection's own prepared statements (so a generic plan shows if
        PostgreSQL chose one), as the runtime role with the request settings; the
        search function's own statements replayed step by step for one question of
        each search case; the floor for the same questions."""
        caller = self.reader
        plans: dict[str, str] = {}
        steps: dict[str, Any] = {}
        common = search_bench.search_params(caller, COMMON_TERM)
        ids = [row["id"] for row in self.search_sql(caller, COMMON_TERM)]
        parsed = parse_query(COMMON_TERM)
        terms = Terms(parsed.words, parsed.phrases, parsed.excluded)
        hydrating = search.hydrate_params(caller, terms, ids, caller.visible_owners())
        with self.rls(caller, search=True) as tx:
            plans["search_candidates() call, runtime role (common term)"] = _explain(
                tx.conn, query("search_candidates"), common
            )
            plans["hydrate_hits, runtime role, RLS (common term)"] = _explain(
                tx.conn, query("hydrate_hits"), hydrating
            )
        for name, texts in cases.items():
            text = texts[0]
            plan, summary = search_bench.explain_search(self.cluster.owner_url, caller, text)
            plans[f"search_candidates() statements ({name}: {text!r})"] = plan
            plans[f"floor search, superuser, no RLS ({name}: {text!r})"] = _explain(
                self.admin,
                search_bench.FLOOR_SEARCH.encode(),
                search_bench.floor_params(caller, text),
            )
            steps[name] = {"question": text, **summary}
        target = self.read_targets()[0]
        address = parse_path_address(target["uri"])
        read_params = {
            **view(caller),
            "owner_id": caller.owner_for(address.namespace),
            "kind": address.kind,
            "path": address.path,
            "contexts": list(caller.context.ancestors),
        }
        with self.rls(caller) as tx:
            plans["resolve_address (read by path), runtime role, RLS"] = _explain(
                tx.conn, query("resolve_address"), read_params
            )
            plans["list_page (first page), runtime role, RLS"] = _explain(
                tx.conn, query("list_page"), self.list_params(caller)
            )
        return plans, steps

    def prepared_statements(self) -> list[dict[str, Any]]:
        """Which plans the pooled connection's prepared statements actually used."""
        with self.db.pool.connection() as conn, conn.transaction():
            rows = conn.execute(
                "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
            ).fetchall()
        found = []
        for row in rows:
            text = str(row["statement"])
            first = next((ln for ln in text.splitlines() if ln.strip()), "").strip()
            found.append(
                {
                    "statement": first[:90],
                    "generic_plans": row["generic_plans"],
                    "custom_plans": row["custom_plans"],
                }
            )
        return sorted(found, key=lambda r: str(r["statement"]))


_PLACEHOLDER = re.compile(rb"%\((\w+)\)s")


def _explain(conn: psycopg.Connection[Any], statement: bytes, params: dict[str, Any]) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of ``statement``, through the statement psycopg
    prepared on ``conn`` if there is one (its plan is the one really used: generic or
    custom, as PostgreSQL's plan cache decided), else with the values bound."""
    names: list[str] = []
    for match in _PLACEHOLDER.finditer(statement):  # psycopg numbers them the same way
        name = match.group(1).decode()
        if name not in names:
            names.append(name)
    numbered = _PLACEHOLDER.sub(
        lambda m: f"${names.index(m.group(1).decode()) + 1}".encode(), statement
    ).decode()
    with conn.cursor(row_factory=tuple_row) as cursor:
        found = cursor.execute(
            "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements "
            "WHERE statement = %s",
            (numbered,),
        ).fetchone()
        if found is None:
            cursor.execute(b"EXPLAIN (ANALYZE, BUFFERS)\n" + statement, params)
            head = "(not prepared on this connection: planned with the values bound)"
        else:
            args = sql.SQL(", ").join(sql.Literal(params[n]) for n in names)
            cursor.execute(
                sql.SQL("EXPLAIN (ANALYZE, BUFFERS) EXECUTE {}({})").format(
                    sql.Identifier(found[0]), args
                )
            )
            head = (
                f"(prepared statement; plan cache so far: {found[1]} generic, "
                f"{found[2]} custom plans)"
            )
        return head + "\n" + "\n".join(str(r[0]) for r in cursor.fetchall())


# --- dataset and machine -------------------------------------------------------------


def describe_dataset(bench: Bench, marker: dict[str, Any]) -> dict[str, Any]:
    admin, caller = bench.admin, bench.reader
    sizes: dict[str, int] = dict(
        admin.execute(
            "SELECT w.slug, count(m.id) FROM memory.workspaces w "
            "LEFT JOIN memory.memories m ON m.workspace_id = w.id GROUP BY w.slug"
        ).fetchall()
    )
    largest = sizes[bench.tenants[0].slug]
    others = [n for slug, n in sizes.items() if slug != bench.tenants[0].slug]
    visible = admin.execute(
        "SELECT count(*), count(*) FILTER (WHERE kind = ANY (%s)) FROM memory.memories "
        "WHERE workspace_id = %s AND owner_id = ANY (%s) AND context_key = ANY (%s)",
        (
            SEARCH_KINDS,
            caller.workspace_id,
            caller.visible_owners(),
            list(caller.context.ancestors),
        ),
    ).fetchone()
    assert visible is not None
    terms = {}
    corpus = marker.get("corpus_term_matches", {})
    for label, term in (("rare", RARE_TERM), ("typical", TYPICAL_TERM), ("common", COMMON_TERM)):
        # memories.search_vector is the document before any index-specific rewriting
        # (search_documents may store it in another form); the floor index serves this.
        counts = admin.execute(
            "SELECT count(*), count(*) FILTER (WHERE owner_id = ANY (%(owners)s) "
            "  AND context_key = ANY (%(contexts)s) AND kind = ANY (%(kinds)s)) "
            "FROM memory.memories WHERE workspace_id = %(ws)s "
            "AND search_vector @@ websearch_to_tsquery('english', %(q)s)",
            {
                "ws": caller.workspace_id,
                "owners": caller.visible_owners(),
                "q": term,
                "contexts": list(caller.context.ancestors),
                "kinds": SEARCH_KINDS,
            },
        ).fetchone()
        assert counts is not None
        terms[label] = {
            "query": term,
            "largest_workspace": counts[0],
            "largest_workspace_percent": round(100 * counts[0] / largest, 3),
            "visible_to_reader": counts[1],
            "corpus": corpus.get(label),
        }
    body = admin.execute(
        "SELECT avg(octet_length(body))::int, min(octet_length(body)), max(octet_length(body)) "
        "FROM memory.memories TABLESAMPLE SYSTEM (2)"
    ).fetchone()
    relations = admin.execute(
        "SELECT c.relname, pg_size_pretty(pg_total_relation_size(c.oid)) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'memory' AND c.relname IN ('memories', 'search_documents', "
        "'revisions', 'search_documents_document', 'search_statistics', %s, %s)",
        (seed.FLOOR_INDEX, search_bench.FLOOR_TERMS_INDEX),
    ).fetchall()
    principals = admin.execute("SELECT count(*) FROM memory.principals").fetchone()
    assert body is not None and principals is not None
    return {
        "records": sum(sizes.values()),
        "workspaces": len(sizes),
        "largest_workspace": largest,
        "other_workspaces": {"count": len(others), "min": min(others), "max": max(others)},
        "principals": principals[0],
        "people_per_workspace": seed.PEOPLE_PER_WORKSPACE,
        "reader": {
            "context": seed.READER_CONTEXT,
            "visible_records": visible[0],
            "visible_memories_and_notes": visible[1],
        },
        "shares": {
            "shared_owner": seed.SHARED_SHARE,
            "contexts": dict(seed.CONTEXT_SHARES),
            "kinds": dict(seed.KIND_SHARES),
        },
        "body_bytes_sampled": {"avg": body[0], "min": body[1], "max": body[2]},
        "terms": terms,
        "relation_sizes": dict(relations),
        "seed_seconds": marker.get("seed_seconds"),
    }


def describe_machine(admin: psycopg.Connection[Any]) -> dict[str, Any]:
    cpu = ""
    memory = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f"{int(line.split()[1]) // (1024 * 1024)} GiB"
                break
    except OSError:
        pass
    settings = {}
    for name in (
        "server_version",
        "shared_buffers",
        "work_mem",
        "effective_cache_size",
        "random_page_cost",
        "jit",
        "fsync",
        "synchronous_commit",
    ):
        row = admin.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()
        settings[name] = row[0] if row else None
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu": cpu,
        "memory": memory,
        "os": platform.platform(terse=True),
        "python": platform.python_version(),
        "psycopg": psycopg.__version__,
        "postgres": settings,
    }


# --- report --------------------------------------------------------------------------

_LABELS = {
    "read_by_path": "read by path",
    "conditional_write": "conditional write",
    "search_rare": "search, rare term",
    "search_typical": "search, typical term",
    "search_common": "search, common term (10%)",
    "list_first_page": "list, first page",
    "brief": "brief (memory_brief, 4096 bytes)",
}


def check_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    checks = []
    for name, limits in TARGETS_MS.items():
        if name not in results:  # not measured in this run (--cases)
            continue
        for p, limit in limits.items():
            value = results[name]["operation"][p]
            checks.append(
                {
                    "operation": name,
                    "target": f"{p} <= {limit} ms",
                    "value": value,
                    "met": value <= limit,
                }
            )
    if "brief" in results and "list_first_page" in results:
        over = results["brief"]["operation"]["p95"] / results["list_first_page"]["operation"]["p95"]
        checks.append(
            {
                "operation": "brief",
                "target": f"p95 <= {BRIEF_OVER_LIST}x a list page's p95",
                "value": round(over, 2),
                "met": over <= BRIEF_OVER_LIST,
            }
        )
    for name, result in results.items():
        for p in ("p50", "p95"):
            ratio = result[f"ratio_{p}"]
            checks.append(
                {
                    "operation": name,
                    "target": f"{p} <= {MAX_FLOOR_RATIO}x floor",
                    "value": ratio,
                    "met": ratio <= MAX_FLOOR_RATIO,
                }
            )
    return checks


def markdown_table(results: dict[str, Any]) -> str:
    def triple(stats: dict[str, float]) -> str:
        return f"{stats['p50']:.2f} / {stats['p95']:.2f} / {stats['p99']:.2f}"

    lines = [
        "| Operation | Operation p50 / p95 / p99 | SQL under RLS p50 / p95 / p99 "
        "| Raw-SQL floor p50 / p95 / p99 | Operation ÷ floor (p50, p95) |",
        "|---|---|---|---|---|",
    ]
    for name, result in results.items():
        lines.append(
            f"| {_LABELS.get(name, name)} | {triple(result['operation'])} "
            f"| {triple(result['sql_rls'])} | {triple(result['floor'])} "
            f"| {result['ratio_p50']:.2f}×, {result['ratio_p95']:.2f}× |"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> dict[str, Any]:
    spec = seed.SeedSpec(args.records, args.largest, args.seed)
    with seed.server(args.keep) as (server_url, embedded):
        cluster, marker = seed.prepare(server_url, spec, reseed=args.reseed)
        tenants = seed.load_tenants(cluster, spec)
        bench = Bench(cluster, tenants, args)
        try:
            report = _run_bench(bench, marker, args)
        finally:
            bench.close()
        if not args.keep and not embedded:
            with psycopg.connect(server_url, autocommit=True) as admin:
                admin.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                        sql.Identifier(spec.database)
                    )
                )
    return report


def _run_bench(bench: Bench, marker: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    load_before = os.getloadavg()
    # Searches scan the whole GIN pending list; start every run from an empty one so
    # runs compare, and measure the pending list's cost on its own afterwards.
    leftover = bench.clean_pending_list()
    search_bench.ensure_floor_index(bench.admin, bench.reader.workspace_id)
    chosen = set(args.cases)
    whole = chosen == set(CASE_GROUPS)
    cases = bench.search_cases() if "search" in chosen else {}
    baseline = bench.bench_baseline()
    results: dict[str, Any] = {}
    if "read" in chosen:
        results["read_by_path"] = bench.bench_read()
    if "list" in chosen:
        results["list_first_page"] = bench.bench_list()
    if "brief" in chosen:
        results["brief"] = bench.bench_brief()
    for name, texts in cases.items():
        results[name] = bench.bench_search(name, texts)
    if "write" in chosen:
        results["conditional_write"] = bench.bench_write()
    write_cost = bench.bench_write_cost() if whole else None
    write_pending = bench.clean_pending_list() if whole else None
    pending = bench.bench_pending_list() if whole else {}
    prepared = bench.prepared_statements()
    plans, steps = bench.explain_all(cases) if whole else ({}, {})
    command = "python -m bench.store_bench " + " ".join(
        f"--{k} {getattr(args, k)}" for k in ("records", "largest", "iterations")
    )
    if not whole:
        command += " --cases " + ",".join(c for c in CASE_GROUPS if c in chosen)
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "settings": {
            "iterations": args.iterations,
            "warmup": args.warmup,
            "budget_s": args.budget,
            "seed": args.seed,
        },
        "machine": describe_machine(bench.admin),
        "dataset": describe_dataset(bench, marker),
        "results": results,
        "targets": check_targets(results),
        "baseline": baseline,
        "search_words": {
            "bands": ({k: len(v) for k, v in asdict(bench.bands).items()} if bench.bands else None),
            "steps": steps,
        },
        "write_path": write_cost,
        "gin_pending_list": {
            "pages_left_by_earlier_runs": leftover,
            "pages_after_write_benchmark": write_pending,
            **pending,
        },
        "prepared_statements": prepared,
        "explain": plans,
        "measure_seconds": round(time.monotonic() - started, 1),
        # Other work on the machine shows up here (the benchmark itself keeps ~1 core busy).
        "load_average": {"before": load_before, "after": os.getloadavg()},
    }


def _case_list(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in CASE_GROUPS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(CASE_GROUPS)}")
    return names


def parse_cli(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.store_bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--records", type=int, default=1_000_000, help="records in total")
    parser.add_argument(
        "--largest",
        type=int,
        default=200_000,
        help="records in the largest workspace (the one measured)",
    )
    parser.add_argument("--iterations", type=int, default=1000, help="timed calls per measurement")
    parser.add_argument("--warmup", type=int, default=50, help="untimed calls before each")
    parser.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="seconds per measurement at most (slow statements get fewer calls)",
    )
    parser.add_argument("--seed", type=int, default=42, help="random seed of the corpus")
    parser.add_argument(
        "--cases",
        type=_case_list,
        default=CASE_GROUPS,
        help=f"comma-separated measurements out of {','.join(CASE_GROUPS)} (default: all; "
        "with fewer, the write path, GIN pending list and plans are left out)",
    )
    parser.add_argument(
        "--keep",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep the seeded database for later runs (default)",
    )
    parser.add_argument(
        "--reseed", action="store_true", help="seed again even if a matching seeded database exists"
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results file")
    args = parser.parse_args(argv)
    if args.largest >= args.records:
        parser.error("--largest must be smaller than --records")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_cli(argv)
    report = run(args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2, default=str) + "\n")
    for name, plan in report["explain"].items():
        print(f"\n### EXPLAIN (ANALYZE, BUFFERS): {name}\n\n```\n{plan}\n```")
    print("\n## Latency (ms)\n")
    print(markdown_table(report["results"]))
    iterations = report["settings"]["iterations"]
    for name, result in report["results"].items():
        for flavour in ("operation", "sql_rls", "floor"):
            if result[flavour]["n"] < iterations:
                print(f"\n{name} {flavour}: {result[flavour]['n']} calls (time budget)")
    print("\n## Targets\n")
    for check in report["targets"]:
        mark = "met" if check["met"] else "MISSED"
        print(f"- {check['operation']}: {check['target']}: {check['value']} ({mark})")
    try:
        shown = args.output.resolve().relative_to(seed.ROOT)
    except ValueError:
        shown = args.output
    print(f"\nresults written to {shown}", file=sys.stderr)


if __name__ == "__main__":
    main()
