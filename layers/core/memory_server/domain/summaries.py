"""How a record is described on the wire: its address for this caller, its summary
(list items and search hits; never the body), timestamps."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memory_server.domain.addresses import record_uri
from memory_server.domain.caller import Caller


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def uri_of(caller: Caller, row: Any) -> str:
    """The address of a record (or revision row) as this caller names it."""
    return record_uri(caller.namespace_of(row["owner_id"]), row["kind"], row["path"])


def summary(caller: Caller, row: Any) -> dict[str, Any]:
    """What list items and search hits say about a record (never its body)."""
    return {
        "uri": uri_of(caller, row),
        "id": str(row["id"]),
        "kind": row["kind"],
        "title": row["title"],
        "context": row["context_key"],
        "revision": row["revision"],
        "updated_at": iso(row["updated_at"]),
    }


def lifecycle(row: Any) -> dict[str, Any]:
    """A record's expiry and pin, as list items and reads give them."""
    expires = row["expires_at"]
    return {"expires_at": None if expires is None else iso(expires), "pinned": row["pinned"]}
