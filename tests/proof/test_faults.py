"""Faults (docs/contract.md §5, §6): the database connection killed mid-transaction, the
database unreachable, a statement timeout, DynamoDB failing and EventBridge failing.

Each must give a clear error (a tool error ``unavailable`` / ``timeout``, or the
endpoint's ``503 {"error":"unavailable"}`` before any tool runs) or succeed on a
degraded path; never a 5xx otherwise, never a partial write, never an empty result
that looks like "no memories"; and after recovery the sweeper delivers every audit
event, each commit under exactly one event id (delivery is at least once).
"""

from __future__ import annotations

import asyncio
import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
from mcp.shared.exceptions import MCPError
from memory_local.aws import AUDIT_TAP_RULE, IDEMPOTENCY_TABLE
from memory_local.gateway import ApiGateway
from memory_server.data.pool import Database
from memory_server.edge.service import McpService, Settings

from tests.proof.harness import (
    Inspector,
    Result,
    assert_each_commit_published_once,
    invoke,
    marker_word,
    mcp_client,
    no_problems,
    post,
    run,
    runtime_backends_sql,
    tool_call,
)

pytestmark = pytest.mark.slow  # killed connections, timeouts, failing services

DEADLINE_S = 3.0  # docs/contract.md §6: the default per-call deadline
SLACK_S = 1.0  # scheduling on a loaded 2-core machine
CLEAR = {"unavailable", "timeout"}
UNAVAILABLE_503 = (503, b'{"error":"unavailable"}')


@dataclass
class Outcome:
    """One call as its client saw it: a result, or an HTTP-level refusal."""

    result: Result | None = None
    http: tuple[int, bytes] | None = None
    exception: str | None = None
    tool: str = ""
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.result is not None and not self.result.is_error

    @property
    def clear_failure(self) -> bool:
        if self.result is not None:
            return self.result.code in CLEAR
        return self.http == UNAVAILABLE_503

    def __str__(self) -> str:
        if self.result is not None:
            return str(self.result.structured)[:200]
        return f"HTTP {self.http} {self.exception}"


async def attempt(
    client: Any, responses: list[tuple[int, bytes]], log: list[Outcome], tool: str, **args: Any
) -> Outcome:
    """A tool call that may fail below the tool layer; keep what the wire said."""
    before, started = len(responses), time.monotonic()
    try:
        outcome = Outcome(result=await invoke(client, tool, **args))
    except MCPError as error:
        http = responses[-1] if len(responses) > before else None
        outcome = Outcome(http=http, exception=f"{error.error.code} {error.error.message}")
    except Exception as error:  # a transport failure: never a clear answer
        outcome = Outcome(exception=repr(error)[:300])
    outcome.tool, outcome.elapsed_s = tool, time.monotonic() - started
    log.append(outcome)
    return outcome


def history_problems(inspector: Inspector, ids: list[str]) -> list[str]:
    """Gapless history, current row = last revision, one outbox row per commit."""
    problems = []
    history = inspector.history(ids)
    current = {
        mid: (rev, body)
        for mid, rev, body in inspector.owner.execute(
            "SELECT id::text, revision, body FROM memory.memories WHERE id = ANY(%s::uuid[])",
            (ids,),
        ).fetchall()
    }
    commits = Counter()
    for mid in ids:
        entries = history.get(mid, [])
        if [e["revision"] for e in entries] != list(range(1, len(entries) + 1)):
            problems.append(f"{mid}: history has gaps {[e['revision'] for e in entries]}")
        last = entries[-1]
        if last["operation"] != "delete" and current.get(mid) != (last["revision"], last["body"]):
            problems.append(f"{mid}: current row {current.get(mid)} is not revision {last}")
        commits.update((mid, e["revision"], e["operation"]) for e in entries)
    if inspector.outbox(ids) != commits:
        problems.append(f"outbox differs from history: {inspector.outbox(ids) - commits}")
    return problems


# -- the connection killed mid-transaction ---------------------------------------------

STORM_S = 3.0
STORM_CLIENTS = 12


