"""The store: what every operation needs, assembled once per process."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..data.pool import Database
from ..ranking import DeterministicRanker, Ranker


@dataclass(slots=True)
class Store:
    db: Database
    cursor_secret: bytes
    ranker: Ranker = field(default_factory=DeterministicRanker)
