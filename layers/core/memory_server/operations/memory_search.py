"""memory_search: any-term search over the caller's view, ranked by BM25.

The query is split into words, phrases and exclusions
(:mod:`memory_server.domain.search_query`). Two
phases keep the index usable under row-level security: the best candidates, exactly
scored, come from ``memory.search_candidates`` (a function that applies the
visibility predicate itself over an index the runtime role cannot read), then at
most ``limit`` hits are hydrated through the RLS-protected table. Whatever the ranker
returns is asserted to be inside the view before anything is returned. The result is
whole; the protocol layer fits it to the byte budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory_server.data import search
from memory_server.data.search import HitRow, Terms
from memory_server.domain.arguments import SearchArgs
from memory_server.domain.caller import Caller
from memory_server.domain.content import check_text
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import IntegrityViolation, ToolError
from memory_server.domain.limits import (
    QUERY_MAX_BYTES,
    SEARCH_FETCH_BUDGET,
    SEARCH_MAX_HITS,
    SEARCH_SCORE_BUDGET,
)
from memory_server.domain.ranking import Candidate
from memory_server.domain.results import Hit, SearchResult
from memory_server.domain.search_query import parse_query
from memory_server.domain.summaries import summary
from memory_server.operations.store import Store


def memory_search(
    store: Store, caller: Caller, args: SearchArgs, deadline: Deadline | None = None
) -> SearchResult:
    caller.require_read()
    check_text(args.query, what="query", max_bytes=QUERY_MAX_BYTES)
    owners = {
        "personal": [caller.owner_for("me")] if caller.personal_namespace else [],
        "workspace": [caller.owner_for("workspace")],
        "all": caller.visible_owners(),
    }[args.namespace]
    limit = min(args.limit, SEARCH_MAX_HITS)
    parsed = parse_query(args.query)
    if not owners or not (parsed.words or parsed.phrases):
        # No personal namespace to search, or nothing to look for (only exclusions).
        return SearchResult([])

    terms = Terms(parsed.words, parsed.phrases, parsed.excluded)
    # One snapshot for both phases, so a concurrent delete cannot trip the assertion;
    # the ranker runs between them, and the hydration travels with the commit.
    with store.db.read(caller, deadline or Deadline(), isolation="repeatable read") as tx:
        scored = search.candidates(
            tx,
            terms,
            owners=owners,
            kinds=list(dict.fromkeys(args.kinds)),
            limit=limit,
            fetch_budget=SEARCH_FETCH_BUDGET,
            score_budget=SEARCH_SCORE_BUDGET,
        ).get()
        offered = [Candidate(s.id, s.score) for s in scored]
        ranked = store.ranker.rank(args.query, offered, limit)[:limit]
        ids = [c.id for c in ranked]
        hydrated = search.hydrate(tx, caller, terms, ids, owners) if ranked else None
    hits = hydrated.get() if hydrated is not None else {}

    try:
        assert_in_view(caller, ranked, hits)
    except IntegrityViolation:
        raise ToolError(
            "unavailable", "search failed an integrity check; nothing was returned"
        ) from None

    return SearchResult(
        [
            Hit(
                {**summary(caller, hits[c.id]), "score": round(c.score, 6)},
                hits[c.id]["excerpt"] or "",
            )
            for c in ranked
        ]
    )


def assert_in_view(caller: Caller, ranked: list[Candidate], hydrated: Mapping[Any, HitRow]) -> None:
    """Every ranked hit must be a distinct record hydrated inside the caller's view."""
    if len({c.id for c in ranked}) != len(ranked):
        raise IntegrityViolation("ranker returned a duplicate hit")
    for candidate in ranked:
        row = hydrated.get(candidate.id)
        if row is None or not caller.can_see(
            row["workspace_id"], row["owner_id"], row["context_key"]
        ):
            raise IntegrityViolation("ranker returned a hit outside the caller's view")
