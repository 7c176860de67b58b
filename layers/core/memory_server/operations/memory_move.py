"""memory_move: a new path for the same record (same id, revision + 1).

One transaction of two round trips (``Database.change``): the record is read with
``BEGIN`` and the caller's settings (its namespace, revision and body decide what
the move may do); the move, which first looks at what the destination resolves to,
travels with ``COMMIT`` (``memory.move_record``). A move that matches no row (a
concurrent writer got there first) is explained by a read of its own.
"""

from __future__ import annotations

from typing import Any

from ..addresses import parse_path_address, parse_record_address
from ..caller import Caller, Deadline
from ..errors import ToolError, invalid, not_found
from ..models import MoveArgs
from ..records import (
    check_content,
    conflict,
    explain_change_miss,
    move_statement,
    resolve_statement,
)
from ..sql_files import Row
from ..store import Store


def memory_move(
    store: Store, caller: Caller, args: MoveArgs, deadline: Deadline | None = None
) -> dict[str, Any]:
    address = parse_record_address(args.uri)
    destination = parse_path_address(args.new_uri, what="new_uri")
    deadline = deadline or Deadline()
    resolved: list[Row] = []

    def move_current(rows: list[Row]) -> tuple[str, dict[str, Any]]:
        if not rows:
            raise not_found()
        current = rows[0]
        resolved.append(current)
        namespace = caller.namespace_of(current["owner_id"])
        caller.require_write(namespace)
        if destination.namespace != namespace:
            raise invalid("a move keeps the record's namespace (me or workspace)")
        if current["revision"] != args.expected_revision:
            raise conflict(current["revision"])
        return move_statement(
            caller,
            current["id"],
            destination,
            expected_revision=args.expected_revision,
            body=check_content(destination, current["body"]),
        )

    found = resolve_statement(caller, address)
    moved = store.db.change(caller, deadline, *found, then=move_current)
    (current,) = resolved
    if not moved:  # another writer moved it on, or it left the view
        raise explain_change_miss(store.db, caller, deadline, current["id"])
    row = moved[0]
    if not row["moved"]:  # the destination is taken (or was, concurrently)
        raise ToolError("already_exists", "new_uri already resolves to a record")
    return {"uri": destination.uri, "id": str(row["id"]), "revision": row["revision"]}
