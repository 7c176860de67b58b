"""memory_search: any-term search over the caller's view, ranked by BM25.

The query is split into words, phrases and exclusions (:mod:`..search_query`). Two
phases keep the index usable under row-level security: the best candidates, exactly
scored, come from ``memory.search_candidates`` (a function that applies the
visibility predicate itself over an index the runtime role cannot read), then at
most ``limit`` hits are hydrated through the RLS-protected table. Whatever the ranker
returns is asserted to be inside the view before anything is returned. The result is
whole; the protocol layer fits it to the byte budget.
"""

from __future__ import annotations

from typing import Any

from ..caller import Caller, Deadline
from ..errors import IntegrityViolation, ToolError
from ..limits import (
    QUERY_MAX_BYTES,
    SEARCH_FETCH_BUDGET,
    SEARCH_MAX_HITS,
    SEARCH_SCORE_BUDGET,
)
from ..models import SearchArgs
from ..ranking import Candidate
from ..records import check_text, summary, view
from ..results import Hit, SearchResult
from ..search_query import parse_query
from ..store import Store


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

    params = {
        **view(caller),
        "owners": owners,
        "words": parsed.words,
        "phrases": parsed.phrases,
        "excluded": parsed.excluded,
        "kinds": list(dict.fromkeys(args.kinds)),
        "limit": limit,
        "budget": SEARCH_FETCH_BUDGET,
        "score_budget": SEARCH_SCORE_BUDGET,
    }
    ranked: list[Candidate] = []

    def hydration(rows: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
        offered = [Candidate(row["memory_id"], float(row["score"])) for row in rows]
        ranked.extend(store.ranker.rank(args.query, offered, limit)[:limit])
        if not ranked:
            return None
        return "hydrate_hits", {**params, "ids": [c.id for c in ranked]}

    # One snapshot for both phases, so a concurrent delete cannot trip the assertion;
    # the ranker runs between them, and the hydration travels with the commit.
    hydrated = store.db.read(
        caller,
        deadline or Deadline(),
        "search_candidates",
        params,
        then=hydration,
        isolation="repeatable read",
    )
    hits = {row["id"]: row for row in hydrated}

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


def assert_in_view(
    caller: Caller, ranked: list[Candidate], hydrated: dict[Any, dict[str, Any]]
) -> None:
    """Every ranked hit must be a distinct record hydrated inside the caller's view."""
    if len({c.id for c in ranked}) != len(ranked):
        raise IntegrityViolation("ranker returned a duplicate hit")
    for candidate in ranked:
        row = hydrated.get(candidate.id)
        if row is None or not caller.can_see(
            row["workspace_id"], row["owner_id"], row["context_key"]
        ):
            raise IntegrityViolation("ranker returned a hit outside the caller's view")
