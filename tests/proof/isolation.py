"""The isolation matrix (tests/proof/test_isolation.py, test_isolation_reads.py): its
marker records, the briefing's lifecycle records, and the helpers both modules use.

Two modules, so two test workers share the matrix's minute and a half of tool
calls; each writes its own markers (``run_id`` is per module) on its worker's stack.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar

import psycopg

from tests.proof.harness import (
    Inspector,
    invoke,
    marker_word,
    mcp_client,
    run,
)
from tests.proof.model import (
    Cell,
    Placed,
    all_cells,
    ancestors,
    endpoint_status,
    namespaces_writable,
    visible,
)

T = TypeVar("T")
KIND = {"me": "memories", "workspace": "notes"}
OBSERVERS = [cell for cell in all_cells() if endpoint_status(cell) == 200]
WRITERS = [cell for cell in all_cells() if namespaces_writable(cell)]
PARALLEL = 16  # observers at a time: enough to keep both cores busy
LIST_ITEM_KEYS = {
    "uri", "id", "kind", "title", "context", "revision", "updated_at", "expires_at", "pinned",
}  # fmt: skip
BRIEF_BYTES = 16384  # the largest briefing: room for every marker an observer sees
BRIEF_SECTION_ITEMS = 20  # what each of its sections reads at most (docs/contract.md)
NEVER = "2000-01-01T00:00:00Z"  # before any record of this stack
# Records that expire while the proofs run, written in these cells (token, workspace,
# context, namespace, pinned): personal and shared, a DM's, a channel's, another
# workspace's; pinned ones would lead the briefing, the others be recent changes.
EXPIRING = (
    ("alice", "acme", "workspace", "me", True),
    ("alice", "acme", "workspace", "workspace", False),
    ("alice", "acme", "dm:alice-release-bot", "workspace", True),
    ("release-bot", "acme", "channel:general", "workspace", False),
    ("carol", "globex", "workspace", "me", True),
    ("carol", "globex", "workspace", "workspace", False),
)
EXPIRING_AFTER_S = 4.0  # enough to write them and hold them from the sweeper first


@dataclass(frozen=True)
class Marker:
    word: str
    writer: Cell
    namespace: str
    uri: str
    id: str
    body: str
    pinned: bool = False
    expires_at: str | None = None

    @property
    def placed(self) -> Placed:
        owner = self.writer.principal.identity if self.namespace == "me" else None
        return Placed(self.writer.workspace, self.writer.context, self.namespace, owner)

    def seen_by(self, observer: Cell) -> bool:
        """In the observer's view: as the model says, and never once expired."""
        return self.expires_at is None and visible(self.placed, observer)


@dataclass
class Lifecycle:
    """The briefing's markers (pinned, and plain ones changed after ``since``), and
    expired records the sweeper may not purge until :meth:`release`."""

    since: str
    pinned: list[Marker]
    recent: list[Marker]
    expired: list[Marker]
    holder: psycopg.Connection[Any]
    released: bool = field(default=False)

    @property
    def every(self) -> list[Marker]:
        return [*self.pinned, *self.recent, *self.expired]

    def release(self) -> None:
        if not self.released:
            self.holder.rollback()
            self.released = True


def mode_of(cell: Cell) -> str:
    """Alternate protocol generations across observers, deterministically."""
    return "legacy" if OBSERVERS.index(cell) % 2 else "auto"


def observer_client(stack: Any, cell: Cell) -> Any:
    return mcp_client(
        stack, cell.token, workspace=cell.workspace, context=cell.context, mode=mode_of(cell)
    )


