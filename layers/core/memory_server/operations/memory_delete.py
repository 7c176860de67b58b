"""memory_delete: conditional, real deletion (bodies of every revision purged).

One transaction (``Database.change``). By path it is one statement sent with
``BEGIN``, the caller's settings and ``COMMIT``: what the address resolves to, then
the conditional delete, in the database (``memory.change_record_at``). By record id
it takes two round trips: the record is read first, because its namespace decides
the grant the delete needs; the delete then travels with ``COMMIT``. A delete that
matches no row (a concurrent writer got there first) is explained by a read of its
own.
"""

from __future__ import annotations

from typing import Any

from ..addresses import RecordAddress, parse_record_address
from ..caller import Caller, Deadline
from ..errors import not_found
from ..models import DeleteArgs
from ..records import (
    changed_row,
    conflict,
    delete_statement,
    explain_change_miss,
    resolve_statement,
    uri_of,
    view,
)
from ..sql_files import Row
from ..store import Store


def memory_delete(
    store: Store, caller: Caller, args: DeleteArgs, deadline: Deadline | None = None
) -> dict[str, Any]:
    address = parse_record_address(args.uri)
    deadline = deadline or Deadline()
    if isinstance(address, RecordAddress):
        caller.owner_for(address.namespace)  # not_found for a missing namespace
        caller.require_delete(address.namespace)
        statement = delete_statement(caller, address, expected_revision=args.expected_revision)
        row = changed_row(store.db, caller, deadline, store.db.change(caller, deadline, *statement))
        return {"uri": address.uri, "id": str(row["id"]), "deleted_revision": row["revision"]}

    resolved: list[Row] = []

    def delete_current(rows: list[Row]) -> tuple[str, dict[str, Any]]:
        if not rows:
            raise not_found()
        current = rows[0]
        resolved.append(current)
        caller.require_delete(caller.namespace_of(current["owner_id"]))
        if current["revision"] != args.expected_revision:
            raise conflict(current["revision"])
        current["uri"] = uri_of(caller, current)
        return "delete_record", {
            **view(caller),
            "id": current["id"],
            "expected_revision": args.expected_revision,
            "uri": current["uri"],
        }

    found = resolve_statement(caller, address)
    deleted = store.db.change(caller, deadline, *found, then=delete_current)
    (current,) = resolved
    if not deleted:  # another writer moved it on, or it left the view
        raise explain_change_miss(store.db, caller, deadline, current["id"])
    row = deleted[0]
    return {"uri": current["uri"], "id": str(row["id"]), "deleted_revision": row["revision"]}
