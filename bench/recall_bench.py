"""Recall-quality benchmark: do the questions people ask find the record that answers?

Run as ``python -m bench.recall_bench`` (docs/performance.md, "Recall quality"). It
writes the recall set (``bench/recall_set.py``: about 2,000 memories, about 500
questions with their evidence) into a fresh database through the real tools, as three
members' agents (``memory_write`` for notes, ``memory_remember`` fact by fact for
profiles), dates each record as the set says, and asks every question four ways:

- ``search``: ``memory_search`` through the tool table, as the reader (the product);
- ``and``: the search this replaces, replayed in SQL: ``websearch_to_tsquery`` (every
  word required), the 500 most recently updated matches, ``ts_rank_cd``;
- ``bm25``: a plain BM25 (``rank_bm25.BM25Okapi``, lowercase word tokens, no
  stemming, no stop list) over the same record texts, in Python;
- ``exhaustive``: the product's own score computed for every match in one SQL
  statement, without the search's bounds: its top 8 against ``search``'s shows what
  bounding the work costs.

Reported per system: hit@1, hit@5, hit@8 (an evidence record among the first k),
MRR over the first 8, and the share of questions with no result at all.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import secrets
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from memory_local.postgres import admin_server
from memory_server.admin import operators
from memory_server.data import migrate
from memory_server.data.pool import Database
from memory_server.data.provision import Passwords, provision
from memory_server.domain.caller import Caller
from memory_server.domain.contexts import parse_context
from memory_server.domain.deadline import Deadline
from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES
from memory_server.domain.search_query import parse_query
from memory_server.operations.membership import resolve_caller
from memory_server.operations.store import Store
from memory_server.protocol.tools import ToolTable

from .recall_set import CHECKSUM, COLLEAGUES, READER, Memory, Question, RecallSet, generate
from .search_bench import EXHAUSTIVE_RANKING

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "recall.json"
KINDS = ["memories", "notes"]  # memory_search's default kinds
TOP = 8

# The search this replaces (migrations 0009-0010): every word required, the newest 500
# visible matches ranked with ts_rank_cd, ties by id.
AND_SEARCH = """
WITH q AS (SELECT websearch_to_tsquery('english', %(query)s) AS q),
matches AS (
    SELECT m.id, m.search_vector
    FROM memory.memories AS m, q
    WHERE m.workspace_id = %(workspace_id)s AND m.owner_id = ANY (%(owners)s)
      AND m.context_key = ANY (%(contexts)s) AND m.kind = ANY (%(kinds)s)
      AND m.search_vector @@ q.q
    ORDER BY m.updated_at DESC
    LIMIT 500
)
SELECT matches.id FROM matches, q
ORDER BY ts_rank_cd(matches.search_vector, q.q) DESC, matches.id
LIMIT %(top)s
"""

Searcher = Callable[[Question], list[str]]
Writer = Callable[[str, dict[str, Any]], dict[str, Any]]


# -- loading -----------------------------------------------------------------------------


def load(
    recall: RecallSet, writers: dict[str, Writer], admin: psycopg.Connection[Any]
) -> dict[str, str]:
    """Write every memory through its writer's tools and date it; returns key -> record id."""
    ids: dict[str, str] = {}
    for memory in recall.memories:
        write = writers[memory.writer]
        if memory.facts:
            for n, fact in enumerate(memory.facts):
                result = write(
                    "memory_remember",
                    {"uri": memory.uri, "fact": fact, "idempotency_key": f"{memory.key}-fact-{n}"},
                )
        else:
            result = write(
                "memory_write",
                {"uri": memory.uri, "content": memory.content, "expected_revision": 0},
            )
        ids[memory.key] = result["id"]
    backdate(recall.memories, ids, admin)
    return ids


def backdate(
    memories: Sequence[Memory], ids: dict[str, str], admin: psycopg.Connection[Any]
) -> None:
    """Each record last updated at noon UTC of its day (the search index follows)."""
    with admin.cursor() as cursor:
        cursor.executemany(
            "UPDATE memory.memories SET updated_at = (%s::date + time '12:00') AT TIME ZONE 'UTC' "
            "WHERE id = %s",
            [(m.day, ids[m.key]) for m in memories],
        )


# -- the systems -------------------------------------------------------------------------


def view_params(caller: Caller) -> dict[str, Any]:
    return {
        "workspace_id": caller.workspace_id,
        "owners": caller.visible_owners(),
        "contexts": list(caller.context.ancestors),
        "kinds": KINDS,
        "top": TOP,
    }


