"""memory_read: one record (by path, id or revision), a byte window of its content."""

from __future__ import annotations

from typing import Any

from memory_server.data import records
from memory_server.data.pool import Pending, Transaction
from memory_server.data.records import HistoryRow
from memory_server.domain.addresses import Address, RevisionAddress, parse_address
from memory_server.domain.arguments import ReadArgs
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import not_found
from memory_server.domain.limits import HISTORY_LIMIT
from memory_server.domain.summaries import iso, summary, uri_of
from memory_server.domain.utf8 import utf8_window
from memory_server.operations.store import Store


def memory_read(
    store: Store, caller: Caller, args: ReadArgs, deadline: Deadline | None = None
) -> dict[str, Any]:
    caller.require_read()
    address = parse_address(args.uri)
    deadline = deadline or Deadline()
    history: Pending[list[HistoryRow]] | None = None
    with store.db.read(caller, deadline) as tx:
        found = _find(tx, caller, address)
        if args.history:  # the history needs the record's id: a second round trip
            row = _one(found.get(), address)
            history = records.history(tx, caller, row["id"], HISTORY_LIMIT)
    row = _one(found.get(), address)

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
        result["history"] = [
            {
                "revision": entry["revision"],
                "operation": entry["operation"],
                "uri": uri_of(caller, entry),
                "at": iso(entry["created_at"]),
                "by": entry["writer"],
                "source": entry["source"],
            }
            for entry in history.get()
        ]
    return result


def read_revision(
    store: Store, caller: Caller, address: RevisionAddress, deadline: Deadline | None = None
) -> dict[str, Any]:
    """An immutable revision's full content (for revision resources)."""
    caller.require_read()
    with store.db.read(caller, deadline or Deadline()) as tx:
        found = _find(tx, caller, address)
    row = _one(found.get(), address)
    return {
        "uri": address.uri,
        "id": str(row["id"]),
        "revision": row["revision"],
        "content": row["body"],
    }


def _find(tx: Transaction, caller: Caller, address: Address) -> Pending[Any]:
    """The statement that reads the address: a revision, or a record by path or id."""
    if isinstance(address, RevisionAddress):
        return records.read_revision(tx, caller, address.id, address.revision)
    return records.find(tx, caller, address)


def _one(row: Any, address: Address) -> dict[str, Any]:
    """The record (or revision) read, or not_found."""
    if row is None:
        raise not_found()
    if isinstance(address, RevisionAddress):
        # A revision's provenance is its own writer and time.
        return {
            **row,
            "created_by": row["writer"],
            "updated_by": row["writer"],
            "updated_at": row["created_at"],
        }
    return dict(row)
