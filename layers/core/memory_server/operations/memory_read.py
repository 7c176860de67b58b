"""memory_read: one record (by path, id or revision), a byte window of its content;
with ``as_of``, the revision of the record (as the address resolves now) that was
current at that time."""

from __future__ import annotations

from typing import Any

from memory_server.data import records
from memory_server.data.pool import Pending, Transaction
from memory_server.data.records import HistoryRow, RevisionRow
from memory_server.domain.addresses import Address, RevisionAddress, parse_address
from memory_server.domain.arguments import ReadArgs
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import invalid, not_found
from memory_server.domain.limits import HISTORY_LIMIT
from memory_server.domain.summaries import iso, lifecycle, summary, uri_of
from memory_server.domain.times import parse_time
from memory_server.domain.utf8 import utf8_window
from memory_server.operations.store import Store


def memory_read(
    store: Store, caller: Caller, args: ReadArgs, deadline: Deadline | None = None
) -> dict[str, Any]:
    caller.require_read()
    address = parse_address(args.uri)
    as_of = None if args.as_of is None else parse_time(args.as_of, "as_of")
    if as_of is not None and isinstance(address, RevisionAddress):
        raise invalid("as_of reads a record's address or id, not a revision address")
    deadline = deadline or Deadline()
    history: Pending[list[HistoryRow]] | None = None
    then: Pending[RevisionRow | None] | None = None
    with store.db.read(caller, deadline) as tx:
        found = _find(tx, caller, address)
        if args.history or as_of is not None:  # they need the id: a second round trip
            record_id = _one(found.get(), address)["id"]
            if args.history:
                history = records.history(tx, caller, record_id, HISTORY_LIMIT)
            if as_of is not None:
                then = records.revision_as_of(tx, caller, record_id, as_of)
    row = _one(found.get(), address) if then is None else _one(then.get(), address, revision=True)

    content, next_offset = utf8_window(row["body"], args.offset, args.max_bytes)
    result: dict[str, Any] = {
        **summary(caller, row),
        "content": content,
        "offset": args.offset,
        "next_offset": next_offset,
        "truncated": next_offset is not None,
        "created_at": iso(row["created_at"]),
        "created_by": row["created_by"],
        "created_by_kind": row["created_by_kind"],
        "updated_by": row["updated_by"],
        "updated_by_kind": row["updated_by_kind"],
        "source": row["source"],
        **lifecycle(row),
    }
    if as_of is not None:
        result["as_of"] = iso(as_of)
    if history is not None:
        result["history"] = [
            {
                "revision": entry["revision"],
                "operation": entry["operation"],
                "uri": uri_of(caller, entry),
                "at": iso(entry["created_at"]),
                "by": entry["writer"],
                "by_kind": entry["writer_kind"],
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


def _one(row: Any, address: Address, *, revision: bool = False) -> dict[str, Any]:
    """The record (or revision) read, or not_found."""
    if row is None:
        raise not_found()
    if revision or isinstance(address, RevisionAddress):
        # A revision's provenance is its own writer and time.
        return {
            **row,
            "created_by": row["writer"],
            "created_by_kind": row["writer_kind"],
            "updated_by": row["writer"],
            "updated_by_kind": row["writer_kind"],
            "updated_at": row["created_at"],
        }
    return dict(row)