@dataclass
class Storm:
    folder: str
    kills: Counter[str] = field(default_factory=Counter)
    recovered_s: float = 0.0
    writes: dict[str, Outcome] = field(default_factory=dict)  # content -> outcome
    remembers: dict[str, tuple[dict[str, Any], Outcome]] = field(default_factory=dict)
    calls: list[Outcome] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)


@contextmanager
def killing(cluster: Any) -> Iterator[Counter[str]]:
    """Terminates runtime-role backends of the stack's database while the block runs.

    Every 50 ms those inside a transaction (``active``, ``idle in transaction``: killed
    mid-transaction); every half second the idle ones too (the pool must never hand
    out a dead connection). Counts kills by the state the backend was in.
    """
    kills: Counter[str] = Counter()
    stop = threading.Event()

    def loop() -> None:
        tick = 0
        with psycopg.connect(cluster.admin_url, autocommit=True) as admin:
            while not stop.wait(0.05):
                tick += 1
                states = ["active", "idle in transaction"] + (["idle"] if tick % 10 == 0 else [])
                rows = admin.execute(
                    "SELECT b.state, pg_terminate_backend(b.pid) FROM pg_stat_activity b "
                    f"WHERE b.pid IN ({runtime_backends_sql()}) AND b.state = ANY(%s)",
                    (states,),
                ).fetchall()
                kills.update(state for state, done in rows if done)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield kills
    finally:
        stop.set()
        thread.join()


def wait_until_serving(stack: Any, limit_s: float = 30.0) -> float:
    """Seconds until the endpoint answers a tool call again after a fault."""
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        if post(stack, "alice", tool_call("memory_list", limit=1)).status_code == 200:
            return time.monotonic() - started
        time.sleep(0.1)
    raise AssertionError(f"the service did not recover within {limit_s}s of the fault ending")


@pytest.fixture(scope="module")
def storm(stack: Any, inspector: Inspector, cluster: Any, run_id: str) -> Storm:
    """12 clients writing, remembering, listing and searching for 4 s while backends
    die; then the time until the endpoint serves again."""
    folder = f"proof-kill-{run_id}"
    word = marker_word(random.Random(run_id), "kill")
    records = [f"memory://workspace/notes/{folder}/r{c}.md" for c in range(STORM_CLIENTS)]
    storm = Storm(folder=folder)
    inspector.settle_audit()

    async def seed() -> None:
        async with mcp_client(stack, "alice") as alice:
            for uri in records:
                made = await invoke(
                    alice, "memory_write", uri=uri, content=f"{word} seed", expected_revision=0
                )
                assert not made.is_error, made.structured

    async def client(c: int, me: Any, responses: list[tuple[int, bytes]], until: float) -> None:
        rng = random.Random(f"{run_id}-{c}")
        n = 0
        while time.monotonic() < until:
            n += 1
            op = rng.choice(["write", "remember", "list", "search"])
            outcome = await one(me, responses, op, c, n)
            kind = "ok" if outcome.ok else ("clear" if outcome.clear_failure else "other")
            storm.outcomes[f"{op}:{kind}"] += 1
            if kind == "other":
                storm.problems.append(f"client {c} {op}: {outcome}")

    async def one(me: Any, responses: list[tuple[int, bytes]], op: str, c: int, n: int) -> Outcome:
        if op == "write":
            current = await attempt(me, responses, storm.calls, "memory_read", uri=records[c])
            if not current.ok:
                return current
            assert current.result is not None
            content = f"{word} write {c}-{n}"
            outcome = await attempt(
                me,
                responses,
                storm.calls,
                "memory_write",
                uri=f"memory://record/{current.result.structured['id']}",
                content=content,
                expected_revision=current.result.structured["revision"],
            )
            storm.writes[content] = outcome
            return outcome
        if op == "remember":
            args = {
                "uri": f"memory://workspace/memories/{folder}/facts-{c}.md",
                "fact": f"fact {c}-{n}",
                "idempotency_key": f"kill-{run_id}-{c}-{n}",
            }
            outcome = await attempt(me, responses, storm.calls, "memory_remember", **args)
            storm.remembers[args["fact"]] = (args, outcome)
            return outcome
        if op == "list":
            outcome = await attempt(
                me,
                responses,
                storm.calls,
                "memory_list",
                prefix=f"memory://workspace/notes/{folder}/",
                limit=50,
            )
            if (
                outcome.ok
                and outcome.result
                and len(outcome.result.structured["items"]) != len(records)
            ):
                storm.problems.append(
                    f"list answered {len(outcome.result.structured['items'])} items"
                )
            return outcome
        outcome = await attempt(me, responses, storm.calls, "memory_search", query=word)
        if outcome.ok and outcome.result and len(outcome.result.structured["hits"]) != 8:
            storm.problems.append(f"search answered {outcome.result.structured}")  # 12 match
        return outcome

    async def everyone() -> Counter[str]:
        async with AsyncExitStack() as clients:
            # Connected before the storm: the proof is about tool calls, not handshakes.
            logs: list[list[tuple[int, bytes]]] = [[] for _ in range(STORM_CLIENTS)]
            connected = [
                await clients.enter_async_context(mcp_client(stack, "alice", responses=log))
                for log in logs
            ]
            with killing(cluster) as kills:
                until = time.monotonic() + STORM_S
                await asyncio.gather(
                    *(client(c, connected[c], logs[c], until) for c in range(STORM_CLIENTS))
                )
            return kills

    run(seed())
    storm.kills = run(everyone())
    storm.recovered_s = wait_until_serving(stack)
    print(f"kill storm: {storm.kills=} {storm.outcomes=} {storm.recovered_s=:.1f}")
    return storm


