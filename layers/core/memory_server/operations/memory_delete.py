"""memory_delete: conditional, real deletion (bodies of every revision purged).

One transaction. By path it is one statement sent with ``BEGIN``, the caller's
settings and ``COMMIT``: what the address resolves to, the revision check and the
delete, in the database. By record id it takes two round trips: the record is read
first (its namespace decides the grant), then the same delete, pinned to that id,
travels with ``COMMIT``. The rules are :mod:`.changes`'s either way.
"""

from __future__ import annotations

from typing import Any

from memory_server.data import records
from memory_server.data.records import NO_CONTENT
from memory_server.domain.addresses import parse_record_address
from memory_server.domain.arguments import DeleteArgs
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.operations.changes import deletable, locate, settled
from memory_server.operations.store import Store


def memory_delete(
    store: Store, caller: Caller, args: DeleteArgs, deadline: Deadline | None = None
) -> dict[str, Any]:
    address = parse_record_address(args.uri)
    deadline = deadline or Deadline()
    with store.db.write(caller, deadline) as tx:
        record, record_id = locate(tx, caller, address)
        deletable(caller, record)
        deleted = records.change_at(
            tx,
            caller,
            record,
            record_id=record_id,
            contexts=None,
            expected_revision=args.expected_revision,
            content=NO_CONTENT,
            operation="delete",
        )
    row = settled(store.db, caller, deadline, deleted.get())
    return {"uri": record.uri, "id": str(row.id), "deleted_revision": row.revision}
