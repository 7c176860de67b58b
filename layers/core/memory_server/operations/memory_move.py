"""memory_move: a new path for the same record (same id, revision + 1)."""

from __future__ import annotations

from typing import Any

from psycopg.errors import UniqueViolation

from .. import sql_files
from ..addresses import parse_path_address, parse_record_address
from ..caller import Caller, Deadline
from ..errors import ToolError, invalid, not_found
from ..models import MoveArgs
from ..records import change, check_content, conflict, resolve_statement
from ..store import Store


def memory_move(
    store: Store, caller: Caller, args: MoveArgs, deadline: Deadline | None = None
) -> dict[str, Any]:
    address = parse_record_address(args.uri)
    destination = parse_path_address(args.new_uri, what="new_uri")
    with store.db.transaction(caller, deadline or Deadline()) as conn:
        # Both look-ups travel together (pipelined): one round trip.
        at_source = sql_files.cursor(conn, *resolve_statement(caller, address))
        at_destination = sql_files.cursor(conn, *resolve_statement(caller, destination))
        current = at_source.fetchone()
        if current is None:
            raise not_found()
        namespace = caller.namespace_of(current["owner_id"])
        caller.require_write(namespace)
        if destination.namespace != namespace:
            raise invalid("a move keeps the record's namespace (me or workspace)")
        if current["revision"] != args.expected_revision:
            raise conflict(current["revision"])
        if at_destination.fetchone() is not None:
            raise ToolError("already_exists", "new_uri already resolves to a record")
        check_content(destination, current["body"])
        try:
            row = change(
                conn,
                caller,
                current["id"],
                destination,
                expected_revision=args.expected_revision,
                body=current["body"],
                source=None,
                operation="move",
            )
        except UniqueViolation:  # the destination was taken concurrently
            raise ToolError("already_exists", "new_uri already resolves to a record") from None
        return {"uri": destination.uri, "id": str(row["id"]), "revision": row["revision"]}
