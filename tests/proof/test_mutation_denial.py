"""Mutation denial (docs/contract.md §2, §5): every mutation tool, called by every principal
that lacks the grant, with valid ids and current revisions, is refused and leaves
the database byte-for-byte unchanged.

The attempts are generated from the independent model: every token × workspace ×
target record × mutation, keeping exactly the combinations the model says must be
refused. Admitted cells call through the official MCP client; cells the endpoint
refuses (not a member, memory off, context unavailable) are sent as raw HTTP.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.proof.harness import (
    RAW_PARALLEL,
    Inspector,
    dump_difference,
    invoke,
    mcp_client,
    no_problems,
    post,
    run,
    tool_call,
)
from tests.proof.model import (
    TOKENS,
    WORKSPACES,
    Cell,
    Placed,
    endpoint_status,
    grants,
    may_change,
    may_delete,
    visible,
)

pytestmark = pytest.mark.slow  # every refused mutation by every principal: seconds per test

KIND = {"me": "memories", "workspace": "notes"}
# (name, writer, workspace, context, namespace): records the attempts aim at.
TARGETS = (
    ("shared", "alice", "acme", "workspace", "workspace"),
    ("shared-dm", "alice", "acme", "dm:alice-release-bot", "workspace"),
    ("shared-leads", "alice", "acme", "channel:leads", "workspace"),
    ("alice-own", "alice", "acme", "workspace", "me"),
    ("bob-own", "bob", "acme", "channel:general", "me"),
    ("globex-shared", "carol", "globex", "workspace", "workspace"),
    ("carol-own", "carol", "globex", "workspace", "me"),
)
TOOLS = ("memory_write", "memory_delete", "memory_remember", "memory_move")


@dataclass(frozen=True)
class Target:
    name: str
    writer: str
    workspace: str
    context: str
    namespace: str
    uri: str
    id: str

    @property
    def placed(self) -> Placed:
        return Placed(self.workspace, self.context, self.namespace, self.writer_identity)

    @property
    def writer_identity(self) -> str | None:
        return self.writer if self.namespace == "me" else None


@dataclass(frozen=True)
class Attempt:
    cell: Cell
    tool: str
    arguments: dict[str, Any]
    expected: str | int  # a tool error code, or the HTTP status of a refused request
    why: str

    def __str__(self) -> str:
        return f"{self.cell} {self.tool}({self.why})"


@pytest.fixture(scope="module")
def targets(stack: Any, run_id: str) -> list[Target]:
    async def make(name: str, writer: str, workspace: str, context: str, ns: str) -> Target:
        uri = f"memory://{ns}/{KIND[ns]}/proof-deny-{run_id}/{name}.md"
        async with mcp_client(stack, writer, workspace=workspace, context=context) as client:
            made = await invoke(
                client, "memory_write", uri=uri, content=f"# {name}\nstable", expected_revision=0
            )
        assert not made.is_error, made.structured
        return Target(name, writer, workspace, context, ns, uri, made.structured["id"])

    async def make_all() -> list[Target]:
        return list(await asyncio.gather(*(make(*plan) for plan in TARGETS)))

    return run(make_all())


def attempts(targets: list[Target], run_id: str) -> Iterator[Attempt]:
    """Every mutation the model says this cell may not make, with valid arguments."""
    for token in TOKENS:
        for workspace in WORKSPACES:
            for target in targets:
                # Listen where the target lives, so that only grants stand in the way.
                context = target.context if target.workspace == workspace else "workspace"
                cell = Cell(token, workspace, context)
                for tool, arguments, kind in _calls(target, run_id):
                    expected = _expected(cell, target, kind)
                    if expected is not None:
                        yield Attempt(cell, tool, arguments, expected, f"{kind} {target.name}")


def _calls(target: Target, run_id: str) -> list[tuple[str, dict[str, Any], str]]:
    by_id = f"memory://record/{target.id}"
    fresh = f"memory://{target.namespace}/{KIND[target.namespace]}/proof-deny-{run_id}/new.md"
    moved = f"{target.uri[:-3]}-moved.md"
    key = f"deny-{uuid.uuid4().hex}"
    later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    # The lifecycle's arguments on the same changes: a pin, an expiry set or removed,
    # a correction of the target's own line ("stable"), each its own key.
    pin = {"content": "overwritten", "expected_revision": 1, "pinned": True}
    expire = {"content": "overwritten", "expected_revision": 1, "expires_at": later}
    keep = {"content": "overwritten", "expected_revision": 1, "expires_at": None, "pinned": False}
    return [
        ("memory_write", {"uri": by_id, "content": "overwritten", "expected_revision": 1}, "id"),
        (
            "memory_write",
            {"uri": target.uri, "content": "overwritten", "expected_revision": 1},
            "path",
        ),
        ("memory_write", {"uri": fresh, "content": "created", "expected_revision": 0}, "create"),
        ("memory_remember", {"uri": target.uri, "fact": "granted", "idempotency_key": key}, "path"),
        ("memory_move", {"uri": by_id, "new_uri": moved, "expected_revision": 1}, "id"),
        ("memory_delete", {"uri": by_id, "expected_revision": 1}, "delete"),
        ("memory_write", {"uri": by_id, **pin}, "id"),
        ("memory_write", {"uri": target.uri, **expire}, "path"),
        ("memory_write", {"uri": by_id, **keep}, "id"),
        (
            "memory_write",
            {"uri": fresh, "content": "created", "expected_revision": 0, "pinned": True,
             "expires_at": later},
            "create",
        ),
        (
            "memory_remember",
            {"uri": target.uri, "fact": "granted", "supersedes": "stable",
             "idempotency_key": f"{key}-s"},
            "path",
        ),
        (
            "memory_remember",
            {"uri": target.uri, "fact": "granted", "expires_at": later,
             "idempotency_key": f"{key}-e"},
            "path",
        ),
    ]  # fmt: skip


def _expected(cell: Cell, target: Target, kind: str) -> str | int | None:
    """The refusal the contract requires, or None when the model allows the call."""
    status = endpoint_status(cell)
    if status != 200:
        return status
    ns = target.namespace
    if kind == "create":
        if ns == "me" and not cell.principal.person:
            return "not_found"  # a service has no personal namespace
        return None if may_change(cell, ns) else "permission_denied"
    if kind == "path":
        # memory://me/… names the caller's own namespace: only the owner's path is the target.
        names_target = ns == "workspace" or target.writer_identity == cell.principal.identity
        if not names_target or target.workspace != cell.workspace:
            return None  # that path is another (absent) record: the "create" case covers it
        if ns == "me" and not cell.principal.person:
            return "not_found"
    if target.workspace != cell.workspace or not visible(target.placed, cell):
        return "not_found"
    allowed = may_delete(cell, ns) if kind == "delete" else may_change(cell, ns)
    return None if allowed else "permission_denied"


def test_every_refused_mutation_changes_nothing(
    stack: Any, inspector: Inspector, targets: list[Target], run_id: str
) -> None:
    planned = list(attempts(targets, run_id))
    # The generator must cover every principal lacking a grant and every tool.
    assert {a.cell.token for a in planned if a.expected == "permission_denied"} == {
        "alice",
        "alice-readonly",
        "bob",
        "ci-bot",
        "release-bot",
    }  # alice: in globex she only reads
    assert {a.tool for a in planned if a.expected == "permission_denied"} == set(TOOLS)
    assert {a.expected for a in planned} == {"permission_denied", "not_found", 403, 404}

    inspector.settle_audit()  # nothing pending, so no sweep can change a row meanwhile
    before = inspector.dump()
    problems = _attempt_all(stack, planned)
    after = inspector.dump()
    no_problems(problems)
    assert dump_difference(before, after) == {}, "a refused call changed the database"
    assert before == after


def _attempt_all(stack: Any, planned: list[Attempt]) -> list[str]:
    admitted = [a for a in planned if isinstance(a.expected, str)]
    # The endpoint refuses these before it reads the body, so one attempt per cell,
    # tool and kind of address stands for every target.
    refused = list(
        {
            (a.cell, a.tool, a.why.split()[0]): a for a in planned if isinstance(a.expected, int)
        }.values()
    )

    def refuse(attempt: Attempt) -> str | None:
        response = post(
            stack,
            attempt.cell.token,
            tool_call(attempt.tool, **attempt.arguments),
            workspace=attempt.cell.workspace,
            context=attempt.cell.context,
        )
        body = b"" if attempt.expected == 404 else b'{"error":"context_unavailable"}'
        if (response.status_code, response.content) != (attempt.expected, body):
            return f"{attempt}: HTTP {response.status_code} {response.content[:80]!r}"
        return None

    with ThreadPoolExecutor(RAW_PARALLEL) as pool:
        problems = [p for p in pool.map(refuse, refused) if p]

    async def per_cell(cell: Cell, mine: list[Attempt]) -> list[str]:
        out = []
        async with mcp_client(
            stack, cell.token, workspace=cell.workspace, context=cell.context
        ) as c:
            listed = {t.name for t in (await c.list_tools()).tools}
            for attempt in mine:
                result = await invoke(c, attempt.tool, **attempt.arguments)
                if result.code != attempt.expected:
                    out.append(f"{attempt}: expected {attempt.expected}, got {result.structured}")
                if (
                    attempt.expected == "permission_denied"
                    and attempt.tool in listed
                    and not (_tool_visible(cell, attempt.tool))
                ):
                    out.append(f"{attempt}: tools/list offers a tool the caller cannot use")
        return out

    cells: dict[Cell, list[Attempt]] = {}
    for attempt in admitted:
        cells.setdefault(attempt.cell, []).append(attempt)

    async def everything() -> list[list[str]]:
        return list(await asyncio.gather(*(per_cell(c, mine) for c, mine in cells.items())))

    return problems + [p for found in run(everything()) for p in found]


def _tool_visible(cell: Cell, tool: str) -> bool:
    """Courtesy listing: a write tool needs some write grant, delete also needs delete."""
    effective = grants(cell)
    writes = bool({"write:personal", "write:shared"} & effective)
    return writes and ("delete" in effective if tool == "memory_delete" else True)


def test_the_refused_arguments_were_valid(stack: Any, targets: list[Target], run_id: str) -> None:
    """Positive control: the same kinds of call succeed for a principal holding the
    grants, so the refusals above were about grants and visibility, not arguments."""
    shared = next(t for t in targets if t.name == "shared")
    own = next(t for t in targets if t.name == "alice-own")
    by_id = f"memory://record/{shared.id}"
    key = f"allow-{uuid.uuid4().hex}"
    later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    fresh = f"memory://me/memories/proof-deny-{run_id}/allowed.md"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("memory_write", {"uri": by_id, "content": "replaced", "expected_revision": 1}),
        ("memory_remember", {"uri": shared.uri, "fact": "granted", "idempotency_key": key}),
        (
            "memory_move",
            {"uri": by_id, "new_uri": shared.uri[:-3] + "-moved.md", "expected_revision": 3},
        ),
        ("memory_write", {"uri": shared.uri, "content": "created", "expected_revision": 0}),
        ("memory_delete", {"uri": by_id, "expected_revision": 4}),
        # The lifecycle's arguments, on alice's own record: pin it with an expiry,
        # correct its line, remove the expiry again; create one pinned.
        (
            "memory_write",
            {"uri": own.uri, "content": f"# {own.name}\nstable", "expected_revision": 1,
             "pinned": True, "expires_at": later},
        ),
        (
            "memory_remember",
            {"uri": own.uri, "fact": "granted", "supersedes": "stable",
             "idempotency_key": f"{key}-s"},
        ),
        (
            "memory_remember",
            {"uri": own.uri, "fact": "again", "expires_at": None, "idempotency_key": f"{key}-e"},
        ),
        ("memory_write", {"uri": fresh, "content": "x", "expected_revision": 0, "pinned": True}),
    ]  # fmt: skip

    async def scenario() -> list[dict[str, Any]]:
        async with mcp_client(stack, "alice") as alice:
            outcomes = [(await invoke(alice, tool, **args)).structured for tool, args in calls]
            outcomes.append((await invoke(alice, "memory_read", uri=own.uri)).structured)
            return outcomes

    *outcomes, read = run(scenario())
    assert [o.get("error") for o in outcomes] == [None] * len(calls), outcomes
    assert outcomes[6]["superseded"] is True
    assert (read["content"], read["pinned"], read["expires_at"]) == (
        f"# {own.name}\n- granted\n- again\n",
        True,
        None,
    )


def test_read_only_tokens_brief_and_scope_without_a_change(
    stack: Any, inspector: Inspector, targets: list[Target]
) -> None:
    """A read-only token is offered memory_brief and memory_scopes (and no write tool),
    may call them and the memory-briefing prompt, and nothing changes."""
    inspector.settle_audit()
    before = inspector.dump()

    async def scenario(token: str, context: str) -> None:
        async with mcp_client(stack, token, context=context) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert {"memory_brief", "memory_scopes"} <= listed, listed
            assert not listed & set(TOOLS), listed
            brief = await invoke(client, "memory_brief")
            scopes = await invoke(client, "memory_scopes")
            assert not brief.is_error and not scopes.is_error, (brief, scopes)
            assert scopes.structured["grants"] == ["read"]
            prompt = await client.get_prompt("memory-briefing")
            assert prompt.messages[0].content.text

    for token in ("alice-readonly", "ci-bot"):
        for context in ("workspace", "channel:general/thread:t1"):
            run(scenario(token, context))
    run(scenario("alice-readonly", "dm:alice-release-bot"))
    assert dump_difference(before, inspector.dump()) == {}
