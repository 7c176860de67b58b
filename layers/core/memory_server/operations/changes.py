"""The write rules every change shares, checked in one place whether the record is
named by path or by id: the namespace and its grant, the content rules of the
record's kind, and what a change that did nothing means.

The split between here and the database is one rule wide: what can be checked from
the address and the arguments (grants, content) is checked here, before the change
is sent; what depends on the row (the address look-up, the expected revision, a
destination being free) is checked by the change's own statement, in the database,
under the row's lock. By path, everything here is known before the call, so a change
is one statement; by id, the record is read first (its kind and namespace), then the
same statement runs, pinned to that id.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import cast

from memory_server.data import records
from memory_server.data.pool import Database, Transaction
from memory_server.data.records import Content, Lifecycle, Missed, RecordRow, Written
from memory_server.domain.addresses import IdAddress, Kind, RecordAddress
from memory_server.domain.arguments import RememberArgs, WriteArgs, given
from memory_server.domain.caller import Caller
from memory_server.domain.content import check_content, derive_title
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import not_found, revision_conflict
from memory_server.domain.times import check_expiry


def writable(caller: Caller, address: RecordAddress) -> None:
    """A create, replace or merge at ``address``: its namespace exists for the caller
    (else ``not_found``) and the caller holds its write grant."""
    caller.owner_for(address.namespace)
    caller.require_write(address.namespace)


def deletable(caller: Caller, address: RecordAddress) -> None:
    """A delete at ``address``: its namespace exists, and write and delete grants."""
    caller.owner_for(address.namespace)
    caller.require_delete(address.namespace)


def new_content(address: RecordAddress, body: str, source: str | None) -> Content:
    """What a new revision at ``address`` writes: the body as the kind's rules allow,
    its derived title, the source."""
    checked = check_content(address, body)
    return Content(derive_title(address.kind, address.path, checked), checked, source)


def merged_content(address: RecordAddress, body: str, source: str | None) -> Content:
    """What a merge of facts writes: the body (its size is the merge's own check) and
    its derived title; a list of facts is not held to a kind's content rules."""
    return Content(derive_title(address.kind, address.path, body), body, source)


def lifecycle(args: WriteArgs | RememberArgs) -> Lifecycle:
    """The record's expiry and pin as a change's arguments say: an absent
    ``expires_at`` leaves the expiry as it is (a new record: never), ``null`` removes
    it; an absent ``pinned`` leaves the pin (a new record: not pinned)."""
    pinned = args.pinned if isinstance(args, WriteArgs) else None
    if not given(args, "expires_at"):
        return Lifecycle(pinned=pinned)
    raw = args.expires_at
    expires = None if raw is None else check_expiry(raw, datetime.now(UTC))
    return Lifecycle(expires_at=expires, keep_expiry=False, pinned=pinned)


def address_of(caller: Caller, row: RecordRow) -> RecordAddress:
    """Where a record found by id is, as this caller names it."""
    kind = cast(Kind, row["kind"])  # the table's check constraint: one of KINDS
    return RecordAddress(caller.namespace_of(row["owner_id"]), kind, row["path"])


def locate(
    tx: Transaction, caller: Caller, address: RecordAddress | IdAddress
) -> tuple[RecordAddress, uuid.UUID | None]:
    """The path a change is checked at, and the record id it is pinned to. A path
    address is its own (the change's statement finds the record: no round trip); a
    record id is read here, in the change's transaction (one round trip), since its
    kind and namespace decide the rules."""
    if isinstance(address, RecordAddress):
        return address, None
    current = records.find(tx, caller, address).get()
    if current is None:
        raise not_found()
    return address_of(caller, current), current["id"]


def settled(
    db: Database, caller: Caller, deadline: Deadline, outcome: Written | Missed | None
) -> Written:
    """The change made, or the error that explains why nothing changed: nothing in
    view there, the conflict at the record's revision, or, for a record that moved
    on or left the view meanwhile, what a read of its own finds."""
    if outcome is None:
        raise not_found()
    if isinstance(outcome, Written):
        return outcome
    if outcome.revision is not None:
        raise revision_conflict(outcome.revision)
    with db.read(caller, deadline) as tx:
        now = records.current_revision(tx, caller, outcome.id)
    revision = now.get()
    if revision is None:
        raise not_found()
    raise revision_conflict(revision)
