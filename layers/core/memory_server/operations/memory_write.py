"""memory_write: create (expected_revision 0) or conditionally replace a record.

Each is one transaction (``Database.change``). By path, a create or a replace is one
statement sent with ``BEGIN``, the caller's settings and ``COMMIT``, one round trip:
the look for what the address resolves to and the change happen in the database
(``memory.create_record_unless_taken``, ``memory.change_record_at``). A replace by
record id takes two: the record is read first, because its kind decides the content
rules; the conditional change then travels with ``COMMIT``. A change that matches no
row (a concurrent writer got there first) is explained by a read of its own.
"""

from __future__ import annotations

from typing import Any

from ..addresses import RecordAddress, parse_record_address
from ..caller import Caller, Deadline
from ..contexts import parse_target_context
from ..errors import invalid, not_found
from ..models import WriteArgs
from ..records import (
    change_statement,
    changed_row,
    check_content,
    check_source,
    conflict,
    create_unless_taken_statement,
    explain_change_miss,
    replace_statement,
    resolve_statement,
    uri_of,
)
from ..sql_files import Row
from ..store import Store


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
        body = check_content(address, args.content)
        caller.owner_for(address.namespace)  # not_found for a missing namespace
        caller.require_write(address.namespace)

        # One round trip: what the address resolves to and the create, in one statement.
        created = store.db.change(
            caller,
            deadline,
            *create_unless_taken_statement(
                caller, address, context_key=target_context, body=body, source=source
            ),
        )
        if not created:  # created concurrently
            existing = store.db.read(caller, deadline, *resolve_statement(caller, address))
            raise conflict(existing[0]["revision"] if existing else 1)
        if not created[0]["created"]:  # creating conflicts with what is there
            raise conflict(created[0]["revision"])
        return _written(address.uri, created[0])

    contexts = [target_context] if args.context is not None else None
    if isinstance(address, RecordAddress):
        # By path everything checked is known before the call: one statement.
        caller.owner_for(address.namespace)  # not_found for a missing namespace
        caller.require_write(address.namespace)
        replaced = store.db.change(
            caller,
            deadline,
            *replace_statement(
                caller,
                address,
                contexts=contexts,
                expected_revision=args.expected_revision,
                body=check_content(address, args.content),
                source=source,
            ),
        )
        return _written(address.uri, changed_row(store.db, caller, deadline, replaced))

    # By record id: the record's kind (and so its content rules) is known once found.
    resolved: list[Row] = []

    def replace_current(rows: list[Row]) -> tuple[str, dict[str, Any]]:
        if not rows:
            raise not_found()
        current = rows[0]
        resolved.append(current)
        namespace = caller.namespace_of(current["owner_id"])
        caller.require_write(namespace)
        if current["revision"] != args.expected_revision:
            raise conflict(current["revision"])
        record = RecordAddress(namespace, current["kind"], current["path"])
        return change_statement(
            caller,
            current["id"],
            record,
            expected_revision=args.expected_revision,
            body=check_content(record, args.content),
            source=source,
            operation="replace",
        )

    found = resolve_statement(caller, address, contexts=contexts)
    changed = store.db.change(caller, deadline, *found, then=replace_current)
    (current,) = resolved
    if not changed:  # another writer moved it on, or it left the view
        raise explain_change_miss(store.db, caller, deadline, current["id"])
    return _written(uri_of(caller, current), changed[0])


def _written(uri: str, row: Row) -> dict[str, Any]:
    """The answer to a write: the address, the record's id, its revision and context."""
    return {
        "uri": uri,
        "id": str(row["id"]),
        "revision": row["revision"],
        "context": row["context_key"],
    }
