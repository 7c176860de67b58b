"""memory_delete: conditional, real deletion (bodies of every revision purged).

One transaction of two round trips (``Database.change``): the record the address
resolves to is read with ``BEGIN`` and the caller's settings; the conditional delete
travels with ``COMMIT``. A delete that matches no row (a concurrent writer got there
first) is explained by a read of its own.
"""

from __future__ import annotations

from typing import Any

from ..addresses import parse_record_address
from ..caller import Caller, Deadline
from ..errors import not_found
from ..models import DeleteArgs
from ..records import (
    conflict,
    current_revision_statement,
    explain_miss,
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
    resolved: list[Row] = []

    def delete_current(rows: list[Row]) -> tuple[str, dict[str, Any]]:
        if not rows:
            raise not_found()
        current = rows[0]
        resolved.append(current)
        caller.require_delete(caller.namespace_of(current["owner_id"]))
        if current["revision"] != args.expected_revision:
            raise conflict(current["revision"])
        return "delete_record", {
            **view(caller),
            "id": current["id"],
            "expected_revision": args.expected_revision,
            "uri": uri_of(caller, current),
        }

    found = resolve_statement(caller, address)
    deleted = store.db.change(caller, deadline, *found, then=delete_current)
    (current,) = resolved
    if not deleted:  # another writer moved it on, or it left the view
        missed = store.db.read(caller, deadline, *current_revision_statement(caller, current["id"]))
        raise explain_miss(missed[0] if missed else None)
    row = deleted[0]
    uri = uri_of(caller, current)
    return {"uri": uri, "id": str(row["id"]), "deleted_revision": row["revision"]}
