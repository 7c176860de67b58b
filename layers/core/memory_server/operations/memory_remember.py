"""memory_remember: merge one fact into a record, exactly once per idempotency key;
with ``supersedes``, replace the line that says an old fact by it, in place.

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
from memory_server.data.records import Lifecycle
from memory_server.data.remember_keys import Key
from memory_server.domain.addresses import RecordAddress, parse_path_address
from memory_server.domain.arguments import RememberArgs, given
from memory_server.domain.caller import Caller
from memory_server.domain.content import check_source, check_text
from memory_server.domain.contexts import parse_target_context
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import ToolError, invalid
from memory_server.domain.limits import CONTENT_MAX_BYTES, FACT_MAX_BYTES, REMEMBER_ATTEMPTS
from memory_server.operations.changes import lifecycle, merged_content, writable
from memory_server.operations.store import Store


class _Retry(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Remembering:
    """A checked ``memory_remember``: everything decided before any key is looked up."""

    address: RecordAddress
    fact: str
    supersedes: str | None  # the old fact, as compared
    source: str | None
    life: Lifecycle
    target_context: str
    context_named: bool
    key: Key  # the idempotency key's scope and the request's hash


def check_remember(caller: Caller, args: RememberArgs) -> Remembering:
    """Every check a first call passes, for replays too: arguments, the namespace, the
    write grant. The key's scope is (workspace, caller, listening context, target): the
    same key from another context is another request, so a replay can never show a
    result (an id) from a context the caller does not hear now."""
    address = parse_path_address(args.uri)
    fact = _check_fact(args.fact, "fact")
    supersedes = None
    if args.supersedes is not None:  # a line of the record, compared as facts are
        supersedes = _fact_of(_check_fact(args.supersedes, "supersedes"))
    source = check_source(args.source)
    life = lifecycle(args)
    target_context = parse_target_context(args.context, caller.context)
    writable(caller, address)
    hashed = {"uri": args.uri, "fact": args.fact, "source": args.source, "context": args.context}
    # Arguments added later count only when sent, so that a retry of a call made
    # before they existed still hashes as it did.
    hashed.update({name: getattr(args, name) for name in _LATER if given(args, name)})
    request_hash = hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()
    key = Key(caller.context.key, address.uri, args.idempotency_key, request_hash)
    return Remembering(
        address, fact, supersedes, source, life, target_context, args.context is not None, key
    )


_LATER = ("supersedes", "expires_at")


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
        return {"superseded": False, **previous.result, "replayed": True}

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
            life=checked.life,
        ).get()
        if created is None:
            raise _Retry()  # another writer created it first: merge into theirs
        result = _remembered(address, created.id, created.revision, merged=True)
    else:
        locked = records.lock(tx, caller, current["id"]).get()
        if locked is None:
            raise _Retry()  # deleted or moved away meanwhile
        body, superseded = _corrected(locked["body"], fact, checked.supersedes)
        if body is None:
            result = _remembered(address, current["id"], locked["revision"], merged=False)
        else:
            check_text(body, what="record after merging the fact", max_bytes=CONTENT_MAX_BYTES)
            try:
                changed = records.change(
                    tx,
                    caller,
                    current["id"],
                    address,
                    expected_revision=locked["revision"],
                    content=merged_content(address, body, source),
                    operation="supersede" if superseded else "merge",
                    life=checked.life,
                ).get()
            except UniqueViolation:
                raise _Retry() from None
            if changed is None:  # it moved on under the lock: never, but never merge twice
                raise _Retry()
            result = _remembered(
                address, changed.id, changed.revision, merged=True, superseded=superseded
            )
    remember_keys.complete(tx, caller, key, result)
    return {**result, "replayed": False}


def _remembered(
    address: RecordAddress,
    record_id: Any,
    revision: int,
    *,
    merged: bool,
    superseded: bool = False,
) -> dict[str, Any]:
    """The result of a merge (stored under the key, replayed by a retry)."""
    return {
        "uri": address.uri,
        "id": str(record_id),
        "revision": revision,
        "merged": merged,
        "superseded": superseded,
    }


def _check_fact(fact: str, argument: str) -> str:
    check_text(fact, what=argument, max_bytes=FACT_MAX_BYTES)
    stripped = fact.strip()
    if not stripped:
        raise invalid(f"{argument} may not be blank")
    if any(c in fact for c in "\r\n") or any(ord(c) < 0x20 and c != "\t" for c in fact):
        raise invalid(f"{argument} must be a single line without control characters")
    return stripped


def _fact_of(line: str) -> str:
    """A line as a fact is compared: trimmed, a leading ``- `` or ``* `` dropped."""
    item = line.strip()
    if item.startswith(("- ", "* ")):
        item = item[2:].strip()
    return item


def _corrected(body: str, fact: str, supersedes: str | None) -> tuple[str | None, bool]:
    """The body with the fact in it, and whether a line was superseded; ``None`` when
    the fact is already there and nothing is to be replaced.

    The first line saying ``supersedes`` becomes ``- fact`` (dropped instead when
    another line already says the fact); with no such line, the fact is appended as
    by a plain merge."""
    lines = body.splitlines()
    facts = [_fact_of(line) for line in lines]
    if supersedes is not None and supersedes != fact and supersedes in facts:
        at = facts.index(supersedes)
        if fact in facts:
            del lines[at]
        else:
            lines[at] = f"- {fact}"
        return "".join(f"{line}\n" for line in lines), True
    if fact in facts:
        return None, False
    if body and not body.endswith("\n"):
        body += "\n"
    return body + f"- {fact}\n", False
