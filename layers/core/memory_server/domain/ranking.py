"""Ranking behind an interface, with a deterministic default.

The database returns scored candidates already restricted to the caller's view; a
ranker may only reorder and cut them. Whatever it returns is checked afterwards
(see ``operations.memory_search``): a hit outside the view fails the request.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Candidate:
    id: uuid.UUID
    score: float


class Ranker(Protocol):
    def rank(self, query: str, candidates: Sequence[Candidate], limit: int) -> list[Candidate]:
        """Return at most ``limit`` candidates, best first."""
        ...


class DeterministicRanker:
    """The database's score (BM25 with a small recency prior), ties broken by id."""

    def rank(self, query: str, candidates: Sequence[Candidate], limit: int) -> list[Candidate]:
        return sorted(candidates, key=lambda c: (-c.score, str(c.id)))[:limit]
