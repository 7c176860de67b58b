"""memory_list: titles and addresses in the caller's view, never bodies, paged.

The page is whole (up to ``limit`` items), with a cursor after each item; the
protocol layer sends as many as fit the byte budget and the cursor after the last.
"""

from __future__ import annotations

from functools import partial

from ..addresses import parse_prefix
from ..caller import Caller, Deadline
from ..cursors import decode_cursor, encode_cursor
from ..grants import sorted_grants
from ..models import ListArgs
from ..records import summary, view
from ..results import ListPage
from ..store import Store

_PATH_END = "\U0010ffff"  # above every valid path under the C collation
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
    folder = prefix.folder
    params = {
        **view(caller),
        "owners": owners,
        "kind": prefix.kind,
        "path_low": folder,
        "path_high": folder[:-1] + "0" if folder else _PATH_END,  # '0' follows '/'
        "after_kind": after[0],
        "after_path": after[1],
        "after_context": after[2],
        "after_id": after[3],
        "limit": args.limit + 1,
    }
    rows = store.db.read(caller, deadline or Deadline(), "list_page", params)

    page = rows[: args.limit]
    return ListPage(
        items=[summary(caller, row) for row in page],
        positions=[[row["kind"], row["path"], row["context_key"], str(row["id"])] for row in page],
        more=len(rows) > args.limit,
        cursor_for=partial(encode_cursor, store.cursor_secret, binding),
    )
