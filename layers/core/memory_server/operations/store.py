"""The store: what every operation needs, assembled once per process."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_server.data.pool import Database
from memory_server.domain.embedding import Embedder
from memory_server.domain.limits import SEARCH_FUSION_MEANING_WEIGHT
from memory_server.domain.ranking import DeterministicRanker, Ranker


@dataclass(slots=True)
class Store:
    db: Database
    cursor_secret: bytes
    ranker: Ranker = field(default_factory=DeterministicRanker)
    # Hybrid recall when set: writes are embedded after they commit, searches fuse
    # words with meaning (operations.embeddings, operations.memory_search).
    embedder: Embedder | None = None
    meaning_weight: float = SEARCH_FUSION_MEANING_WEIGHT  # of the fused score (limits.py)
