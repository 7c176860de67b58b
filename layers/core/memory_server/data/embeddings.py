"""Embeddings: the queue of records to embed, their vectors, the search by meaning.

The statements call the functions of ``infra/schema/65_search_vectors.sql``, which
apply the visibility predicate themselves: run with a caller's settings (a request
transaction) they reach only that caller's view; run as the owner role (the
backfill) they reach every record. Vectors travel as pgvector's text form.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from memory_server.data import statements
from memory_server.data.pool import Pending, Transaction
from memory_server.data.statements import Row


@dataclass(frozen=True, slots=True)
class Claimed:
    """A queued record, locked by this transaction: the text to embed and its hash."""

    id: uuid.UUID
    content: str
    content_hash: bytes


@dataclass(frozen=True, slots=True)
class Near:
    id: uuid.UUID
    similarity: float


@dataclass(frozen=True, slots=True)
class Status:
    by_model: dict[str, int]  # "model (dimensions)" -> records
    queued: int


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form; seven significant digits are a float4's."""
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def claim(conn: psycopg.Connection[Any], limit: int, attempts: int) -> list[Claimed]:
    rows = statements.rows(conn, "embedding_claim", {"limit": limit, "attempts": attempts})
    return [Claimed(r["memory_id"], r["content"], bytes(r["content_hash"])) for r in rows]


def store(
    conn: psycopg.Connection[Any],
    done: Sequence[tuple[Claimed, Sequence[float]]],
    *,
    model: str,
    dimensions: int,
    failed: Sequence[uuid.UUID] = (),
) -> int:
    """Store the vectors of ``done`` (claimed in this transaction); returns how many
    were stored (a record changed since its claim is not)."""
    params = {
        "ids": [c.id for c, _ in done],
        "hashes": [c.content_hash for c, _ in done],
        "vectors": [vector_literal(v) for _, v in done],
        "model": model,
        "dimensions": dimensions,
        "failed": list(failed),
    }
    row = statements.one(conn, "embedding_store", params)
    return int(row["stored"]) if row else 0


def requeue(owner: psycopg.Connection[Any], model: str, dimensions: int) -> int:
    """Queue every record not embedded in the space of ``model`` and ``dimensions``;
    returns how many wait now."""
    row = statements.one(owner, "embedding_requeue", {"model": model, "dimensions": dimensions})
    return int(row["waiting"]) if row else 0


def forget_other_spaces(owner: psycopg.Connection[Any], model: str, dimensions: int) -> int:
    """Delete every stored vector not in the space of ``model`` and ``dimensions``
    (their records are then embedded again by the next backfill); how many went."""
    return statements.run(
        owner, "embedding_forget_other_spaces", {"model": model, "dimensions": dimensions}
    )


def spaces(conn: psycopg.Connection[Any]) -> list[tuple[str, int]]:
    """The (model, dimensions) pairs of the stored vectors."""
    found = statements.rows(conn, "embedding_spaces")
    return [(str(r["model"]), int(r["dimensions"])) for r in found]


def status(owner: psycopg.Connection[Any]) -> Status:
    rows = statements.rows(owner, "embedding_status")
    by_model = {f"{r['model']} ({r['dimensions']})": int(r["records"]) for r in rows if r["model"]}
    return Status(by_model, int(rows[0]["queued"]) if rows else 0)


def by_meaning(
    tx: Transaction,
    vector: Sequence[float],
    *,
    model: str,
    owners: list[uuid.UUID],
    kinds: list[str],
    limit: int,
    index_candidates: int,
) -> Pending[list[Near]]:
    """The ``limit`` records of the caller's view nearest to ``vector``: among the
    ``index_candidates`` nearest the vector index proposes when enough of them are in
    the view, else by the exact scan of the view (0: the exact scan only)."""
    params = {
        "vector": vector_literal(vector),
        "model": model,
        "owners": owners,
        "kinds": kinds,
        "limit": limit,
        "index_candidates": index_candidates,
    }

    def shape(rows: list[Row]) -> list[Near]:
        return [Near(r["memory_id"], float(r["similarity"])) for r in rows]

    return tx.query("search_by_meaning", params, shape)