async def gather_limited(jobs: Iterable[Callable[[], Awaitable[T]]], limit: int) -> list[T]:
    gate = asyncio.Semaphore(limit)

    async def one(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await job()

    return list(await asyncio.gather(*(one(job) for job in jobs)))


def for_each_observer(
    stack: Any,
    check: Callable[[Any, Cell], Awaitable[list[str]]],
    observers: list[Cell] = OBSERVERS,
) -> list[str]:
    """Run ``check(client, observer)`` for every admitted observer; collect problems."""

    def job(cell: Cell) -> Callable[[], Awaitable[list[str]]]:
        async def go() -> list[str]:
            async with observer_client(stack, cell) as client:
                return [f"{cell}: {p}" for p in await check(client, cell)]

        return go

    results = run(gather_limited([job(cell) for cell in observers], PARALLEL))
    return [problem for problems in results for problem in problems]


def leaks(wire: str, hidden: Iterable[Marker]) -> list[str]:
    """Hidden markers whose word or id shows anywhere in what the caller received."""
    return [m.word for m in hidden if m.word in wire or m.id in wire]


async def write_marker(
    stack: Any, run_id: str, cell: Cell, namespace: str, word: str, **lifecycle: Any
) -> Marker:
    """A marker record written by ``cell`` (``pinned``, ``expires_at`` as given)."""
    uri = f"memory://{namespace}/{KIND[namespace]}/proof-iso-{run_id}/{word}.md"
    body = f"# {word}\n{word} marks the {namespace} namespace of {cell}.\n"
    async with mcp_client(stack, cell.token, workspace=cell.workspace, context=cell.context) as c:
        made = await invoke(
            c, "memory_write", uri=uri, content=body, expected_revision=0, **lifecycle
        )
    assert not made.is_error, (cell, made.structured)
    assert made.structured["context"] == cell.context and made.structured["revision"] == 1
    return Marker(
        word,
        cell,
        namespace,
        uri,
        made.structured["id"],
        body,
        pinned=bool(lifecycle.get("pinned")),
        expires_at=lifecycle.get("expires_at"),
    )


async def unpin_marker(stack: Any, marker: Marker) -> None:
    """The marker rewritten unpinned by its writer (who may write it, not always
    delete it)."""
    cell = marker.writer
    async with mcp_client(
        stack, cell.token, workspace=cell.workspace, context=cell.context
    ) as client:
        done = await invoke(
            client,
            "memory_write",
            uri=marker.uri,
            content=marker.body,
            expected_revision=1,
            pinned=False,
        )
    assert not done.is_error and done.structured["revision"] == 2, (marker.word, done.structured)


def write_markers(stack: Any, run_id: str) -> list[Marker]:
    """A marker in every namespace of every writable cell (the matrix's records)."""
    rng = random.Random(run_id)
    plan = [(cell, ns, marker_word(rng)) for cell in WRITERS for ns in namespaces_writable(cell)]
    jobs = [
        lambda c=cell, n=ns, w=word: write_marker(stack, run_id, c, n, w) for cell, ns, word in plan
    ]
    made = run(gather_limited(jobs, PARALLEL))
    # Every writable cell got its marker: acme alice 6×2, bob 4, release-bot 5; globex carol 5×2.
    assert len(made) == 31
    assert len({m.id for m in made}) == len({m.word for m in made}) == 31
    return made


@contextmanager
def lifecycle_of(stack: Any, inspector: Inspector, run_id: str) -> Iterator[Lifecycle]:
    """After the markers: ``since``, then records that expire shortly (held from the
    sweeper's purge by a row lock that reads do not wait for), then a pinned and a
    plain marker in every writable cell; ready once the expiry has passed. Afterwards
    the expired records are purged and the markers unpinned: a pin left behind
    would lead every later briefing on the stack (another module's matrix, the
    briefing tests of tests/e2e) and take part of its budget."""
    rng = random.Random(f"lifecycle-{run_id}")
    since = inspector.clock().isoformat()
    expiry = inspector.clock() + timedelta(seconds=EXPIRING_AFTER_S)

    async def expiring() -> list[Marker]:
        return [
            await write_marker(
                stack,
                run_id,
                Cell(token, workspace, context),
                namespace,
                marker_word(rng, "exp"),
                pinned=pinned,
                expires_at=expiry.isoformat(),
            )
            for token, workspace, context, namespace, pinned in EXPIRING
        ]

    expired = run(expiring())
    holder = psycopg.connect(stack.info["database_url"])
    held = holder.execute(
        "SELECT id FROM memory.memories WHERE id = ANY(%s::uuid[]) FOR KEY SHARE",
        ([m.id for m in expired],),
    ).fetchall()
    assert len(held) == len(EXPIRING) and inspector.clock() < expiry, "held before they expired"
    plan = [(cell, ns) for cell in WRITERS for ns in namespaces_writable(cell)]

    def jobs(prefix: str, pinned: bool) -> list[Callable[[], Awaitable[Marker]]]:
        words = [marker_word(rng, prefix) for _ in plan]
        return [
            partial(write_marker, stack, run_id, cell, ns, word, pinned=pinned)
            for (cell, ns), word in zip(plan, words, strict=True)
        ]

    pinned = run(gather_limited(jobs("pin", True), PARALLEL))
    recent = run(gather_limited(jobs("rec", False), PARALLEL))
    inspector.wait_for_clock(expiry)
    made = Lifecycle(since, pinned, recent, expired, holder)
    try:
        yield made
    finally:
        made.release()
        holder.close()
        inspector.purge_until_gone(m.id for m in expired)  # leave no expiry behind
        run(gather_limited([partial(unpin_marker, stack, m) for m in pinned], PARALLEL))


def key_of(cell: Cell) -> tuple[str, str, str]:
    return cell.token, cell.workspace, cell.context


def depth(context: str) -> int:
    return len(ancestors(context))


def words(ids: Iterable[str], markers: list[Marker]) -> list[str]:
    by_id = {m.id: m.word for m in markers}
    return sorted(by_id.get(i, i) for i in ids)
