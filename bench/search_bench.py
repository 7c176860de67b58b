"""The search part of the store benchmark: questions, the exhaustive floor, plans.

``bench.store_bench`` times ``memory_search`` for single terms (rare, typical, the
10 % term) and for natural-language questions of 1, 3 and 8 meaningful words that mix
rare and common terms. Each is set against a raw-SQL floor that ranks every match of
the same any-term query with the same score, as the superuser, in one statement,
helped by a bench-only GIN index on the measured workspace's terms; the floor's top 8
is also what the search's top 8 is compared with (``overlap``). The plans come from
replaying the search function's steps: it reports each step (``memory.search_trace``)
and each is run again under ``EXPLAIN (ANALYZE, BUFFERS)`` with the same generic plan.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from memory_server.data.pool import request_settings
from memory_server.data.records import view
from memory_server.data.statements import query
from memory_server.domain.caller import Caller
from memory_server.domain.limits import SEARCH_FETCH_BUDGET, SEARCH_SCORE_BUDGET
from memory_server.domain.search_query import parse_query
from psycopg import sql

SEARCH_KINDS = ["memories", "notes"]  # memory_search's default kinds
FLOOR_TERMS_INDEX = "bench_floor_terms"

# Every visible match of the query's words ranked with the search's own score
# (statistics from memory.search_statistics, as the search reads them), best
# ``top`` first: the exhaustive ranking the bounded search is compared with, here
# and in the recall benchmark.
EXHAUSTIVE_RANKING = """
WITH units AS (
    SELECT l AS lexeme, memory.search_any(ARRAY[l]) AS q
    FROM unnest(tsvector_to_array(to_tsvector('english', %(words)s))) AS l
), counted AS (
    SELECT u.q, (SELECT coalesce(sum(s.documents), 0) FROM memory.search_statistics AS s
                 WHERE s.workspace_id = %(workspace_id)s AND s.owner_id = ANY (%(owners)s)
                   AND s.context_key = ANY (%(contexts)s) AND s.lexeme = u.lexeme) AS df
    FROM units AS u
), total AS (
    SELECT coalesce(sum(s.documents), 0) AS n FROM memory.search_statistics AS s
    WHERE s.workspace_id = %(workspace_id)s AND s.owner_id = ANY (%(owners)s)
      AND s.context_key = ANY (%(contexts)s) AND s.lexeme = ''
)
SELECT d.memory_id,
       (SELECT coalesce(sum(memory.search_idf(total.n, c.df)
                            * memory.search_bm25(memory.search_tf(d.terms, c.q), d.length)), 0)
        FROM counted AS c WHERE memory.search_tf(d.terms, c.q) > 0)
       + memory.search_prior(d.updated_at, now()) AS score
FROM memory.search_documents AS d, total
WHERE d.workspace_id = %(workspace_id)s
  AND d.terms @@ (SELECT memory.search_any(array_agg(u.lexeme)) FROM units AS u)
  AND d.owner_id = ANY (%(owners)s) AND d.context_key = ANY (%(contexts)s)
  AND d.kind = ANY (%(kinds)s)
ORDER BY score DESC, d.memory_id
LIMIT %(top)s
"""

# The floor: that ranking's best 8 with their excerpts, as the search answers them.
FLOOR_SEARCH = f"""
WITH top AS ({EXHAUSTIVE_RANKING})
SELECT top.memory_id, top.score,
       ts_headline('english', left(m.body, 20000),
                   memory.search_any(tsvector_to_array(to_tsvector('english', %(words)s))),
                   'StartSel="", StopSel="", MaxWords=70, MinWords=25, MaxFragments=2, '
                   'FragmentDelimiter=" … "')
