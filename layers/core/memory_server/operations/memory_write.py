"""memory_write: create (expected_revision 0) or conditionally replace a record."""

from __future__ import annotations

from typing import Any

from ..addresses import RecordAddress, parse_record_address
from ..caller import Caller, Deadline
from ..contexts import parse_target_context
from ..errors import invalid, not_found
from ..models import WriteArgs
from ..records import change, check_content, check_source, conflict, create, resolve, uri_of
from ..store import Store


def memory_write(
    store: Store, caller: Caller, args: WriteArgs, deadline: Deadline | None = None
) -> dict[str, Any]:
    address = parse_record_address(args.uri)
    source = check_source(args.source)
    target_context = parse_target_context(args.context, caller.context)
    with store.db.transaction(caller, deadline or Deadline()) as conn:
        if args.expected_revision == 0:
            if not isinstance(address, RecordAddress):
                raise invalid("creating a record needs a path address, not a record id")
            body = check_content(address, args.content)
            caller.owner_for(address.namespace)  # not_found for a missing namespace
            caller.require_write(address.namespace)
            # Creating conflicts with whatever the address already resolves to.
            existing = resolve(conn, caller, address)
            if existing is not None:
                raise conflict(existing["revision"])
            row = create(
                conn,
                caller,
                address,
                context_key=target_context,
                body=body,
                source=source,
                operation="create",
            )
            if row is None:  # created concurrently
                existing = resolve(conn, caller, address)
                raise conflict(existing["revision"] if existing else 1)
            return {
                "uri": address.uri,
                "id": str(row["id"]),
                "revision": row["revision"],
                "context": row["context_key"],
            }

        contexts = [target_context] if args.context is not None else None
        current = resolve(conn, caller, address, contexts=contexts)
        if current is None:
            raise not_found()
        namespace = caller.namespace_of(current["owner_id"])
        caller.require_write(namespace)
        if current["revision"] != args.expected_revision:
            raise conflict(current["revision"])
        record = RecordAddress(namespace, current["kind"], current["path"])
        body = check_content(record, args.content)
        row = change(
            conn,
            caller,
            current["id"],
            record,
            expected_revision=args.expected_revision,
            body=body,
            source=source,
            operation="replace",
        )
        return {
            "uri": uri_of(caller, current),
            "id": str(row["id"]),
            "revision": row["revision"],
            "context": row["context_key"],
        }
