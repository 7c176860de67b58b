"""``memory_remember``'s idempotency keys in PostgreSQL: claimed, read and completed in
the transaction of the merge they guard (docs/contract.md, idempotency)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg.types.json import Jsonb

from memory_server.data.pool import Pending, Transaction
from memory_server.data.records import view
from memory_server.data.statements import Row
from memory_server.domain.caller import Caller


@dataclass(frozen=True, slots=True)
class Key:
    """A key's scope (caller, listening context, target) and the request's hash."""

    context_key: str
    target: str
    key: str
    request_hash: str


@dataclass(frozen=True, slots=True)
class Stored:
    """A key already claimed: the hash of its request and its result (``None``: the
    first request has not committed one)."""

    request_hash: str
    result: dict[str, Any] | None


def _params(caller: Caller, key: Key) -> dict[str, Any]:
    return {
        **view(caller),
        "context_key": key.context_key,
        "target": key.target,
        "key": key.key,
        "request_hash": key.request_hash,
    }


def claim(tx: Transaction, caller: Caller, key: Key) -> Pending[bool]:
    """Claim the key; a concurrent claimant waits for the first to end. ``False``: it
    was claimed before."""
    return tx.query("claim_idempotency_key", _params(caller, key), bool)


def read(tx: Transaction, caller: Caller, key: Key) -> Pending[Stored | None]:
    def shape(rows: list[Row]) -> Stored | None:
        return Stored(rows[0]["request_hash"], rows[0]["result"]) if rows else None

    return tx.query("read_idempotency_key", _params(caller, key), shape)


def complete(tx: Transaction, caller: Caller, key: Key, result: dict[str, Any]) -> None:
    """Store the merge's result under the key, in the merge's transaction."""
    tx.execute("store_idempotency_result", {**_params(caller, key), "result": Jsonb(result)})