FROM top JOIN memory.memories AS m ON m.id = top.memory_id
ORDER BY top.score DESC, top.memory_id
"""

# Stop words only, so that each question's meaningful words are exactly the chosen ones.
TEMPLATES = {
    1: ["what about the {0}?", "{0}", "did we ever have the {0}?"],
    3: [
        "what did we do about the {0} {1} and the {2}?",
        "when was the {0} for the {1} {2}?",
        "how is the {0} with {1} and {2}?",
    ],
    8: [
        "what did we do about the {0} {1} and the {2} {3} when the {4} {5} was {6} {7}?",
        "why was the {0} {1} {2} for the {3} and {4} {5} {6} {7}?",
        "how did the {0} and the {1} {2} {3} with the {4} {5} {6} {7}?",
    ],
}


@dataclass(frozen=True, slots=True)
class Bands:
    """Words of the measured view by the share of its records that hold them (the
    bench vocabulary's words all hold 2 % or more; rare words are planted)."""

    rare: list[str]  # under 0.1 %
    uncommon: list[str]  # 2-3 %
    typical: list[str]  # 3-6 %
    common: list[str]  # 6-15 %
    very_common: list[str]  # 15-50 %


def word_bands(admin: psycopg.Connection[Any], caller: Caller, words: Sequence[str]) -> Bands:
    """The vocabulary's words by document frequency in the caller's view."""
    lexemes: dict[str, str] = {}
    for word in words:
        row = admin.execute(
            "SELECT (tsvector_to_array(to_tsvector('english', %s)))[1]", (word,)
        ).fetchone()
        if row is not None and row[0]:
            lexemes[word] = row[0]
    rows = admin.execute(
        "SELECT lexeme, sum(documents) FROM memory.search_statistics "
        "WHERE workspace_id = %s AND owner_id = ANY (%s) AND context_key = ANY (%s) "
        "AND lexeme = ANY (%s) GROUP BY lexeme",
        (
            caller.workspace_id,
            caller.visible_owners(),
            list(caller.context.ancestors),
            [*lexemes.values(), ""],
        ),
    ).fetchall()
    counts = dict(rows)
    share = {w: counts[lx] / counts[""] for w, lx in lexemes.items() if lx in counts}
    # One word per lexeme: "decide" and "decided" would be the same term twice.
    seen: set[str] = set()
    unique = []
    for word in sorted(share):
        if lexemes[word] not in seen:
            seen.add(lexemes[word])
            unique.append(word)

    def band(low: float, high: float) -> list[str]:
        return [w for w in unique if low <= share[w] < high]

    return Bands(
        band(0, 0.001),
        band(0.02, 0.03),
        band(0.03, 0.06),
        band(0.06, 0.15),
        band(0.15, 0.5),
    )


# The bands of a question's words: one rare or uncommon word, then the rest.
MIXES = {
    1: [["rare"], ["uncommon"], ["typical"], ["common"], ["very_common"]],
    3: [["rare", "typical", "common"], ["uncommon", "typical", "common"]],
    8: [
        ["rare", "uncommon", "typical", "typical", "common", "common", "common", "very_common"],
        ["uncommon", "typical", "typical", "typical", "common", "common", "common", "very_common"],
    ],
}


def questions(bands: Bands, meaningful: int, count: int, seed: int) -> list[str]:
    """``count`` questions of ``meaningful`` words drawn from the bands (MIXES), in a
    template of stop words."""
    rng = random.Random(seed * 100 + meaningful)
    made = []
    for i in range(count):
        mix = MIXES[meaningful][i % len(MIXES[meaningful])]
        words: list[str] = []
        for name in mix:
            pool = [w for w in getattr(bands, name) if w not in words]
            words.append(rng.choice(pool))
        rng.shuffle(words)
        made.append(rng.choice(TEMPLATES[meaningful]).format(*words))
    return made


def search_params(caller: Caller, text: str) -> dict[str, Any]:
    """memory_search's parameters for namespace "all" and the default kinds."""
    parsed = parse_query(text)
    return {
        **view(caller),
        "owners": caller.visible_owners(),
        "words": parsed.words,
        "phrases": parsed.phrases,
        "excluded": parsed.excluded,
        "kinds": SEARCH_KINDS,
        "limit": 8,
        "budget": SEARCH_FETCH_BUDGET,
        "score_budget": SEARCH_SCORE_BUDGET,
    }


def floor_params(caller: Caller, text: str) -> dict[str, Any]:
    return {
        "workspace_id": caller.workspace_id,
        "owners": caller.visible_owners(),
        "contexts": list(caller.context.ancestors),
        "kinds": SEARCH_KINDS,
        "words": parse_query(text).words,
        "top": 8,
    }


def ensure_floor_index(admin: psycopg.Connection[Any], workspace_id: Any) -> None:
    """A GIN index on the measured workspace's terms: the best index a one-statement
    search could have. Bench-only; writes are measured in another workspace."""
    admin.execute("SET maintenance_work_mem = '512MB'")
    admin.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON memory.search_documents USING gin (terms) "
            "WHERE workspace_id = {}"
        ).format(sql.Identifier(FLOOR_TERMS_INDEX), sql.Literal(workspace_id))
    )
    admin.execute("RESET maintenance_work_mem")


# -- the search function's steps, replayed ---------------------------------------------


def trace(owner: psycopg.Connection[Any], params: dict[str, Any]) -> list[dict[str, Any]]:
    """The search function's own report of its steps (the caller's settings are set)."""
    events: list[dict[str, Any]] = []

    def collect(diagnostic: psycopg.errors.Diagnostic) -> None:
        if diagnostic.message_primary:
            events.append(json.loads(diagnostic.message_primary))

    owner.add_notice_handler(collect)
    try:
        owner.execute("SET LOCAL memory.search_trace = on")
        owner.execute(query("search_candidates"), params).fetchall()
        owner.execute("SET LOCAL memory.search_trace = off")
    finally:
        owner.remove_notice_handler(collect)
    return events


