"""memory_read: one record (by path, id or revision), a byte window of its content."""

from __future__ import annotations

from typing import Any

from .. import sql_files
from ..addresses import Address, RevisionAddress, parse_address
from ..budget import utf8_window
from ..caller import Caller, Deadline
from ..db import Connection
from ..errors import not_found
from ..limits import HISTORY_LIMIT
from ..models import ReadArgs
from ..records import iso, resolve_statement, summary, uri_of, view
from ..store import Store


def memory_read(
    store: Store, caller: Caller, args: ReadArgs, deadline: Deadline | None = None
) -> dict[str, Any]:
    caller.require_read()
    address = parse_address(args.uri)
    deadline = deadline or Deadline()
    history = None
    if args.history:
        with store.db.transaction(caller, deadline, read_only=True) as conn:
            row = _one(sql_files.rows(conn, *_statement(caller, address)), address)
            history = _history(conn, caller, row)
    else:  # one statement: one round trip
        row = _one(store.db.read(caller, deadline, *_statement(caller, address)), address)

    content, next_offset = utf8_window(row["body"], args.offset, args.max_bytes)
    result: dict[str, Any] = {
        **summary(caller, row),
        "content": content,
        "offset": args.offset,
        "next_offset": next_offset,
        "truncated": next_offset is not None,
        "created_at": iso(row["created_at"]),
        "created_by": row["created_by"],
        "updated_by": row["updated_by"],
        "source": row["source"],
    }
    if history is not None:
        result["history"] = history
    return result


def read_revision(
    store: Store, caller: Caller, address: RevisionAddress, deadline: Deadline | None = None
) -> dict[str, Any]:
    """An immutable revision's full content (for revision resources)."""
    caller.require_read()
    statement = _statement(caller, address)
    row = _one(store.db.read(caller, deadline or Deadline(), *statement), address)
    return {
        "uri": address.uri,
        "id": str(row["id"]),
        "revision": row["revision"],
        "content": row["body"],
    }


def _statement(caller: Caller, address: Address) -> tuple[str, dict[str, Any]]:
    """The name and parameters of the statement that reads the address."""
    if isinstance(address, RevisionAddress):
        params = {**view(caller), "id": address.id, "revision": address.revision}
        return "read_revision", params
    return resolve_statement(caller, address)


def _one(rows: list[dict[str, Any]], address: Address) -> dict[str, Any]:
    """The record (or revision) read, or not_found."""
    if not rows:
        raise not_found()
    row = rows[0]
    if isinstance(address, RevisionAddress):
        # A revision's provenance is its own writer and time.
        return {
            **row,
            "created_by": row["writer"],
            "updated_by": row["writer"],
            "updated_at": row["created_at"],
        }
    return row


def _history(conn: Connection, caller: Caller, row: dict[str, Any]) -> list[dict[str, Any]]:
    entries = sql_files.rows(
        conn, "history", {**view(caller), "id": row["id"], "limit": HISTORY_LIMIT}
    )
    return [
        {
            "revision": entry["revision"],
            "operation": entry["operation"],
            "uri": uri_of(caller, entry),
            "at": iso(entry["created_at"]),
            "by": entry["writer"],
            "source": entry["source"],
        }
        for entry in entries
    ]
