"""Embedding records after their writes commit, and the backfill.

A write queues its record (a trigger of ``infra/schema/65_search_vectors.sql``); the
request's post-commit hook then runs :class:`EmbedJob` after the response has gone,
with the caller's own settings, so it claims only records in that caller's view (the
one it just wrote first: the queue is oldest first). The record is searchable by its
words at once and by its meaning once the job has run. What a job leaves (the
embedder was down, the job was dropped) waits in the queue for the next job of that
view or for :func:`backfill`, which runs as the owner role over every record:
``memoryctl embeddings backfill``, the migrations function's ``embed`` task, and
``make dev`` at start.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from typing import Any

import psycopg

from memory_server.data import embeddings as data
from memory_server.data.pool import Database
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.domain.embedding import Embedder, EmbeddingUnavailable
from memory_server.domain.limits import EMBED_BATCH, EMBED_QUEUE_ATTEMPTS

logger = logging.getLogger(__name__)

Progress = Callable[[int, int | None], None]  # (done, total)


Session = Callable[[], AbstractContextManager[psycopg.Connection[Any]]]


def embed_queued(session: Session, embedder: Embedder, batch: int = EMBED_BATCH) -> tuple[int, int]:
    """One batch: claim queued records (a transaction of ``session``), embed them with
    no transaction open, so no writer waits for the model, and store their vectors (a
    second one; a record changed meanwhile keeps its place in the queue). Returns
    (claimed, stored). An embedder that cannot answer leaves them queued, one attempt
    more each."""
    with session() as conn:
        claimed = data.claim(conn, batch, EMBED_QUEUE_ATTEMPTS)
    if not claimed:
        return 0, 0
    model, dimensions = embedder.model, embedder.dimensions
    try:
        vectors = embedder.embed([c.content for c in claimed])
    except (EmbeddingUnavailable, ValueError) as error:
        reason = getattr(error, "reason", "refused")  # ValueError: a text it cannot embed
        logger.warning("embedding deferred (%s): %d stay queued", reason, len(claimed))
        with session() as conn:
            data.store(conn, [], model=model, dimensions=dimensions, failed=[c.id for c in claimed])
        return len(claimed), 0
    with session() as conn:
        stored = data.store(
            conn, list(zip(claimed, vectors, strict=True)), model=model, dimensions=dimensions
        )
    return len(claimed), stored


@dataclass(frozen=True)
class EmbedJob:
    """The post-response job of a request that changed records: embed what waits in
    the caller's view (one batch). Jobs of the same caller run as one."""

    db: Database
    caller: Caller
    embedder: Embedder

    @property
    def batch_key(self) -> Hashable:
        return ("embed", id(self.db), replace(self.caller, request_id=None))

    @contextmanager
    def _session(self) -> Iterator[psycopg.Connection[Any]]:
        with self.db.write(self.caller, Deadline()) as tx:
            yield tx.conn

    def __call__(self) -> None:
        try:
            embed_queued(self._session, self.embedder)
        except Exception:  # the records stay queued: the next job or a backfill
            logger.warning("embedding after the response failed", exc_info=True)

    @staticmethod
    def run_batch(jobs: Sequence[EmbedJob]) -> None:
        jobs[0]()


def backfill(
    owner_url: str,
    embedder: Embedder,
    *,
    progress: Progress | None = None,
    batch: int = EMBED_BATCH,
    limit: int | None = None,
) -> tuple[int, int]:
    """Embed every record ``embedder``'s model has not (new records, records written
    while the embedder was down, a database upgraded to embeddings, a new model or
    dimension: its vectors replace the other space's), as
    the owner role, a batch per transaction. Returns (stored, still queued)."""
    with psycopg.connect(owner_url, autocommit=True) as owner:
        total = data.requeue(owner, embedder.model, embedder.dimensions)
        done = 0
        if progress:
            progress(0, total)

        def session() -> AbstractContextManager[psycopg.Connection[Any]]:
            return statement_transactions(owner)

        while limit is None or done < limit:
            claimed, stored = embed_queued(session, embedder, batch)
            if claimed == 0 or stored == 0:
                break  # nothing left, or the embedder is down: stop, queue kept
            done += stored
            if progress:
                progress(done, total)
        left = data.status(owner).queued
    return done, left


@contextmanager
def statement_transactions(conn: psycopg.Connection[Any]) -> Iterator[psycopg.Connection[Any]]:
    """An owner's autocommit connection as a session of :func:`embed_queued`: the
    claim and the store are one statement each, so each is a transaction of its own
    that commits as its statement ends, and no lock waits for the process that sent
    it (``make dev``'s worker runs at a lower priority) to send a ``COMMIT``."""
    yield conn