# The statement search_view_statistics() runs (migration 0015), planned for each
# call's values; the segment statements below are planned generically.
_STATISTICS = (
    "SELECT s.lexeme, sum(s.documents)::bigint FROM search_statistics AS s "
    "WHERE s.workspace_id = $1 AND s.owner_id = ANY ($2) AND s.context_key = ANY ($3) "
    "AND s.lexeme = ANY ($4) GROUP BY s.lexeme"
)
_FETCH = "SELECT * FROM search_fetch($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, NULL) LIMIT $12"
_BATCH = (
    "SELECT r.memory_id, r.score FROM unnest($1::tsquery[], $2::tsquery[]) AS s (probe, others) "
    "CROSS JOIN LATERAL search_fetch(s.probe, NULL, $3, $4, $5, $6, $7, $8, $9, $10, $11, "
    "s.others) AS r LIMIT $12"
)


def explain_search(owner_url: str, caller: Caller, text: str) -> tuple[str, dict[str, Any]]:
    """EXPLAIN (ANALYZE, BUFFERS) of every statement memory.search_candidates() ran for
    ``text``: the statistics and each segment's fetch, as its owner role with the
    request settings and generic plans, as the function plans them."""
    params = search_params(caller, text)
    with (
        psycopg.connect(owner_url, autocommit=True) as owner,
        owner.transaction(force_rollback=True),
    ):
        owner.execute(query("request_settings"), request_settings(caller, 60_000))
        owner.execute("SET LOCAL search_path = memory, pg_temp")
        owner.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        owner.execute(query("search_candidates"), params).fetchall()  # warm, as a session is
        events = trace(owner, params)
        units = events[0]
        owner.execute(f"PREPARE statistics(uuid, uuid[], text[], text[]) AS {_STATISTICS}")
        common_types = (
            "uuid, uuid[], text[], text[], tsquery[], double precision[], tsquery[], timestamptz, "
            "integer"
        )
        owner.execute(
            f"PREPARE phrase_fetch(tsquery, tsquery, tsquery, {common_types}) AS {_FETCH}"
        )
        owner.execute(f"PREPARE segment_fetch(text[], text[], tsquery, {common_types}) AS {_BATCH}")
        lines = [
            f"units: {units['units']} (df {units['df']}, of {units['documents']} records in "
            f"the view; idf {[round(x, 3) for x in units['idf']]}); cells: {len(units['cells'])}",
            "statistics:",
        ]
        owner.execute("SET LOCAL plan_cache_mode = force_custom_plan")
        lines += _plan(
            owner,
            "statistics",
            (units["workspace"], units["owners"], units["contexts"], [*units["units"], ""]),
        )
        owner.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        queries = ["'" + u.replace("\\", "\\\\").replace("'", "''") + "'" for u in units["units"]]
        view_args = (
            units["workspace"],
            units["owners"],
            units["contexts"],
            SEARCH_KINDS,
            queries,
            units["idf"],
            units["bounds"],
            units["now"],
        )
        summary: dict[str, Any] = {"steps": [], "fetched": 0}
        for event in events[1:]:
            if "done" in event:
                lines.append(f"done: {event}")
                summary.update(
                    outcome=event["done"], fetched=event["fetched"], scored=event["scored"]
                )
                continue
            if event.get("segment") == "phrases":
                summary["steps"].append({"phrases": True, "fetched": event["fetched"]})
                lines.append(f"phrases: {event['fetched']} records")
                lines += _plan(
                    owner,
                    "phrase_fetch",
                    (
                        event["probe"],
                        event["filter"],
                        units["excluded"],
                        *view_args,
                        event["limit"],
                    ),
                )
                continue
            only = [o is not None for o in event["others"]]
            summary["steps"].append(
                {
                    "segments": event["segments"],
                    "only_records_with_another_term": only,
                    "fetched": event["fetched"],
                    "scored": event["scored"],
                }
            )
            lines.append(
                f"segments {event['segments']} (scoring only records holding another term: "
                f"{only}): {event['fetched']} records, {event['scored']} scored"
            )
            lines += _plan(
                owner,
                "segment_fetch",
                (event["probes"], event["others"], units["excluded"], *view_args, event["limit"]),
            )
    return "\n".join(lines), summary


def _plan(conn: psycopg.Connection[Any], name: str, args: tuple[Any, ...]) -> list[str]:
    literals = sql.SQL(", ").join(sql.Literal(a) for a in args)
    rows = conn.execute(
        sql.SQL("EXPLAIN (ANALYZE, BUFFERS) EXECUTE {}({})").format(sql.Identifier(name), literals)
    ).fetchall()
    return ["    " + str(r[0]) for r in rows]
