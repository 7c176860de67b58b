"""memory_delete: conditional, real deletion (bodies of every revision purged)."""

from __future__ import annotations

from typing import Any

from .. import sql_files
from ..addresses import parse_record_address
from ..caller import Caller, Deadline
from ..errors import not_found
from ..models import DeleteArgs
from ..records import conflict, conflict_or_gone, resolve, uri_of, view
from ..store import Store


def memory_delete(
    store: Store, caller: Caller, args: DeleteArgs, deadline: Deadline | None = None
) -> dict[str, Any]:
    address = parse_record_address(args.uri)
    with store.db.transaction(caller, deadline or Deadline()) as conn:
        current = resolve(conn, caller, address)
        if current is None:
            raise not_found()
        caller.require_delete(caller.namespace_of(current["owner_id"]))
        if current["revision"] != args.expected_revision:
            raise conflict(current["revision"])
        uri = uri_of(caller, current)
        row = sql_files.one(
            conn,
            "delete_record",
            {
                **view(caller),
                "id": current["id"],
                "expected_revision": args.expected_revision,
                "uri": uri,
            },
        )
        if row is None:
            raise conflict_or_gone(conn, caller, current["id"])
        return {"uri": uri, "id": str(row["id"]), "deleted_revision": row["revision"]}
