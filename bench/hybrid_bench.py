"""Hybrid recall benchmark: words alone against words fused with meaning.

Run as ``python -m bench.hybrid_bench`` (docs/performance.md, "Hybrid recall"). For
each of the project's two recall sets, the recall set (``bench/recall_set.py``, asked
mostly with the notes' own names) and the paraphrase set (``bench/paraphrase_set.py``,
asked in other words), it writes every memory into a fresh database through the real
tools, embeds them with the local model (``memory_local.embedder``) through the
backfill (``operations.embeddings.backfill``, timed: the backfill rate), then asks
every question through ``memory_search`` twice: with no embedder (``lexical``, today's
search) and with it (``hybrid``), at each meaning weight of ``--weights``. Reported per
set and system: hit@1, hit@5, hit@8, MRR and the search's p50/p95 in the process.

``--distractors N`` first writes N notes of the stack benchmark's corpus
(``bench/corpus.py``: everyday words, 200 to 2,000 bytes) as a colleague's shared
notes into each set's workspace: records that compete for every question's words and
meaning and were not written to answer any, so that the search's bounds (the words'
fetch and score budgets, the HNSW index's proposals) are measured at a size where
they bind.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import secrets
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from memory_local.embedder import LocalEmbedder
from memory_server.admin import operators
from memory_server.data.pool import Database
from memory_server.domain.caller import Caller
from memory_server.domain.contexts import parse_context
from memory_server.domain.deadline import Deadline
from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES
from memory_server.operations.embeddings import backfill
from memory_server.operations.membership import resolve_caller
from memory_server.operations.store import Store
from memory_server.protocol.tools import ToolTable

from .corpus import TextGenerator
from .paraphrase_set import load_paraphrase_set
from .recall_bench import Outcome, database, load, metrics, outcomes
from .recall_set import COLLEAGUES, READER, Question, RecallSet, generate

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "hybrid.json"
DISTRACTOR_SEED = 30
WEIGHTS = "0.25,0.35,0.5"  # below, at and above the default (limits.SEARCH_FUSION_MEANING_WEIGHT)


def _p(values: Sequence[float], q: float) -> float:
    return round(sorted(values)[math.ceil(q * len(values)) - 1], 2)


def write_distractors(write: Callable[[str, dict[str, Any]], dict[str, Any]], count: int) -> None:
    """``count`` corpus notes, written to answer no question of the sets, the same
    ones for every set (one seed)."""
    generator = TextGenerator(random.Random(DISTRACTOR_SEED))
    for n in range(count):
        write(
            "memory_write",
            {
                "uri": f"memory://workspace/notes/archive/{generator.slug()}-{n:05d}.md",
                "content": generator.document().body,
                "expected_revision": 0,
            },
        )


def run_set(
    name: str,
    recall: RecallSet,
    embedder: LocalEmbedder,
    weights: list[float],
    distractors: int = 0,
) -> dict[str, Any]:
    with database() as (admin_url, owner_url, runtime_url):
        with psycopg.connect(owner_url, autocommit=True) as owner:
            ws = operators.ensure_workspace(owner, "recall", memory_enabled=True)
            subjects = {}
            for handle in (READER, *COLLEAGUES):
                subjects[handle] = f"recall-{handle}"
                pid = operators.ensure_principal(owner, "person", subjects[handle], handle)
                operators.set_membership(owner, ws, pid, ALL_GRANTS)
        db = Database(runtime_url, min_size=1, max_size=2)
        try:
            lexical = Store(db, cursor_secret=secrets.token_bytes(32))
            hybrid = Store(db, cursor_secret=lexical.cursor_secret, embedder=embedder)
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

            callers = {h: caller(h) for h in subjects}
            writes = ToolTable(lexical)

            def writer(handle: str) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
                return lambda tool, raw: writes.run(tool, callers[handle], raw, Deadline())

            write_distractors(writer(COLLEAGUES[0]), distractors)
            with psycopg.connect(admin_url, autocommit=True) as admin:
                ids = load(recall, {h: writer(h) for h in subjects}, admin)
                admin.execute("VACUUM ANALYZE memory.search_documents")
            started = time.monotonic()
            stored, left = backfill(owner_url, embedder)
            backfill_s = time.monotonic() - started
            with psycopg.connect(admin_url, autocommit=True) as admin:
                admin.execute("VACUUM ANALYZE memory.search_embeddings")

            def system(store: Store) -> tuple[list[Outcome], list[float]]:
                tools = ToolTable(store)
                timings: list[float] = []

                def ask(q: Question) -> list[str]:
                    begun = time.perf_counter()
                    found = tools.run(
                        "memory_search", callers[READER], {"query": q.text}, Deadline()
                    )
                    timings.append((time.perf_counter() - begun) * 1000)
                    return [hit["id"] for hit in found["hits"]]

                return outcomes(recall.questions, ids, ask), timings

            report: dict[str, Any] = {}
            results, timings = system(lexical)
            report["lexical"] = {
                **metrics(results),
                "p50_ms": _p(timings, 0.5),
                "p95_ms": _p(timings, 0.95),
            }
            for weight in weights:
                hybrid.meaning_weight = weight
                results, timings = system(hybrid)
                report[f"hybrid w={weight}"] = {
                    **metrics(results),
                    "p50_ms": _p(timings, 0.5),
                    "p95_ms": _p(timings, 0.95),
                }
        finally:
            db.close()
    return {
        "set": name,
        "memories": len(recall.memories),
        "distractors": distractors,
        "questions": len(recall.questions),
        "records_embedded": stored,
        "left_in_queue": left,
        "backfill_seconds": round(backfill_s, 1),
        "backfill_records_per_s": round(stored / backfill_s, 1) if backfill_s else None,
        "systems": report,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.hybrid_bench", description=__doc__)
    parser.add_argument("--weights", default=WEIGHTS, help="meaning weights to measure")
    parser.add_argument("--questions", type=int, default=0, help="a slice of each set (0: all)")
    parser.add_argument(
        "--distractors", type=int, default=0, help="corpus notes written beside each set"
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",")]
    embedder = LocalEmbedder(threads=2)
    sets = {"recall": generate(), "paraphrase": load_paraphrase_set()}
    runs = []
    for name, recall in sets.items():
        if args.questions:
            recall = recall.slice(args.questions)
        runs.append(run_set(name, recall, embedder, weights, args.distractors))
        print(json.dumps(runs[-1], indent=1))
    report = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python -m bench.hybrid_bench"
        + (f" --weights {args.weights}" if args.weights != WEIGHTS else "")
        + (f" --questions {args.questions}" if args.questions else "")
        + (f" --distractors {args.distractors}" if args.distractors else ""),
        "model": embedder.model,
        "runs": runs,
        "p95_ms_note": "in-process tool calls (the store and the model), one client",
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
