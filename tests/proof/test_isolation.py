"""Isolation matrix (docs/contract.md §2, §4, §5, §7): nothing outside a caller's view is
discoverable, on any read path.

Generated, not hand-picked: a marker record (a random word no text contains) is
written in every cell (principal × workspace × context × namespace the principal
can write), then every (principal, workspace, context) observer walks every read
path, and each marker must be visible exactly where the independent model in
``model.py`` says. Reads use the official MCP client over HTTP, half of the
observers on each protocol generation.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from mcp.shared.exceptions import MCPError

from tests.proof.harness import (
    RAW_PARALLEL,
    invoke,
    marker_word,
    mcp_client,
    no_problems,
    post,
    run,
    tool_call,
)
from tests.proof.model import (
    CONTEXTS,
    Cell,
    Placed,
    all_cells,
    ancestors,
    cursor_binding,
    endpoint_status,
    grants,
    namespaces_writable,
    visible,
)

pytestmark = pytest.mark.slow  # a generated matrix over the stack: seconds per test

T = TypeVar("T")
KIND = {"me": "memories", "workspace": "notes"}
OBSERVERS = [cell for cell in all_cells() if endpoint_status(cell) == 200]
WRITERS = [cell for cell in all_cells() if namespaces_writable(cell)]
PARALLEL = 16  # observers at a time: enough to keep both cores busy
LIST_ITEM_KEYS = {
    "uri",
    "id",
    "kind",
    "title",
    "context",
    "revision",
    "updated_at",
    "expires_at",
    "pinned",
}


@dataclass(frozen=True)
class Marker:
    word: str
    writer: Cell
    namespace: str
    uri: str
    id: str
    body: str

    @property
    def placed(self) -> Placed:
        owner = self.writer.principal.identity if self.namespace == "me" else None
        return Placed(self.writer.workspace, self.writer.context, self.namespace, owner)


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


@pytest.fixture(scope="module")
def markers(stack: Any, run_id: str) -> list[Marker]:
    rng = random.Random(run_id)
    plan = [(cell, ns, marker_word(rng)) for cell in WRITERS for ns in namespaces_writable(cell)]

    async def write(cell: Cell, namespace: str, word: str) -> Marker:
        uri = f"memory://{namespace}/{KIND[namespace]}/proof-iso-{run_id}/{word}.md"
        body = f"# {word}\n{word} marks the {namespace} namespace of {cell}.\n"
        async with mcp_client(
            stack, cell.token, workspace=cell.workspace, context=cell.context
        ) as c:
            made = await invoke(c, "memory_write", uri=uri, content=body, expected_revision=0)
        assert not made.is_error, (cell, made.structured)
        assert made.structured["context"] == cell.context and made.structured["revision"] == 1
        return Marker(word, cell, namespace, uri, made.structured["id"], body)

    jobs = [lambda c=cell, n=ns, w=word: write(c, n, w) for cell, ns, word in plan]
    made = run(gather_limited(jobs, PARALLEL))
    # Every writable cell got its marker: acme alice 6×2, bob 4, release-bot 5; globex carol 5×2.
    assert len(made) == 31
    assert len({m.id for m in made}) == len({m.word for m in made}) == 31
    return made


def test_the_endpoint_admits_exactly_the_cells_the_model_admits(
    stack: Any, markers: list[Marker], run_id: str
) -> None:
    """404 (not a member, no such workspace, memory off) and 403 context_unavailable
    answer identically whatever exists; the query names real markers."""
    body = tool_call("memory_search", query=" or ".join(m.word for m in markers[:8]))
    nowhere = stack.info["workspaces"]["acme"].replace("/w/acme/", f"/w/nowhere-{run_id}/")
    baseline = post(stack, "alice", body, url=nowhere)
    assert (baseline.status_code, baseline.content) == (404, b"")

    def shape(response: Any) -> tuple[int, bytes, set[str]]:
        volatile = {"date", "apigw-requestid"}
        return response.status_code, response.content, set(response.headers) - volatile

    def probe(cell: Cell) -> str | None:
        got = shape(post(stack, cell.token, body, workspace=cell.workspace, context=cell.context))
        expected = endpoint_status(cell)
        if expected == 404 and got != shape(baseline):
            return f"{cell}: expected the anonymous 404, got {got[:2]}"
        if expected == 403 and got[:2] != (403, b'{"error":"context_unavailable"}'):
            return f"{cell}: expected context_unavailable, got {got[:2]}"
        if expected == 200 and got[0] != 200:
            return f"{cell}: expected 200, got {got[:2]}"
        return None

    with ThreadPoolExecutor(RAW_PARALLEL) as pool:
        no_problems([p for p in pool.map(probe, all_cells()) if p])


def test_list_shows_exactly_the_visible_markers(
    stack: Any, markers: list[Marker], run_id: str
) -> None:
    """A full walk (budgeted pages) and small-page prefix walks, per namespace."""

    async def walk(client: Any, **arguments: Any) -> tuple[list[dict[str, Any]], str, str | None]:
        items: list[dict[str, Any]] = []
        wire, cursor = "", None
        for _ in range(500):
            page = await invoke(client, "memory_list", cursor=cursor, **arguments)
            if page.is_error:
                return items, wire, page.code
            assert page.structured["trust"] == "recorded-data"
            items += page.structured["items"]
            wire += page.wire
            cursor = page.structured["next_cursor"]
            if cursor is None:
                return items, wire, None
        raise AssertionError("memory_list never ended")

    async def check(client: Any, observer: Cell) -> list[str]:
        problems = []
        seen = {m.id: m for m in markers if visible(m.placed, observer)}
        hidden = [m for m in markers if m.id not in seen]
        items, wire, error = await walk(client, limit=50)
        listed = {item["id"]: item for item in items if item["id"] in {m.id for m in markers}}
        if error or set(listed) != set(seen):
            problems.append(
                f"full walk {error=} showed {_words(listed, markers)}, "
                f"expected {_words(seen, markers)}"
            )
        problems += [f"full walk leaks {w}" for w in leaks(wire, hidden)]
        for mid, item in listed.items():
            marker = seen.get(mid)
            if marker and (item["context"], item["title"], item["uri"], set(item)) != (
                marker.writer.context,
                marker.word,
                marker.uri,
                LIST_ITEM_KEYS,
            ):
                problems.append(f"item of {marker.word} is wrong: {item}")
        for namespace in ("workspace", "me"):
            prefix = f"memory://{namespace}/{KIND[namespace]}/proof-iso-{run_id}/"
            items, wire, error = await walk(client, prefix=prefix, limit=2)
            expected = {mid for mid, m in seen.items() if m.namespace == namespace}
            if namespace == "me" and not observer.principal.person:
                # A service has no personal namespace: memory://me/… is not_found.
                if error != "not_found":
                    problems.append(f"{prefix} answered {error=}, expected not_found")
                continue
            if error or {item["id"] for item in items} != expected:
                problems.append(f"{prefix} {error=} listed {len(items)}, expected {len(expected)}")
            problems += [f"{prefix} leaks {w}" for w in leaks(wire, hidden)]
        return problems

    no_problems(for_each_observer(stack, check))


def test_search_finds_exactly_the_visible_markers(stack: Any, markers: list[Marker]) -> None:
    """Hits, counts, excerpts and ``truncated`` for batched marker queries, in each
    namespace filter: a hidden marker never shows, not even as a count."""
    shuffled = sorted(markers, key=lambda m: m.word)  # the words are random: a fair mix
    batches = [shuffled[i : i + 8] for i in range(0, len(shuffled), 8)]
    wanted = {"all": {"me", "workspace"}, "workspace": {"workspace"}, "personal": {"me"}}

    async def check(client: Any, observer: Cell) -> list[str]:
        problems = []
        for batch in batches:
            query = " or ".join(m.word for m in batch)
            for namespace, namespaces in wanted.items():
                found = await invoke(client, "memory_search", query=query, namespace=namespace)
                expected = {
                    m.id: m
                    for m in batch
                    if visible(m.placed, observer) and m.namespace in namespaces
                }
                hidden = [m for m in markers if m.id not in expected]
                if found.is_error:
                    problems.append(f"search {namespace} failed: {found.structured}")
                    continue
                hits = found.structured["hits"]
                if [h["id"] for h in hits if h["id"] in expected] != [h["id"] for h in hits] or {
                    h["id"] for h in hits
                } != set(expected):
                    problems.append(
                        f"search {namespace} hit {_words({h['id'] for h in hits}, markers)}, "
                        f"expected {_words(expected, markers)}"
                    )
                if found.structured["truncated"] or found.structured["trust"] != "recorded-data":
                    problems.append(f"search {namespace} flags wrong: {found.structured}")
                for hit in hits:
                    marker = expected.get(hit["id"])
                    if marker and marker.word not in hit["excerpt"]:
                        problems.append(f"excerpt of {marker.word} lacks it: {hit['excerpt']!r}")
                problems += [f"search {namespace} leaks {w}" for w in leaks(found.wire, hidden)]
        return problems

    no_problems(for_each_observer(stack, check))


def test_reads_by_id_path_and_revision_answer_only_inside_the_view(
    stack: Any, markers: list[Marker]
) -> None:
    """memory_read by id and by path, and the revision resource: the content when
    visible; otherwise exactly the error a never-existing record gets."""

    async def check(client: Any, observer: Cell) -> list[str]:
        problems = []
        never = await invoke(client, "memory_read", uri=f"memory://record/{uuid.uuid4()}")
        assert never.code == "not_found"
        never_revision = await _resource_error(
            client, f"memory://record/{uuid.uuid4()}/revisions/1"
        )
        assert never_revision is not None
        for marker in markers:
            shown = visible(marker.placed, observer)
            for uri in (f"memory://record/{marker.id}", marker.uri):
                read = await invoke(client, "memory_read", uri=uri)
                if shown:
                    got = (read.is_error, read.structured.get("content"), read.structured.get("id"))
                    if got != (False, marker.body, marker.id) or (
                        read.structured["context"] != marker.writer.context
                        or read.structured["trust"] != "recorded-data"
                    ):
                        problems.append(f"read {uri} of visible {marker.word}: {read.structured}")
                elif read.structured != never.structured:
                    problems.append(f"read {uri} of hidden {marker.word}: {read.structured}")
            revision_uri = f"memory://record/{marker.id}/revisions/1"
            error = await _resource_error(client, revision_uri)
            if shown and error is not None:
                problems.append(f"revision of visible {marker.word} refused: {error}")
            elif shown:
                resource = await client.read_resource(revision_uri)
                if resource.contents[0].text != marker.body:
                    problems.append(f"revision of {marker.word} has other content")
            elif error is None or error[:2] != never_revision[:2]:
                problems.append(f"revision of hidden {marker.word}: {error}, not {never_revision}")
        return problems

    no_problems(for_each_observer(stack, check))


async def _resource_error(client: Any, uri: str) -> tuple[int, str, Any] | None:
    try:
        await client.read_resource(uri)
    except MCPError as caught:
        return caught.error.code, caught.error.message, caught.error.data
    return None


def test_a_cursor_works_only_for_the_caller_it_was_issued_to(
    stack: Any, markers: list[Marker]
) -> None:
    """An observer's cursor replayed by another observer (another principal, context
    or set of grants; another workspace) is invalid_argument; its own works."""

    async def first_page(client: Any, observer: Cell) -> list[str]:
        page = await invoke(client, "memory_list", limit=1)
        cursor = page.structured.get("next_cursor")
        assert cursor, f"{observer} sees a single record: the cursor proof needs two"
        cursors[observer] = cursor
        again = await invoke(client, "memory_list", limit=1, cursor=cursor)
        other_prefix = await invoke(
            client, "memory_list", limit=1, cursor=cursor, prefix="memory://workspace/"
        )
        problems = [] if not again.is_error else [f"own cursor refused: {again.structured}"]
        if other_prefix.code != "invalid_argument":
            problems.append(f"cursor accepted for another prefix: {other_prefix.structured}")
        return problems

    cursors: dict[Cell, str] = {}
    no_problems(for_each_observer(stack, first_page))

    async def replay(client: Any, observer: Cell) -> list[str]:
        problems = []
        for issuer in replayed_by(observer):
            replayed = await invoke(client, "memory_list", limit=1, cursor=cursors[issuer])
            # alice and alice-readonly are one caller; where their grants coincide
            # (globex: read only) the binding is the same, so the cursor is theirs.
            shared = cursor_binding(issuer) == cursor_binding(observer)
            if shared and replayed.is_error:
                problems.append(f"refused the equally bound cursor of {issuer}")
            if not shared and replayed.code != "invalid_argument":
                problems.append(f"accepted the cursor of {issuer}: {replayed.structured}")
        return problems

    def replayed_by(observer: Cell) -> list[Cell]:
        """Every observer that differs in exactly one of principal, workspace and
        context (the closest forgeries), and a generated sample of all the others."""
        rng = random.Random(str(observer))
        mine = (observer.token, observer.workspace, observer.context)
        others = [c for c in OBSERVERS if c != observer]
        near = [c for c in others if sum(a != b for a, b in zip(mine, _key(c))) == 1]
        far = [c for c in others if c not in near]
        return near + rng.sample(far, 6)

    no_problems(for_each_observer(stack, replay))


@pytest.mark.parametrize("seed", range(3))
def test_a_path_resolves_to_the_nearest_visible_copy(stack: Any, run_id: str, seed: int) -> None:
    """The same path written in a generated subset of acme's contexts: from each
    context the nearest copy in its ancestor set answers, and creating the path
    reveals nothing about copies in contexts the creator cannot see."""
    rng = random.Random(f"{run_id}-{seed}")
    copies = sorted(rng.sample(CONTEXTS, rng.randint(1, len(CONTEXTS))), key=_depth, reverse=True)
    uri = f"memory://workspace/notes/proof-iso-{run_id}/near-{seed}.md"
    made: dict[str, str] = {}

    async def write_copies() -> None:
        for context in copies:  # deepest first: an ancestor copy would make it a conflict
            async with mcp_client(stack, "alice", context=context) as alice:
                out = await invoke(
                    alice, "memory_write", uri=uri, content=f"in {context}", expected_revision=0
                )
                assert not out.is_error, (context, out.structured)
                made[context] = out.structured["id"]

    def nearest(context: str) -> str | None:
        return next((c for c in ancestors(context) if c in made), None)

    async def read(client: Any, observer: Cell) -> list[str]:
        got = await invoke(client, "memory_read", uri=uri)
        expected = nearest(observer.context)
        if expected is None and got.code != "not_found":
            return [f"{uri} answered {got.structured}, expected not_found"]
        if expected is not None and (got.is_error or got.structured["id"] != made[expected]):
            return [f"{uri} answered {got.structured}, expected the copy in {expected}"]
        return []

    async def create_everywhere() -> list[str]:
        problems = []
        for context in sorted(CONTEXTS, key=_depth, reverse=True):
            creator = next(
                (
                    c
                    for c in OBSERVERS
                    if c.workspace == "acme"
                    and c.context == context
                    and "write:shared" in grants(c)
                    and c.token != "alice"
                ),
                Cell("alice", "acme", context),
            )
            visible_copy = nearest(context)
            async with mcp_client(stack, creator.token, context=context) as client:
                out = await invoke(
                    client, "memory_write", uri=uri, content="new", expected_revision=0
                )
            if visible_copy is None and out.is_error:
                problems.append(f"{creator}: creating revealed a hidden copy: {out.structured}")
            elif visible_copy is None:
                made[context] = out.structured["id"]
            elif (
                out.code != "revision_conflict" or out.structured["error"]["current_revision"] != 1
            ):
                problems.append(
                    f"{creator}: create over the copy in {visible_copy}: {out.structured}"
                )
        return problems

    run(write_copies())
    acme = [cell for cell in OBSERVERS if cell.workspace == "acme"]
    no_problems(for_each_observer(stack, read, acme))
    no_problems(run(create_everywhere()))


def _key(cell: Cell) -> tuple[str, str, str]:
    return cell.token, cell.workspace, cell.context


def _depth(context: str) -> int:
    return len(ancestors(context))


def _words(ids: Iterable[str], markers: list[Marker]) -> list[str]:
    by_id = {m.id: m.word for m in markers}
    return sorted(by_id.get(i, i) for i in ids)
