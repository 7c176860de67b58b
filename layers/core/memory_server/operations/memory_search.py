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

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from memory_server.data import embeddings, search
from memory_server.data.search import HitRow, Terms
from memory_server.domain.arguments import SearchArgs
from memory_server.domain.caller import Caller
from memory_server.domain.content import check_text
from memory_server.domain.deadline import Deadline
from memory_server.domain.embedding import EmbeddingUnavailable
from memory_server.domain.errors import IntegrityViolation, ToolError
from memory_server.domain.limits import (
    QUERY_MAX_BYTES,
    SEARCH_FETCH_BUDGET,
    SEARCH_FUSION_CANDIDATES,
    SEARCH_MAX_HITS,
    SEARCH_MEANING_INDEX_CANDIDATES,
    SEARCH_SCORE_BUDGET,
)
from memory_server.domain.ranking import Candidate
from memory_server.domain.results import Hit, SearchResult
from memory_server.domain.search_query import parse_query
from memory_server.domain.summaries import summary
from memory_server.operations.store import Store

logger = logging.getLogger(__name__)


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
        return SearchResult([], "lexical" if store.embedder is None else "hybrid")

    terms = Terms(parsed.words, parsed.phrases, parsed.excluded)
    kinds: list[str] = list(dict.fromkeys(args.kinds))
    # With an embedder the words offer as many candidates as meaning does, also when
    # the embedder then cannot answer (the ranker cuts them to ``limit`` all the same).
    pool = SEARCH_FUSION_CANDIDATES if store.embedder is not None else limit
    # One snapshot for both phases, so a concurrent delete cannot trip the assertion;
    # the ranker runs between them, and the hydration travels with the commit.
    with store.db.read(caller, deadline or Deadline(), isolation="repeatable read") as tx:
        # Queued in the pipeline, the words' statement is on its way to PostgreSQL
        # before the question is embedded: the two run at once (docs/performance.md,
        # "Hybrid recall").
        by_words = search.candidates(
            tx,
            terms,
            owners=owners,
            kinds=kinds,
            limit=pool,
            fetch_budget=SEARCH_FETCH_BUDGET,
            score_budget=SEARCH_SCORE_BUDGET,
        )
        query_vector, recall = _query_vector(store, parsed.words, parsed.phrases)
        by_meaning = (
            embeddings.by_meaning(
                tx,
                query_vector,
                model=store.embedder.model,
                owners=owners,
                kinds=kinds,
                limit=SEARCH_FUSION_CANDIDATES,
                index_candidates=SEARCH_MEANING_INDEX_CANDIDATES,
            )
            if query_vector is not None and store.embedder is not None
            else None
        )
        found = by_words.get()
        words = [(s.id, s.score) for s in found.scored]
        meaning = [(n.id, n.similarity) for n in by_meaning.get()] if by_meaning else None
        offered, matched = fuse(words, found.full_score, meaning, store.meaning_weight)
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
                {
                    **summary(caller, hits[c.id]),
                    "score": round(c.score, 6),
                    "matched_by": matched[c.id],
                },
                hits[c.id]["excerpt"] or "",
            )
            for c in ranked
        ],
        recall,
    )


def _query_vector(store: Store, words: str, phrases: list[str]) -> tuple[list[float] | None, str]:
    """The question's vector and what recall this search gets: ``hybrid``, or
    ``lexical`` (no embedder configured), or ``lexical (<reason>)`` when the embedder
    could not answer now: the search goes on by words alone, flagged, never failed."""
    if store.embedder is None:
        return None, "lexical"
    text = " ".join([words, *phrases]).strip()
    try:
        return store.embedder.embed([text])[0], "hybrid"
    except EmbeddingUnavailable as error:
        logger.warning("search by meaning unavailable (%s): words alone", error.reason)
        return None, f"lexical ({error.reason})"
    except ValueError:  # nothing the model can embed (the port's empty text)
        return None, "lexical (refused)"


def fuse(
    words: list[tuple[uuid.UUID, float]],
    full_score: float,
    meaning: list[tuple[uuid.UUID, float]] | None,
    weight: float,
) -> tuple[list[Candidate], dict[uuid.UUID, str]]:
    """One score per candidate, ``(1 - weight) * words + weight * meaning``, a side
    that did not offer a record counting 0. The words' scores are divided by the
    larger of their best and ``full_score`` (what a record holding each of the query's
    words once scores): a strong match weighs the whole ``1 - weight``, and the best
    of weak matches (a few everyday words of a long question) weighs little, so it
    cannot bury what only meaning found. The meaning side's similarities (cosine,
    below 0 counting 0) are divided by the best of them. Without the meaning side the
    words' scores stand as they are. Also says which side(s) found each record."""
    if meaning is None:
        return [Candidate(i, s) for i, s in words], {i: "words" for i, _ in words}
    fused: dict[uuid.UUID, float] = {}
    matched: dict[uuid.UUID, str] = {}
    strong = max([full_score, *(s for _, s in words)])
    for record, score in words:
        fused[record] = (1 - weight) * (score / strong if strong > 0 else 0.0)
        matched[record] = "words"
    best = max((s for _, s in meaning), default=0.0)
    for record, similarity in meaning:
        scaled = max(similarity, 0.0) / best if best > 0 else 0.0
        fused[record] = fused.get(record, 0.0) + weight * scaled
        matched[record] = "both" if record in matched else "meaning"
    return [Candidate(i, s) for i, s in fused.items()], matched


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
