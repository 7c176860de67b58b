"""memory_remember: merge one fact into a record, exactly once per idempotency key.

The key is claimed, the merge applied and its result stored in one transaction, under
the key's primary key: a concurrent duplicate waits for the first to commit and then
replays its result; a retry after a lost response replays it too. A fact already in
the record is not added twice (``merged: false``, no new revision).

This key is the guarantee; the DynamoDB layer in front of it (``idempotency.py``) only
makes duplicates cheap. Why both, and what each does when the other fails:
docs/store.md#why-memory_remember-has-two-idempotency-layers.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from psycopg.errors import UniqueViolation

from memory_server.data import records, remember_keys
from memory_server.data.pool import Transaction
from memory_server.data.remember_keys import Key
from memory_server.domain.addresses import RecordAddress, parse_path_address
from memory_server.domain.arguments import RememberArgs
from memory_server.domain.caller import Caller
from memory_server.domain.content import check_source, check_text
from memory_server.domain.contexts import parse_target_context
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import ToolError, invalid
from memory_server.domain.limits import CONTENT_MAX_BYTES, FACT_MAX_BYTES, REMEMBER_ATTEMPTS
from memory_server.operations.changes import merged_content, writable
from memory_server.operations.store import Store


class _Retry(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Remembering:
    """A checked ``memory_remember``: everything decided before any key is looked up."""

    address: RecordAddress
    fact: str
    source: str | None
    target_context: str
    context_named: bool
    key: Key  # the idempotency key's scope and the request's hash


def check_remember(caller: Caller, args: RememberArgs) -> Remembering:
    """Every check a first call passes, for replays too: arguments, the namespace, the
    write grant. The key's scope is (workspace, caller, listening context, target): the
    same key from another context is another request, so a replay can never show a
    result (an id) from a context the caller does not hear now."""
    address = parse_path_address(args.uri)
    fact = _check_fact(args.fact)
    source = check_source(args.source)
    target_context = parse_target_context(args.context, caller.context)
    writable(caller, address)
    request_hash = hashlib.sha256(
        json.dumps(
            {"uri": args.uri, "fact": args.fact, "source": args.source, "context": args.context},
            sort_keys=True,
        ).encode()
    ).hexdigest()
    key = Key(caller.context.key, address.uri, args.idempotency_key, request_hash)
    return Remembering(address, fact, source, target_context, args.context is not None, key)


def memory_remember(
    store: Store, caller: Caller, args: RememberArgs, deadline: Deadline | None = None
) -> dict[str, Any]:
    checked = check_remember(caller, args)
    deadline = deadline or Deadline()
    for _ in range(REMEMBER_ATTEMPTS):
        try:
            with store.db.write(caller, deadline) as tx:
                return _remember_once(tx, caller, checked)
        except _Retry:
            continue
    raise ToolError("unavailable", "the record kept changing concurrently; retry")


def _remember_once(tx: Transaction, caller: Caller, checked: Remembering) -> dict[str, Any]:
    address, fact, source, key = checked.address, checked.fact, checked.source, checked.key
    if not remember_keys.claim(tx, caller, key).get():
        previous = remember_keys.read(tx, caller, key).get()
        if previous is None or previous.result is None:
            raise ToolError("unavailable", "a request with this key is still in flight; retry")
        if previous.request_hash != key.request_hash:
            raise ToolError(
                "idempotency_key_reused",
                "this idempotency_key was already used with different arguments",
            )
        return {**previous.result, "replayed": True}

    contexts = [checked.target_context] if checked.context_named else None
    current = records.find(tx, caller, address, contexts=contexts).get()
    if current is None:
        created = records.create(
            tx,
            caller,
            address,
            context_key=checked.target_context,
            content=merged_content(address, f"- {fact}\n", source),
            operation="merge",
        ).get()
        if created is None:
            raise _Retry()  # another writer created it first: merge into theirs
        result = _remembered(address, created.id, created.revision, merged=True)
    else:
        locked = records.lock(tx, caller, current["id"]).get()
        if locked is None:
            raise _Retry()  # deleted or moved away meanwhile
        if _contains_fact(locked["body"], fact):
            result = _remembered(address, current["id"], locked["revision"], merged=False)
        else:
            body = locked["body"]
            if body and not body.endswith("\n"):
                body += "\n"
            body += f"- {fact}\n"
            check_text(body, what="record after merging the fact", max_bytes=CONTENT_MAX_BYTES)
            try:
                changed = records.change(
                    tx,
                    caller,
                    current["id"],
                    address,
                    expected_revision=locked["revision"],
                    content=merged_content(address, body, source),
                    operation="merge",
                ).get()
            except UniqueViolation:
                raise _Retry() from None
            if changed is None:  # it moved on under the lock: never, but never merge twice
                raise _Retry()
            result = _remembered(address, changed.id, changed.revision, merged=True)
    remember_keys.complete(tx, caller, key, result)
    return {**result, "replayed": False}


def _remembered(
    address: RecordAddress, record_id: Any, revision: int, *, merged: bool
) -> dict[str, Any]:
    """The result of a merge (stored under the key, replayed by a retry)."""
    return {"uri": address.uri, "id": str(record_id), "revision": revision, "merged": merged}


def _check_fact(fact: str) -> str:
    check_text(fact, what="fact", max_bytes=FACT_MAX_BYTES)
    stripped = fact.strip()
    if not stripped:
        raise invalid("fact may not be blank")
    if any(c in fact for c in "\r\n") or any(ord(c) < 0x20 and c != "\t" for c in fact):
        raise invalid("fact must be a single line without control characters")
    return stripped


def _contains_fact(body: str, fact: str) -> bool:
    for line in body.splitlines():
        item = line.strip()
        if item.startswith(("- ", "* ")):
            item = item[2:].strip()
        if item == fact:
            return True
    return False