def test_killed_connections_give_clear_answers(storm: Storm) -> None:
    """Every call succeeded or failed clearly (tool error unavailable/timeout, or the
    endpoint's 503 unavailable): no 5xx, no transport failure, and no list or search
    that came back short, looking like "no memories"."""
    no_problems(storm.problems)
    kills = storm.kills
    assert kills["active"] + kills["idle in transaction"] > 0, kills  # really mid-transaction
    assert sum(v for k, v in storm.outcomes.items() if k.endswith(":clear")) > 0  # faults hit


def test_killed_connections_leave_no_partial_write(storm: Storm, inspector: Inspector) -> None:
    ids = _folder_ids(inspector, storm.folder)
    no_problems(history_problems(inspector, ids))
    _writes_are_all_or_nothing(inspector, ids, storm)


def test_killed_connections_never_merge_a_fact_twice(
    stack: Any, storm: Storm, inspector: Inspector
) -> None:
    _remembers_are_exactly_once(stack, inspector, storm, storm.folder)


def test_killed_connections_lose_no_audit_event(storm: Storm, inspector: Inspector) -> None:
    assert_each_commit_published_once(inspector, _folder_ids(inspector, storm.folder))


def test_killed_connections_are_answered_within_the_deadline(storm: Storm) -> None:
    late = [
        f"{o.tool} answered {o} after {o.elapsed_s:.1f}s"
        for o in storm.calls
        if o.elapsed_s > DEADLINE_S + SLACK_S
    ]
    no_problems(late)


def _folder_ids(inspector: Inspector, folder: str) -> list[str]:
    rows = inspector.owner.execute(
        "SELECT DISTINCT memory_id::text FROM memory.revisions WHERE path LIKE %s",
        (f"{folder}/%",),
    ).fetchall()
    return [mid for (mid,) in rows]


def _writes_are_all_or_nothing(inspector: Inspector, ids: list[str], storm: Storm) -> None:
    """Every acknowledged write committed; a write whose client saw anything but
    ``unavailable`` (the one ambiguous answer: the connection died around COMMIT)
    did not."""
    committed = {
        e["body"]: (mid, e["revision"])
        for mid, entries in inspector.history(ids).items()
        for e in entries
        if e["operation"] == "replace"
    }
    problems = []
    for content, outcome in storm.writes.items():
        if outcome.ok:
            assert outcome.result is not None
            got = (outcome.result.structured["id"], outcome.result.structured["revision"])
            if committed.get(content) != got:
                problems.append(f"acknowledged write {content!r} is not revision {got}")
        elif content in committed and not (
            outcome.result is not None and outcome.result.code == "unavailable"
        ):
            problems.append(f"write {content!r} answered {outcome} yet committed")
    unknown = set(committed) - set(storm.writes)
    no_problems(problems + [f"a commit nobody sent: {body!r}" for body in unknown])


