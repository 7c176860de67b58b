"""memory_move: a new path for the same record (same id, revision + 1).

One transaction of two round trips: the record is read with ``BEGIN`` and the
caller's settings (its namespace, revision and body decide what the move may do);
the move, which first looks at what the destination resolves to, travels with
``COMMIT`` (``memory.move_record``). A move that matches no row (a concurrent writer
got there first) is explained by a read of its own.
"""

from __future__ import annotations

from typing import Any

from memory_server.data import records
from memory_server.data.records import Occupied
from memory_server.domain.addresses import parse_path_address, parse_record_address
from memory_server.domain.arguments import MoveArgs
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import ToolError, invalid, not_found, revision_conflict
from memory_server.operations.changes import new_content, settled, writable
from memory_server.operations.store import Store


def memory_move(
    store: Store, caller: Caller, args: MoveArgs, deadline: Deadline | None = None
) -> dict[str, Any]:
    address = parse_record_address(args.uri)
    destination = parse_path_address(args.new_uri, what="new_uri")
    deadline = deadline or Deadline()
    with store.db.write(caller, deadline) as tx:
        current = records.find(tx, caller, address).get()
        if current is None:
            raise not_found()
        namespace = caller.namespace_of(current["owner_id"])
        if destination.namespace != namespace:
            caller.require_write(namespace)
            raise invalid("a move keeps the record's namespace (me or workspace)")
        writable(caller, destination)
        if current["revision"] != args.expected_revision:
            raise revision_conflict(current["revision"])
        moved = records.move(
            tx,
            caller,
            current["id"],
            destination,
            expected_revision=args.expected_revision,
            content=new_content(destination, current["body"], None),
        )
    outcome = moved.get()
    if isinstance(outcome, Occupied):  # the destination is taken (or was, concurrently)
        raise ToolError("already_exists", "new_uri already resolves to a record")
    row = settled(store.db, caller, deadline, outcome)
    return {"uri": destination.uri, "id": str(row.id), "revision": row.revision}
