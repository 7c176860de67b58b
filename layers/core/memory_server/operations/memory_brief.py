"""memory_brief: what an agent loads at session start, in one statement.

Pinned memories and notes with their content, then what changed lately, then the
skills in view: the same view, labels and deadline as every read. The domain
returns it whole (bounded by the item limits); the protocol layer fits it to the
caller's ``max_bytes`` on the bytes sent (:func:`memory_server.protocol.budget.fit_brief`).
"""

from __future__ import annotations

from memory_server.data import records
from memory_server.domain.arguments import BriefArgs
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.domain.results import Brief, PinnedRecord
from memory_server.domain.summaries import summary
from memory_server.domain.times import parse_time
from memory_server.operations.skills import skill_entry
from memory_server.operations.store import Store


def memory_brief(
    store: Store, caller: Caller, args: BriefArgs, deadline: Deadline | None = None
) -> Brief:
    caller.require_read()
    since = None if args.since is None else parse_time(args.since, "since")
    with store.db.read(caller, deadline or Deadline()) as tx:
        found = records.brief(tx, caller, since=since)
    rows = found.get()
    return Brief(
        pinned=[
            PinnedRecord(summary(caller, row), row["content"], row["cut"]) for row in rows.pinned
        ],
        recent=[
            {
                **summary(caller, row),
                "updated_by": row["updated_by"],
                "updated_by_kind": row["updated_by_kind"],
            }
            for row in rows.recent
        ],
        skills=[skill_entry(caller, row) for row in rows.skills],
        max_bytes=args.max_bytes,
    )
