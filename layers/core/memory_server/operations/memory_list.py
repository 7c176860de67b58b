"""memory_list: titles and addresses in the caller's view, never bodies, paged.

The page is whole (up to ``limit`` items), with a cursor after each item; the
protocol layer sends as many as fit the byte budget and the cursor after the last.
"""

from __future__ import annotations

from functools import partial

from memory_server.data import records
from memory_server.domain.addresses import parse_prefix
from memory_server.domain.arguments import ListArgs
from memory_server.domain.caller import Caller
from memory_server.domain.cursors import decode_cursor, encode_cursor
from memory_server.domain.deadline import Deadline
from memory_server.domain.grants import sorted_grants
from memory_server.domain.results import ListPage
from memory_server.domain.summaries import lifecycle, summary
from memory_server.operations.store import Store

_START = ["", "", "", "00000000-0000-0000-0000-000000000000"]


def memory_list(
    store: Store, caller: Caller, args: ListArgs, deadline: Deadline | None = None
) -> ListPage:
    caller.require_read()
    prefix = parse_prefix(args.prefix)
    binding = {
        "tool": "memory_list",
        "principal": str(caller.principal_id),
        "workspace": str(caller.workspace_id),
        "context": caller.context.key,
        "grants": sorted_grants(caller.grants),
        "prefix": args.prefix or "",
    }
    after = _START
    if args.cursor is not None:
        after = decode_cursor(store.cursor_secret, args.cursor, binding)
    owners = [caller.owner_for(prefix.namespace)] if prefix.namespace else caller.visible_owners()
    with store.db.read(caller, deadline or Deadline()) as tx:
        found = records.list_page(
            tx,
            caller,
            owners=owners,
            kind=prefix.kind,
            folder=prefix.folder,
            after=after,
            limit=args.limit + 1,
        )
    rows = found.get()

    page = rows[: args.limit]
    return ListPage(
        items=[{**summary(caller, row), **lifecycle(row)} for row in page],
        positions=[[row["kind"], row["path"], row["context_key"], str(row["id"])] for row in page],
        more=len(rows) > args.limit,
        cursor_for=partial(encode_cursor, store.cursor_secret, binding),
    )