def _remembers_are_exactly_once(
    stack: Any, inspector: Inspector, storm: Storm, folder: str
) -> None:
    """Retry every remember with its key after the storm: acknowledged ones replay,
    the others apply now or replay a commit the client never heard of; either way each
    fact is in its record exactly once."""

    async def retry_all() -> list[str]:
        problems = []
        async with mcp_client(stack, "alice") as alice:
            for fact, (args, first) in storm.remembers.items():
                again = await invoke(alice, "memory_remember", **args)
                if again.is_error:
                    problems.append(f"retry of {fact!r}: {again.structured}")
                elif (
                    first.ok
                    and first.result
                    and again.structured
                    != {
                        **first.result.structured,
                        "replayed": True,
                    }
                ):
                    problems.append(
                        f"retry of acknowledged {fact!r} did not replay: {again.structured}"
                    )
        return problems

    no_problems(run(retry_all()))
    bodies = inspector.owner.execute(
        "SELECT body FROM memory.memories WHERE path LIKE %s", (f"{folder}/facts-%",)
    ).fetchall()
    lines = Counter(line for (body,) in bodies for line in body.splitlines())
    assert {f"- {fact}" for fact in storm.remembers} == set(lines), "a fact is missing or extra"
    assert set(lines.values()) == {1}, [line for line, n in lines.items() if n > 1]


# -- the database unreachable ------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Answer:
    status: int
    body: bytes
    retry_after: str | None
    elapsed_s: float


@pytest.fixture(scope="module")
def unreachable(stack: Any) -> Iterator[str]:
    """The same Lambda handler and gateway, with a database that refuses connections."""
    url = f"postgresql://memory_runtime:x@127.0.0.1:{_closed_port()}/memory?connect_timeout=2"
    database = Database(url, min_size=1, max_size=2)
    settings = Settings(database_url=url, cursor_secret=b"u" * 32)
    gateway = ApiGateway(
        McpService(settings, database).invoke, issuer=stack.gateway.local_issuer, quiet=True
    ).start()
    try:
        yield gateway.mcp_url("acme")
    finally:
        gateway.stop()
        database.close()


@pytest.fixture(scope="module")
def answers_without_database(stack: Any, unreachable: str) -> list[Answer]:
    """Raw tool calls and the official client's handshake, all at once (each waits
    for the database until the server gives up)."""
    calls = [
        tool_call("memory_search", query="deploys"),
        tool_call("memory_list"),
        tool_call(
            "memory_write", uri="memory://workspace/notes/x.md", content="x", expected_revision=0
        ),
    ]

    def send(body: dict[str, Any]) -> Answer:
        started = time.monotonic()
        response = post(stack, "alice", body, url=unreachable)
        elapsed = time.monotonic() - started
        retry_after = response.headers.get("retry-after")
        return Answer(response.status_code, response.content, retry_after, elapsed)

    async def through_the_client() -> Answer:
        responses: list[tuple[int, bytes]] = []
        started = time.monotonic()
        try:
            async with mcp_client(
                stack, "alice", url=unreachable, mode="legacy", responses=responses
            ) as client:
                result = await client.call_tool("memory_search", {"query": "deploys"})
                raise AssertionError(f"the client got a result without a database: {result}")
        except BaseException as error:  # the client's task groups wrap what it raises
            assert isinstance(_leaf(error), MCPError), error
        status, body = responses[-1]
        return Answer(status, body, None, time.monotonic() - started)

    with ThreadPoolExecutor(len(calls)) as pool:
        raw = pool.map(send, calls)
        client = run(through_the_client())
        return [*raw, client]


def _leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


def test_database_unreachable_is_a_clear_error(answers_without_database: list[Answer]) -> None:
    """503 {"error":"unavailable"} with Retry-After before any tool runs; through the
    official client an error, never a successful "no memories"."""
    assert [(a.status, a.body) for a in answers_without_database] == [UNAVAILABLE_503] * 4
    assert all(answer.retry_after for answer in answers_without_database[:-1])  # raw calls


