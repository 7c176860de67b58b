"""Isolation matrix (docs/contract.md §2, §4, §5, §7): nothing outside a caller's view is
discoverable, on any read path.

Generated, not hand-picked: a marker record (a random word no text contains) is
written in every cell (principal × workspace × context × namespace the principal
can write), then every (principal, workspace, context) observer walks every read
path, and each marker must be visible exactly where the independent model in
``model.py`` says. Reads use the official MCP client over HTTP, half of the
observers on each protocol generation.

The lifecycle's read paths too: a pinned and a plain marker in every cell for the
briefing (``memory_brief``'s pinned and recent sections, the ``memory-briefing``
prompt), reads ``as_of`` a time, ``memory_scopes``; and records that have expired
(kept from the sweeper's purge while the proofs run, then purged) are in nobody's
view on any of them.

The reads by id, path, revision and as of a time are in ``test_isolation_reads.py``
(the longest part, in a module of its own so the two test workers share the matrix);
the markers, the model's cells and the helpers in ``isolation.py``.
"""

from __future__ import annotations

import json
import random
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.proof.harness import (
    RAW_PARALLEL,
    Inspector,
    assert_each_commit_published_once,
    invoke,
    mcp_client,
    no_problems,
    post,
    run,
    tool_call,
)
from tests.proof.isolation import (
    BRIEF_BYTES,
    BRIEF_SECTION_ITEMS,
    KIND,
    LIST_ITEM_KEYS,
    OBSERVERS,
    Lifecycle,
    Marker,
    depth,
    for_each_observer,
    key_of,
    leaks,
    words,
)
from tests.proof.model import (
    CONTEXTS,
    Cell,
    all_cells,
    ancestors,
    cursor_binding,
    endpoint_status,
    grants,
)