def product_search(tools: ToolTable, caller: Caller) -> Searcher:
    def run(question: Question) -> list[str]:
        result = tools.run("memory_search", caller, {"query": question.text}, Deadline())
        return [hit["id"] for hit in result["hits"]]

    return run


def and_search(admin: psycopg.Connection[Any], caller: Caller) -> Searcher:
    params = view_params(caller)

    def run(question: Question) -> list[str]:
        rows = admin.execute(AND_SEARCH, {**params, "query": question.text}).fetchall()
        return [str(row[0]) for row in rows]

    return run


def exhaustive_search(admin: psycopg.Connection[Any], caller: Caller) -> Searcher:
    params = view_params(caller)

    def run(question: Question) -> list[str]:
        words = parse_query(question.text).words
        # Phrases and exclusions are not used by the recall set.
        rows = admin.execute(EXHAUSTIVE_RANKING, {**params, "words": words}).fetchall()
        return [str(row[0]) for row in rows]

    return run


TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


def bm25_search(texts: dict[str, str], order: dict[str, str]) -> Searcher:
    """Plain BM25 (rank_bm25's BM25Okapi with its defaults) over the given texts (record
    id -> text); ties go by ``order`` (record id -> the set's key), so runs agree."""
    from rank_bm25 import BM25Okapi  # a development dependency, for this baseline only

    ids = sorted(texts, key=lambda i: order[i])
    index = BM25Okapi([tokens(texts[i]) for i in ids])

    def run(question: Question) -> list[str]:
        scores = index.get_scores(tokens(question.text))
        ranked = sorted(range(len(ids)), key=lambda i: (-scores[i], i))
        return [ids[i] for i in ranked[:TOP] if scores[i] > 0]

    return run


# -- scoring -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    question: Question
    found: list[str]  # record ids, best first
    rank: int | None  # 1-based rank of the first evidence record among the first TOP


def outcomes(questions: Sequence[Question], ids: dict[str, str], search: Searcher) -> list[Outcome]:
    result = []
    for question in questions:
        found = search(question)[:TOP]
        evidence = {ids[key] for key in question.evidence}
        rank = next((i + 1 for i, record in enumerate(found) if record in evidence), None)
        result.append(Outcome(question, found, rank))
    return result


def metrics(results: Sequence[Outcome]) -> dict[str, float]:
    n = len(results)

    def share(predicate: Callable[[Outcome], bool]) -> float:
        return round(sum(1 for r in results if predicate(r)) / n, 4)

    return {
        "questions": n,
        "hit@1": share(lambda r: r.rank is not None and r.rank <= 1),
        "hit@5": share(lambda r: r.rank is not None and r.rank <= 5),
        "hit@8": share(lambda r: r.rank is not None),
        "mrr": round(sum(1 / r.rank for r in results if r.rank) / n, 4),
        "no_result": share(lambda r: not r.found),
    }


def overlap(left: Sequence[Outcome], right: Sequence[Outcome]) -> dict[str, float]:
    """How far two systems' top results agree, question by question."""
    same_list = sum(1 for a, b in zip(left, right, strict=True) if a.found == b.found)
    shared = [
        len(set(a.found) & set(b.found)) / max(len(b.found), 1)
        for a, b in zip(left, right, strict=True)
    ]
    return {
        "identical_top_8": round(same_list / len(left), 4),
        "identical_top_8_sets": round(
            sum(1 for a, b in zip(left, right, strict=True) if set(a.found) == set(b.found))
            / len(left),
            4,
        ),
        "mean_overlap": round(statistics.fmean(shared), 4),
    }


def by_topic(results: Sequence[Outcome]) -> dict[str, float]:
    topics = sorted({r.question.topic for r in results})
    return {t: metrics([r for r in results if r.question.topic == t])["hit@5"] for t in topics}


# -- the run ------------------------------------------------------------------------------


@contextmanager
def database() -> Iterator[tuple[str, str, str]]:
    """A fresh, migrated database: (admin URL, owner URL, runtime URL)."""
    with admin_server(ROOT / ".tmp" / f"recall-{os.getpid()}") as (base, embedded):
        name = f"recall_{uuid.uuid4().hex[:10]}"
        try:
            made = provision(base, Passwords.generate(), database=name)
            yield made.admin_url, made.owner_url, made.runtime_url
        finally:
            if not embedded:  # an embedded server goes with its databases
                migrate.drop_database(base, name)