def test_database_unreachable_is_answered_within_the_deadline(
    answers_without_database: list[Answer],
) -> None:
    slowest = max(answer.elapsed_s for answer in answers_without_database)
    assert slowest < DEADLINE_S + SLACK_S, f"answered after {slowest:.1f}s"


# -- a statement timeout -------------------------------------------------------------------


def test_a_statement_timeout_is_a_timeout_error_and_changes_nothing(
    stack: Any, inspector: Inspector, run_id: str
) -> None:
    """The owner holds an exclusive lock on memory.memories: every tool waits, hits
    the statement timeout under its deadline and says ``timeout``; nothing commits,
    and once the lock is gone the same calls see the record (no cached emptiness)."""
    folder = f"proof-timeout-{run_id}"
    word = marker_word(random.Random(run_id), "slow")
    uri = f"memory://workspace/notes/{folder}/locked.md"

    async def make() -> dict[str, Any]:
        async with mcp_client(stack, "alice") as alice:
            made = await invoke(
                alice, "memory_write", uri=uri, content=f"# {word}", expected_revision=0
            )
            assert not made.is_error
            return made.structured

    made = run(make())
    by_id = f"memory://record/{made['id']}"
    calls = {
        "memory_list": {"prefix": f"memory://workspace/notes/{folder}/"},
        "memory_search": {"query": word},
        "memory_read": {"uri": by_id},
        "memory_write": {"uri": by_id, "content": "changed", "expected_revision": 1},
        "memory_remember": {"uri": uri, "fact": "late", "idempotency_key": f"slow-{run_id}"},
        "memory_move": {"uri": by_id, "new_uri": uri[:-3] + "-moved.md", "expected_revision": 1},
        "memory_delete": {"uri": by_id, "expected_revision": 1},
    }
    counts = inspector.change_counts()

    async def all_calls() -> dict[str, tuple[Result, float]]:
        async with mcp_client(stack, "alice") as alice:

            async def timed(tool: str) -> tuple[str, tuple[Result, float]]:
                started = time.monotonic()
                result = await invoke(alice, tool, **calls[tool])
                return tool, (result, time.monotonic() - started)

            return dict(await asyncio.gather(*(timed(tool) for tool in calls)))

    with psycopg.connect(stack.info["database_url"]) as locker:
        locker.execute("LOCK TABLE memory.memories IN ACCESS EXCLUSIVE MODE")
        outcomes = run(all_calls())
        locker.rollback()

    problems = [
        f"{tool}: {result.structured} after {elapsed:.1f}s"
        for tool, (result, elapsed) in outcomes.items()
        if result.code != "timeout" or elapsed > DEADLINE_S + SLACK_S
    ]
    no_problems(problems)
    assert inspector.change_counts() == counts, "a timed-out call committed something"

    async def after() -> tuple[Result, Result]:
        async with mcp_client(stack, "alice") as alice:
            listed = await invoke(alice, "memory_list", **calls["memory_list"])
            found = await invoke(alice, "memory_search", **calls["memory_search"])
            return listed, found

    listed, found = run(after())
    assert [i["id"] for i in listed.structured["items"]] == [made["id"]]
    assert [h["id"] for h in found.structured["hits"]] == [made["id"]]


# -- DynamoDB failing --------------------------------------------------------------------


