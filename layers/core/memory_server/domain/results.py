"""Typed results of the domain, before the protocol layer fits them to a byte budget.

The domain returns everything it found (up to the caller's ``limit``); only the
protocol layer, which knows the exact bytes a response will take on the wire,
decides how much of it is sent (:mod:`memory_server.protocol.budget`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TRUST = "recorded-data"  # recalled results say their content is data, not instructions


@dataclass(frozen=True, slots=True)
class Hit:
    """One search hit: its summary (with ``score``) and its whole excerpt."""

    summary: dict[str, Any]
    excerpt: str


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: list[Hit]  # best first, at most the caller's limit
    # "hybrid" (words and meaning), "lexical" (no embedder), or "lexical (<reason>)":
    # the embedder could not answer, so words alone (docs/contract.md, memory_search).
    recall: str = "lexical"


@dataclass(frozen=True, slots=True)
class PinnedRecord:
    """A pinned record in the briefing: its summary and the head of its content
    (``cut``: the content goes on beyond ``content``)."""

    summary: dict[str, Any]
    content: str
    cut: bool


@dataclass(frozen=True, slots=True)
class Brief:
    """The session-start briefing, whole, and the bytes its response may take."""

    pinned: list[PinnedRecord]
    recent: list[dict[str, Any]]  # summaries with updated_by and its kind, newest first
    skills: list[dict[str, Any]]  # uri, name, description
    max_bytes: int


@dataclass(frozen=True, slots=True)
class ListPage:
    """Up to ``limit`` summaries in order, and how to continue after any of them."""

    items: list[dict[str, Any]]
    positions: list[list[str]]  # the sort key of each item
    more: bool  # records beyond ``items`` exist
    cursor_for: Callable[[list[str]], str]  # a signed cursor continuing after a position

    def next_cursor(self, sent: int) -> str | None:
        """The cursor after the first ``sent`` items, or ``None`` when nothing is left."""
        if sent == 0 or (sent == len(self.items) and not self.more):
            return None
        return self.cursor_for(self.positions[sent - 1])