pytestmark = pytest.mark.slow  # a generated matrix over the stack: seconds per test


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
    stack: Any, markers: list[Marker], lifecycle: Lifecycle, run_id: str
) -> None:
    """A full walk (budgeted pages) and small-page prefix walks, per namespace; an
    expired record in no one's, its pin and expiry shown as written."""
    everything = [*markers, *lifecycle.every]

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
        seen = {m.id: m for m in everything if m.seen_by(observer)}
        hidden = [m for m in everything if m.id not in seen]
        items, wire, error = await walk(client, limit=50)
        listed = {item["id"]: item for item in items if item["id"] in {m.id for m in everything}}
        if error or set(listed) != set(seen):
            problems.append(
                f"full walk {error=} showed {words(listed, everything)}, "
                f"expected {words(seen, everything)}"
            )
        problems += [f"full walk leaks {w}" for w in leaks(wire, hidden)]
        for mid, item in listed.items():
            marker = seen.get(mid)
            if marker and (
                item["context"],
                item["title"],
                item["uri"],
                item["pinned"],
                item["expires_at"],
                set(item),
            ) != (
                marker.writer.context,
                marker.word,
                marker.uri,
                marker.pinned,
                None,
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


def test_search_finds_exactly_the_visible_markers(
    stack: Any, markers: list[Marker], lifecycle: Lifecycle
) -> None:
    """Hits, counts, excerpts and ``truncated`` for batched marker queries, in each
    namespace filter: a hidden marker never shows, not even as a count; an expired
    one to no one."""
    everything = [*markers, *lifecycle.every]
    shuffled = sorted(everything, key=lambda m: m.word)  # the words are random: a fair mix
    batches = [shuffled[i : i + 8] for i in range(0, len(shuffled), 8)]
    wanted = {"all": {"me", "workspace"}, "workspace": {"workspace"}, "personal": {"me"}}

    async def check(client: Any, observer: Cell) -> list[str]:
        problems = []
        for batch in batches:
            query = " or ".join(m.word for m in batch)
            for namespace, namespaces in wanted.items():
                found = await invoke(client, "memory_search", query=query, namespace=namespace)
                expected = {
                    m.id: m for m in batch if m.seen_by(observer) and m.namespace in namespaces
                }
                hidden = [m for m in everything if m.id not in expected]
                if found.is_error:
                    problems.append(f"search {namespace} failed: {found.structured}")
                    continue
                hits = found.structured["hits"]
                if [h["id"] for h in hits if h["id"] in expected] != [h["id"] for h in hits] or {
                    h["id"] for h in hits
                } != set(expected):
                    problems.append(
                        f"search {namespace} hit {words({h['id'] for h in hits}, everything)}, "
                        f"expected {words(expected, everything)}"
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


def test_the_briefing_shows_exactly_the_visible_pinned_and_recent_markers(
    stack: Any, markers: list[Marker], lifecycle: Lifecycle
) -> None:
    """memory_brief (every observer may call it, read-only tokens too): its pinned
    section holds exactly the pinned markers in view, with their content, and its
    recent section (since the briefing's markers were written) exactly the plain ones;
    nothing outside the view shows anywhere in it, no expired record, and with the
    default budget and no ``since`` neither. A visible marker may be missing only when
    its section is full or the budget cut it (``truncated``)."""
    everything = [*markers, *lifecycle.every]
    mine = {m.id for m in everything}

    async def check(client: Any, observer: Cell) -> list[str]:
        problems = []
        seen = {m.id: m for m in everything if m.seen_by(observer)}
        hidden = [m for m in everything if m.id not in seen]
        brief = await invoke(client, "memory_brief", max_bytes=BRIEF_BYTES, since=lifecycle.since)
        if brief.is_error or brief.structured["trust"] != "recorded-data":
            return [f"memory_brief: {brief.structured}"]
        problems += [f"memory_brief leaks {w}" for w in leaks(brief.wire, hidden)]
        for section, wanted in (("pinned", lifecycle.pinned), ("recent", lifecycle.recent)):
            items = brief.structured[section]
            shown = {item["id"] for item in items if item["id"] in mine}
            expected = {m.id for m in wanted if m.id in seen}
            if shown - expected:
                problems.append(f"{section} shows {words(shown - expected, everything)}")
            excused = len(items) >= BRIEF_SECTION_ITEMS or brief.structured["truncated"]
            if expected - shown and not excused:
                problems.append(f"{section} lacks {words(expected - shown, everything)}")
        for item in brief.structured["pinned"]:
            marker = seen.get(item["id"])
            if marker and not item["truncated"] and item["content"] != marker.body:
                problems.append(f"pinned {marker.word} has other content: {item['content']!r}")
        default = await invoke(client, "memory_brief")
        if default.is_error:
            problems.append(f"memory_brief with its defaults: {default.structured}")
        problems += [f"default memory_brief leaks {w}" for w in leaks(default.wire, hidden)]
        return problems

    no_problems(for_each_observer(stack, check))


def test_the_briefing_prompt_shows_nothing_outside_the_view(
    stack: Any, markers: list[Marker], lifecycle: Lifecycle
) -> None:
    """prompts/list leads with memory-briefing for every observer; prompts/get gives
    the briefing as recorded data, within its own budget: the same records as
    memory_brief (each section a prefix of the tool's), nothing outside the view."""
    everything = [*markers, *lifecycle.every]

    async def check(client: Any, observer: Cell) -> list[str]:
        problems = []
        hidden = [m for m in everything if not m.seen_by(observer)]
        listed = await client.list_prompts()
        if not listed.prompts or listed.prompts[0].name != "memory-briefing":
            problems.append(f"prompts/list: {[p.name for p in listed.prompts][:3]}")
        got = await client.get_prompt("memory-briefing", {"since": lifecycle.since})
        (message,) = got.messages
        text = message.content.text
        briefing = json.loads(text)
        if (message.content.meta or {}).get("trust") != "recorded-data":
            problems.append(f"the briefing is not labelled recorded data: {message.content.meta}")
        problems += [f"the prompt leaks {w}" for w in leaks(text, hidden)]
        full = await invoke(client, "memory_brief", max_bytes=BRIEF_BYTES, since=lifecycle.since)
        for section in ("pinned", "recent"):
            ids = [item["id"] for item in briefing[section]]
            whole = [item["id"] for item in full.structured[section]]
            if ids != whole[: len(ids)]:
                problems.append(f"prompt {section} is not memory_brief's: {ids} vs {whole}")
        return problems

    no_problems(for_each_observer(stack, check))


def test_memory_scopes_says_what_the_model_says(
    stack: Any, markers: list[Marker], lifecycle: Lifecycle
) -> None:
    """Who the caller is, its grants, the listening context and the contexts it hears,
    exactly as the model has them, for every observer (read-only tokens too); no
    record's word or id in it."""
    everything = [*markers, *lifecycle.every]

    async def check(client: Any, observer: Cell) -> list[str]:
        got = await invoke(client, "memory_scopes")
        person = observer.principal.person
        expected = {
            "workspace": observer.workspace,
            "principal": {
                "handle": observer.principal.identity,
                "kind": "person" if person else "service",
            },
            "grants": sorted(grants(observer)),
            "context": observer.context,
            "visible_contexts": list(ancestors(observer.context)),
            "personal_namespace": person,
        }
        problems = [] if got.structured == expected else [f"memory_scopes: {got.structured}"]
        return problems + [f"memory_scopes leaks {w}" for w in leaks(got.wire, everything)]

    no_problems(for_each_observer(stack, check))


def test_expired_records_were_expired_not_purged_and_are_then_purged_once(
    inspector: Inspector, lifecycle: Lifecycle
) -> None:
    """The expired records the proofs above found in no one's view were still in the
    table (the proofs tested the database's predicate, not the sweeper's purge);
    released, the purge leaves each one tombstone ``expire``, no content in any
    revision, and one audit event per revision."""
    ids = [m.id for m in lifecycle.expired]
    assert inspector.one(
        "SELECT count(*) FROM memory.memories WHERE id = ANY(%s::uuid[]) AND expires_at < now()",
        [ids],
    ) == len(ids)
    lifecycle.release()
    inspector.purge_until_gone(ids)
    history = inspector.history(ids)
    for mid in ids:
        assert [(e["revision"], e["operation"]) for e in history[mid]] == [
            (1, "create"),
            (2, "expire"),
        ], history[mid]
        assert all(e["body"] is None for e in history[mid])
        assert history[mid][1]["writer"] == str(uuid.UUID(int=0))  # the server itself
    assert inspector.outbox(ids) == Counter(
        (mid, e["revision"], e["operation"]) for mid in ids for e in history[mid]
    )
    assert_each_commit_published_once(inspector, ids)


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
        near = [c for c in others if sum(a != b for a, b in zip(mine, key_of(c))) == 1]
        far = [c for c in others if c not in near]
        return near + rng.sample(far, 6)

    no_problems(for_each_observer(stack, replay))


@pytest.mark.parametrize("seed", range(3))
def test_a_path_resolves_to_the_nearest_visible_copy(stack: Any, run_id: str, seed: int) -> None:
    """The same path written in a generated subset of acme's contexts: from each
    context the nearest copy in its ancestor set answers, and creating the path
    reveals nothing about copies in contexts the creator cannot see."""
    rng = random.Random(f"{run_id}-{seed}")
    copies = sorted(rng.sample(CONTEXTS, rng.randint(1, len(CONTEXTS))), key=depth, reverse=True)
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
        for context in sorted(CONTEXTS, key=depth, reverse=True):
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
