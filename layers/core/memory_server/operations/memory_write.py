"""memory_write: create (expected_revision 0) or conditionally replace a record.

Each is one transaction. By path, a create or a replace is one statement sent with
``BEGIN``, the caller's settings and ``COMMIT``, one round trip: what the address
resolves to, the revision check and the change happen in the database. By record id
a replace takes two: the record is read first (its kind decides the content rules,
its namespace the grant), then the same change, pinned to that id, travels with
``COMMIT``. The rules are :mod:`.changes`'s either way.
"""

from __future__ import annotations

from typing import Any

from memory_server.data import records
from memory_server.data.records import Taken, Written
from memory_server.domain.addresses import RecordAddress, parse_record_address
from memory_server.domain.arguments import WriteArgs
from memory_server.domain.caller import Caller
from memory_server.domain.content import check_source
from memory_server.domain.contexts import parse_target_context
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import invalid, revision_conflict
from memory_server.operations.changes import lifecycle, locate, new_content, settled, writable
from memory_server.operations.store import Store


def memory_write(
    store: Store, caller: Caller, args: WriteArgs, deadline: Deadline | None = None
) -> dict[str, Any]:
    address = parse_record_address(args.uri)
    source = check_source(args.source)
    target_context = parse_target_context(args.context, caller.context)
    deadline = deadline or Deadline()
    if args.expected_revision == 0:
        if not isinstance(address, RecordAddress):
            raise invalid("creating a record needs a path address, not a record id")
        content = new_content(address, args.content, source)
        life = lifecycle(args)
        writable(caller, address)
        with store.db.write(caller, deadline) as tx:
            created = records.create_unless_taken(
                tx, caller, address, context_key=target_context, content=content, life=life
            )
        outcome = created.get()
        if isinstance(outcome, Taken):
            raise revision_conflict(outcome.revision or _taken_at(store, caller, address, deadline))
        return _written(address.uri, outcome)

    contexts = [target_context] if args.context is not None else None
    life = lifecycle(args)
    with store.db.write(caller, deadline) as tx:
        record, record_id = locate(tx, caller, address)
        writable(caller, record)
        replaced = records.change_at(
            tx,
            caller,
            record,
            record_id=record_id,
            contexts=contexts if record_id is None else None,
            expected_revision=args.expected_revision,
            content=new_content(record, args.content, source),
            operation="replace",
            life=life,
        )
    return _written(record.uri, settled(store.db, caller, deadline, replaced.get()))


def _taken_at(store: Store, caller: Caller, address: RecordAddress, deadline: Deadline) -> int:
    """The revision of a record created at ``address`` concurrently (1 if it is gone)."""
    with store.db.read(caller, deadline) as tx:
        existing = records.find(tx, caller, address)
    row = existing.get()
    return row["revision"] if row else 1


def _written(uri: str, written: Written) -> dict[str, Any]:
    """The answer to a write: the address, the record's id, its revision and context."""
    return {
        "uri": uri,
        "id": str(written.id),
        "revision": written.revision,
        "context": written.context_key,
    }
