"""memory_read: one record (by path, id or revision), a byte window of its content."""

from __future__ import annotations

from typing import Any

from ..addresses import RevisionAddress, parse_address
from ..budget import utf8_window
from ..caller import Caller, Deadline
from ..db import Connection
from ..errors import not_found
from ..models import ReadArgs
from ..records import TRUST, iso, resolve, uri_of, view
from ..sql_files import query
from ..store import Store

HISTORY_LIMIT = 50


def memory_read(
    store: Store, caller: Caller, args: ReadArgs, deadline: Deadline | None = None
) -> dict[str, Any]:
    address = parse_address(args.uri)
    with store.db.transaction(caller, deadline or Deadline(), read_only=True) as conn:
        if isinstance(address, RevisionAddress):
            row = _revision(conn, caller, address)
        else:
            found = resolve(conn, caller, address)
            if found is None:
                raise not_found()
            row = found
        history = _history(conn, caller, row) if args.history else None

    content, next_offset = utf8_window(row["body"], args.offset, args.max_bytes)
    result: dict[str, Any] = {
        "uri": uri_of(caller, row),
        "id": str(row["id"]),
        "kind": row["kind"],
        "title": row["title"],
        "context": row["context_key"],
        "revision": row["revision"],
        "content": content,
        "offset": args.offset,
        "next_offset": next_offset,
        "truncated": next_offset is not None,
        "created_at": iso(row["created_at"]),
        "created_by": row["created_by"],
        "updated_at": iso(row["updated_at"]),
        "updated_by": row["updated_by"],
        "source": row["source"],
        "trust": TRUST,
    }
    if history is not None:
        result["history"] = history
    return result


def read_revision(
    store: Store, caller: Caller, address: RevisionAddress, deadline: Deadline | None = None
) -> dict[str, Any]:
    """An immutable revision's full content (for revision resources)."""
    with store.db.transaction(caller, deadline or Deadline(), read_only=True) as conn:
        row = _revision(conn, caller, address)
    return {
        "uri": address.uri,
        "id": str(row["id"]),
        "revision": row["revision"],
        "content": row["body"],
        "trust": TRUST,
    }


def _revision(conn: Connection, caller: Caller, address: RevisionAddress) -> dict[str, Any]:
    row = conn.execute(
        query("read_revision"), {**view(caller), "id": address.id, "revision": address.revision}
    ).fetchone()
    if row is None:
        raise not_found()
    # A revision's provenance is its own writer and time.
    return {
        **row,
        "created_by": row["writer"],
        "updated_by": row["writer"],
        "updated_at": row["created_at"],
    }


def _history(conn: Connection, caller: Caller, row: dict[str, Any]) -> list[dict[str, Any]]:
    entries = conn.execute(
        query("history"), {**view(caller), "id": row["id"], "limit": HISTORY_LIMIT}
    ).fetchall()
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
