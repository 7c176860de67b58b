"""Search: the two phases of a query, as typed statements.

Candidates come from ``memory.search_candidates``, which applies the visibility
predicate itself over an index the runtime role cannot read (row-level security
would keep the planner off the index); the ranked hits are then hydrated through
the RLS-protected table. Both run in one repeatable-read transaction, so a
concurrent delete cannot make a ranked candidate vanish between them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from memory_server.data.pool import Pending, Transaction
from memory_server.data.records import SummaryRow, view
from memory_server.data.statements import Row
from memory_server.domain.caller import Caller
from memory_server.domain.limits import SEARCH_EXCERPT_SOURCE_CHARS, SEARCH_EXCERPT_WORDS

# ts_headline's options for an excerpt: plain text (no markers), the word bounds of
# limits, at most two fragments. Made once per process, not per search.
_HEADLINE_OPTIONS = (
    'StartSel="", StopSel="", '
    f"MaxWords={SEARCH_EXCERPT_WORDS[1]}, MinWords={SEARCH_EXCERPT_WORDS[0]}, "
    'MaxFragments=2, FragmentDelimiter=" … "'
)


@dataclass(frozen=True, slots=True)
class Terms:
    """A parsed question: words and phrases any of which may match, exclusions."""

    words: str
    phrases: list[str]
    excluded: list[str]


@dataclass(frozen=True, slots=True)
class Scored:
    id: uuid.UUID
    score: float


@dataclass(frozen=True, slots=True)
class WordMatches:
    """The words' best records, and the query's full score: what a record holding
    each of its words once, at the reference length, scores (0 when none matched)."""

    scored: list[Scored]
    full_score: float


class HitRow(SummaryRow):
    """A ranked hit read through the view, with its excerpt."""

    workspace_id: uuid.UUID
    excerpt: str | None


def candidates(
    tx: Transaction,
    terms: Terms,
    *,
    owners: list[uuid.UUID],
    kinds: list[str],
    limit: int,
    fetch_budget: int,
    score_budget: int,
) -> Pending[WordMatches]:
    """The best ``limit`` records of the caller's view for ``terms``, exactly scored
    (the view comes from the transaction's settings)."""
    params = {
        "words": terms.words,
        "phrases": terms.phrases,
        "excluded": terms.excluded,
        "owners": owners,
        "kinds": kinds,
        "limit": limit,
        "budget": fetch_budget,
        "score_budget": score_budget,
    }

    def shape(rows: list[Row]) -> WordMatches:
        return WordMatches(
            [Scored(row["memory_id"], float(row["score"])) for row in rows],
            float(rows[0]["full_score"]) if rows else 0.0,
        )

    return tx.query("search_candidates", params, shape)


def hydrate(
    tx: Transaction, caller: Caller, terms: Terms, ids: list[uuid.UUID], owners: list[uuid.UUID]
) -> Pending[dict[uuid.UUID, HitRow]]:
    """The hits ``ids`` read through the view, each with a bounded excerpt around any
    of the query's words or phrases; by id."""

    def shape(rows: list[Row]) -> dict[uuid.UUID, HitRow]:
        return {row["id"]: row for row in rows}  # type: ignore[misc]

    return tx.query("hydrate_hits", hydrate_params(caller, terms, ids, owners), shape)


def hydrate_params(
    caller: Caller, terms: Terms, ids: list[uuid.UUID], owners: list[uuid.UUID]
) -> dict[str, Any]:
    """The parameters of ``sql/hydrate_hits.sql`` (the benchmarks explain it too)."""
    return {
        **view(caller),
        "owners": owners,
        "words": terms.words,
        "phrases": terms.phrases,
        "ids": ids,
        "source_chars": SEARCH_EXCERPT_SOURCE_CHARS,
        "headline_options": _HEADLINE_OPTIONS,
    }