def test_remember_is_exactly_once_without_dynamodb(
    stack: Any, inspector: Inspector, run_id: str
) -> None:
    """With the idempotency table gone, remember degrades to PostgreSQL's key alone:
    still exactly once (retries replay, concurrent duplicates merge once), and still
    so after the table comes back empty."""
    dynamodb = stack.aws.client("dynamodb")
    uri = f"memory://workspace/memories/proof-dynamo-{run_id}/facts.md"
    first = {"uri": uri, "fact": "survives dynamodb", "idempotency_key": f"dyn-{run_id}-1"}
    storm = {"uri": uri, "fact": "concurrent duplicate", "idempotency_key": f"dyn-{run_id}-2"}

    async def during_outage() -> tuple[Result, Result, list[Result]]:
        async with mcp_client(stack, "alice") as alice:
            applied = await invoke(alice, "memory_remember", **first)
            retried = await invoke(alice, "memory_remember", **first)

            async def duplicate() -> Result:
                async with mcp_client(stack, "alice") as other:
                    return await invoke(other, "memory_remember", **storm)

            duplicates = list(await asyncio.gather(*(duplicate() for _ in range(8))))
            return applied, retried, duplicates

    dynamodb.delete_table(TableName=IDEMPOTENCY_TABLE)
    try:
        applied, retried, duplicates = run(during_outage())
    finally:
        stack.aws.provision()  # the table comes back, empty
    assert applied.structured["merged"] is True and applied.structured["replayed"] is False
    assert retried.structured == {**applied.structured, "replayed": True}
    fresh = [d for d in duplicates if not d.is_error and not d.structured["replayed"]]
    assert len(fresh) == 1, [d.structured for d in duplicates]
    assert {d.code for d in duplicates if d.is_error} <= {"unavailable"}

    async def after_recovery() -> list[Result]:
        async with mcp_client(stack, "alice") as alice:
            return [await invoke(alice, "memory_remember", **args) for args in (first, storm)]

    again = run(after_recovery())
    assert again[0].structured == {**applied.structured, "replayed": True}
    assert again[1].structured == {**fresh[0].structured, "replayed": True}
    body = inspector.one(
        "SELECT body FROM memory.memories WHERE id = %s", [applied.structured["id"]]
    )
    assert body == "- survives dynamodb\n- concurrent duplicate\n"
    history = inspector.history([applied.structured["id"]])[applied.structured["id"]]
    assert [(e["revision"], e["operation"]) for e in history] == [(1, "merge"), (2, "merge")]


# -- EventBridge failing -------------------------------------------------------------------


def test_changes_commit_without_eventbridge_and_the_sweeper_delivers_once(
    stack: Any, inspector: Inspector, run_id: str
) -> None:
    events = stack.aws.client("events")
    bus = stack.aws.provisioned.bus_name
    folder = f"proof-bus-{run_id}"
    inspector.settle_audit()

    async def changes() -> list[Result]:
        async with mcp_client(stack, "alice") as alice:
            base = f"memory://workspace/notes/{folder}"
            out = [
                await invoke(
                    alice, "memory_write", uri=f"{base}/a.md", content="a", expected_revision=0
                )
            ]
            rid = out[0].structured["id"]
            out.append(
                await invoke(
                    alice,
                    "memory_write",
                    uri=f"memory://record/{rid}",
                    content="b",
                    expected_revision=1,
                )
            )
            out.append(
                await invoke(
                    alice,
                    "memory_move",
                    uri=f"memory://record/{rid}",
                    new_uri=f"{base}/b.md",
                    expected_revision=2,
                )
            )
            out.append(
                await invoke(
                    alice,
                    "memory_remember",
                    uri=f"{base}/c.md",
                    fact="f",
                    idempotency_key=f"bus-{run_id}",
                )
            )
            out.append(
                await invoke(
                    alice, "memory_delete", uri=f"memory://record/{rid}", expected_revision=3
                )
            )
            return out

    events.remove_targets(Rule=AUDIT_TAP_RULE, EventBusName=bus, Ids=["audit-tap"])
    events.delete_rule(Name=AUDIT_TAP_RULE, EventBusName=bus)
    events.delete_event_bus(Name=bus)
    try:
        outcomes = run(changes())
        assert stack.wait_published()  # the attempts after the responses have failed
        ids = _folder_ids(inspector, folder)
        pending = inspector.one(
            "SELECT count(*) FROM memory.audit_outbox WHERE memory_id = ANY(%s::uuid[]) "
            "AND published_at IS NULL",
            [ids],
        )
    finally:
        stack.aws.provision()  # the bus and the tap come back
    assert [o.structured.get("error") for o in outcomes] == [None] * 5  # the degraded path
    assert pending == 5, "each commit's event waits in the outbox for the sweeper"
    no_problems(history_problems(inspector, ids))
    assert_each_commit_published_once(inspector, ids)