def run(args: argparse.Namespace) -> dict[str, Any]:
    recall = generate()
    if recall.checksum() != CHECKSUM:
        raise SystemExit(
            f"the recall set changed (checksum {recall.checksum()}, expected {CHECKSUM})"
        )
    if args.questions:
        recall = recall.slice(args.questions)
    with database() as (admin_url, owner_url, runtime_url):
        with psycopg.connect(owner_url, autocommit=True) as owner:
            ws = operators.ensure_workspace(owner, "recall", memory_enabled=True)
            subjects = {}
            for handle in (READER, *COLLEAGUES):
                subjects[handle] = f"recall-{handle}"
                pid = operators.ensure_principal(owner, "person", subjects[handle], handle)
                operators.set_membership(owner, ws, pid, ALL_GRANTS)
        db = Database(runtime_url, min_size=1, max_size=2)
        store = Store(db, cursor_secret=secrets.token_bytes(32))
        tools = ToolTable(store)
        scopes = [GRANT_SCOPES[g] for g in ALL_GRANTS]

        def caller(handle: str) -> Caller:
            membership = resolve_caller(
                db,
                workspace="recall",
                subject=subjects[handle],
                scopes=scopes,
                context=parse_context("workspace"),
            )
            assert membership is not None
            return membership.caller

        callers = {handle: caller(handle) for handle in subjects}

        def writer(handle: str) -> Writer:
            return lambda tool, raw: tools.run(tool, callers[handle], raw, Deadline())

        try:
            with psycopg.connect(admin_url, autocommit=True) as admin:
                started = time.monotonic()
                ids = load(recall, {h: writer(h) for h in subjects}, admin)
                load_seconds = time.monotonic() - started
                admin.execute("VACUUM ANALYZE memory.search_documents")
                texts: dict[str, str] = dict(
                    admin.execute(
                        "SELECT id::text, body FROM memory.memories WHERE workspace_id = %s",
                        (ws,),
                    ).fetchall()
                )
                reader = callers[READER]
                systems: dict[str, Searcher] = {
                    "search": product_search(tools, reader),
                    "and": and_search(admin, reader),
                    "bm25": bm25_search(texts, {v: k for k, v in ids.items()}),
                    "exhaustive": exhaustive_search(admin, reader),
                }
                results: dict[str, list[Outcome]] = {}
                seconds: dict[str, list[float]] = {}
                for name, search in systems.items():
                    timings: list[float] = []

                    def timed(
                        q: Question, search: Searcher = search, t: list[float] = timings
                    ) -> list[str]:
                        begun = time.perf_counter()
                        found = search(q)
                        t.append((time.perf_counter() - begun) * 1000)
                        return found

                    results[name] = outcomes(recall.questions, ids, timed)
                    seconds[name] = timings
        finally:
            db.close()
    report: dict[str, Any] = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python -m bench.recall_bench"
        + (f" --questions {args.questions}" if args.questions else ""),
        "set": {
            "checksum": CHECKSUM,
            "memories": len(recall.memories),
            "questions": len(recall.questions),
            "questions_with_several_evidence_records": sum(
                1 for q in recall.questions if len(q.evidence) > 1
            ),
            "load_seconds": round(load_seconds, 1),
        },
        "metrics": {name: metrics(r) for name, r in results.items()},
        "hit@5_by_topic": {name: by_topic(r) for name, r in results.items()},
        "search_vs_exhaustive": overlap(results["search"], results["exhaustive"]),
        "latency_ms": {
            name: {
                "p50": round(statistics.median(t), 2),
                "p95": round(sorted(t)[math.ceil(0.95 * len(t)) - 1], 2),
            }
            for name, t in seconds.items()
        },
        "misses": [
            {"question": r.question.text, "evidence": list(r.question.evidence)}
            for r in results["search"]
            if r.rank is None
        ],
    }
    return report


def markdown(report: dict[str, Any]) -> str:
    labels = {
        "search": "memory_search (any term, BM25)",
        "and": "the AND search it replaces",
        "bm25": "plain BM25 (rank_bm25)",
        "exhaustive": "the same score, exhaustive",
    }
    lines = [
        "| System | hit@1 | hit@5 | hit@8 | MRR | no result |",
        "|---|---|---|---|---|---|",
    ]
    for name, m in report["metrics"].items():
        lines.append(
            f"| {labels[name]} | {m['hit@1']:.3f} | {m['hit@5']:.3f} | {m['hit@8']:.3f} "
            f"| {m['mrr']:.3f} | {100 * m['no_result']:.1f} % |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.recall_bench", description=__doc__)
    parser.add_argument(
        "--questions", type=int, default=0, help="a slice of this many questions (0: all)"
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results file")
    args = parser.parse_args(argv)
    report = run(args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(markdown(report))
    print(
        json.dumps({k: report[k] for k in ("set", "search_vs_exhaustive", "latency_ms")}, indent=2)
    )
    print(
        f"{len(report['misses'])} questions without an evidence record in the top 8",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
