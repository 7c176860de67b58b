"""Helpers shared by the proofs: raw HTTP, full tool results, and database inspection.

Inspection runs as the schema owner (every row, past row-level security), the audit
sweeper runs as the auditor role, and backends are killed as the cluster superuser:
never as the runtime role the requests use, so the proofs observe it from outside.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import string
import threading
import time
import uuid
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Coroutine, Iterable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx2
import jwt
import psycopg
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from memory_local.dev import DATABASE, DevStack
from memory_server.data import migrate
from memory_server.operations.audit_events import EventBridgeSink, purge_expired, sweep

from tests.tls import TLS

T = TypeVar("T")
JSON = "application/json"
ACCEPT = "application/json, text/event-stream"
HANDSHAKE = "2025-11-25"

# What a response must never show: an interpreter trace, a file of ours, the driver
# or the database's own error text. (An echo of the request itself is not a leak.)
LEAK = re.compile(
    r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|site-packages|"
    r"psycopg|memory_server\.|memory_local\.|ERROR: |syntax error at or near|"
    r"\bSQLSTATE\b|stack trace",
    re.IGNORECASE,
)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run``, raising the first real error out of nested exception groups
    (many clients inside one another's task groups would bury it ten levels deep)."""
    try:
        return asyncio.run(coro)
    except BaseExceptionGroup as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        # Not chained: pytest would render every nested group, dozens of levels deep.
        raise leaf.with_traceback(leaf.__traceback__) from None


def no_problems(problems: list[str]) -> None:
    """Fail with every discrepancy listed (a matrix shows its whole pattern at once)."""
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:60])


# -- words and ids ---------------------------------------------------------------


def marker_word(rng: random.Random, prefix: str = "mk") -> str:
    """A random lowercase word no English text contains (so search finds only it)."""
    return prefix + "".join(rng.choice(string.ascii_lowercase) for _ in range(12))


# -- raw HTTP --------------------------------------------------------------------


def post(
    stack: DevStack,
    token: str | None,
    body: bytes | dict[str, Any] | list[Any],
    *,
    workspace: str = "acme",
    url: str | None = None,
    context: str | bytes | None = None,
    headers: dict[str, Any] | None = None,
    params: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> httpx2.Response:
    """One JSON-RPC POST as bytes on the wire (handshake generation unless overridden)."""
    sent: dict[str, Any] = {
        "content-type": JSON,
        "accept": ACCEPT,
        "mcp-protocol-version": HANDSHAKE,
    }
    if token is not None:
        sent["authorization"] = f"Bearer {stack.info['tokens'][token]}"
    if context is not None:
        sent["memory-context"] = context
    sent.update(headers or {})
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    target = url or stack.info["workspaces"][workspace]
    return _session().post(target, content=content, headers=sent, params=params, timeout=timeout)


_local = threading.local()
RAW_PARALLEL = 4  # raw clients at once (see _HANDSHAKES: the emulator's backlog is 5)


def _session() -> httpx2.Client:
    """One keep-alive client per thread: no handshake per request. Idle connections
    are dropped well before the emulator's 30 s idle timeout closes them."""
    if getattr(_local, "client", None) is None:
        _local.client = httpx2.Client(limits=httpx2.Limits(keepalive_expiry=5.0), verify=TLS)
    return _local.client


def rpc(method: str, params: dict[str, Any] | None = None, rid: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return message


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    return rpc("tools/call", {"name": name, "arguments": arguments})


def assert_no_leak(response: httpx2.Response, sent: bytes = b"") -> None:
    """No 5xx, and nothing in the body that a server-side failure would reveal."""
    assert response.status_code < 500, (response.status_code, response.text[:500])
    text = response.content.decode("utf-8", errors="replace")
    echoed = sent.decode("utf-8", errors="replace")
    for match in LEAK.finditer(text):
        assert match.group(0) in echoed, f"response reveals {match.group(0)!r}: {text[:500]}"


# -- full tool results through the official client ---------------------------------


# The API Gateway emulator serves from a socketserver with the default listen backlog
# (5): a burst of simultaneous new connections overflows it and some are reset. So
# clients open their connection a few at a time; once connected they run in parallel.
_HANDSHAKES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def _handshake_gate() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    if loop not in _HANDSHAKES:
        _HANDSHAKES[loop] = asyncio.Semaphore(4)
    return _HANDSHAKES[loop]


@asynccontextmanager
async def mcp_client(
    stack: DevStack,
    token: str,
    *,
    workspace: str = "acme",
    context: str | None = None,
    url: str | None = None,
    mode: str = "auto",
    responses: list[tuple[int, bytes]] | None = None,
) -> AsyncIterator[Any]:
    """The official client, like ``tests.e2e.conftest.connect``, optionally recording
    every HTTP status and body it receives (the client folds non-JSON-RPC errors into
    one generic error, and a fault proof must tell a 503 from a 500)."""
    headers = {"Authorization": f"Bearer {stack.info['tokens'][token]}"}
    if context is not None:
        headers["Memory-Context"] = context
    hooks: dict[str, list[Any]] = {}
    if responses is not None:

        async def record(response: httpx2.Response) -> None:
            await response.aread()
            responses.append((response.status_code, response.content))

        hooks["response"] = [record]
    target = url or stack.info["workspaces"][workspace]
    async with AsyncExitStack() as opened:
        async with _handshake_gate():
            http = await opened.enter_async_context(
                httpx2.AsyncClient(
                    headers=headers, timeout=httpx2.Timeout(30), event_hooks=hooks, verify=TLS
                )
            )
            client = await opened.enter_async_context(
                Client(streamable_http_client(target, http_client=http), mode=mode, cache=None)
            )
        yield client


@dataclass(frozen=True)
class Result:
    structured: dict[str, Any]
    text: str  # the text block, which must carry the same JSON
    is_error: bool

    @property
    def code(self) -> str | None:
        return self.structured.get("error", {}).get("code") if self.is_error else None

    @property
    def wire(self) -> str:
        """Everything a caller could read from this result."""
        return self.text + json.dumps(self.structured, ensure_ascii=False)


async def invoke(client: Any, tool: str, **arguments: Any) -> Result:
    result = await client.call_tool(tool, arguments)
    structured = dict(result.structured_content or {})
    text = "".join(getattr(block, "text", "") for block in result.content)
    assert json.loads(text) == structured, "text block and structuredContent differ"
    return Result(structured, text, bool(result.is_error))


# -- identities without the emulated pool -----------------------------------------


def people_client(stack: DevStack) -> str:
    """The app client people's tokens name, as the gateway accepts it (read from a
    demo token: the emulated pool itself may have been reset by another package)."""
    claims = jwt.decode(stack.info["tokens"]["alice"], options={"verify_signature": False})
    return str(claims["client_id"])


@dataclass
class Directory:
    """The admin API's user pool seam, in memory (``admin.identity.AgentClients``)."""

    clients: dict[str, list[str]] = field(default_factory=dict)

    def create_agent_client(
        self, workspace: str, name: str, scopes: Sequence[str], created_by: str
    ) -> tuple[str, str]:
        client_id = f"key{uuid.uuid4().hex[:20]}"
        self.clients[client_id] = list(scopes)
        return client_id, "secret-" + client_id

    def delete_agent_client(self, workspace: str, client_id: str) -> bool:
        return self.clients.pop(client_id, None) is not None

    def sign_out_and_disable(self, subject: str) -> dict[str, bool]:
        return {}


# -- the database, from outside ----------------------------------------------------


def _with_user(url: str, user: str, password: str) -> str:
    parts = urlsplit(url)
    netloc = f"{user}:{password}@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


class Inspector:
    """The owner's view of every table, the audit sweeper, and the audit tap."""

    def __init__(self, stack: DevStack, owner: psycopg.Connection, auditor_password: str) -> None:
        self.stack = stack
        self.owner = owner
        self.auditor_url = _with_user(
            stack.info["database_url"], migrate.AUDITOR_ROLE, auditor_password
        )

    def one(self, sql: str, params: Iterable[Any] = ()) -> Any:
        row = self.owner.execute(sql, tuple(params)).fetchone()
        assert row is not None
        return row[0]

    def workspace_id(self, slug: str) -> str:
        return str(self.one("SELECT id FROM memory.workspaces WHERE slug = %s", [slug]))

    def principal_ids(self) -> dict[str, str]:
        """Demo identity -> principal id (through their demo memberships)."""
        rows = self.owner.execute(
            "SELECT DISTINCT p.handle, p.id FROM memory.principals p "
            "JOIN memory.memberships m ON m.principal_id = p.id "
            "JOIN memory.workspaces w ON w.id = m.workspace_id "
            "WHERE w.slug IN ('acme', 'globex')"
        ).fetchall()
        return {handle: str(pid) for handle, pid in rows}

    def tables(self) -> list[str]:
        rows = self.owner.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'memory' AND table_type = 'BASE TABLE' ORDER BY 1"
        ).fetchall()
        return [name for (name,) in rows]

    def dump(self) -> dict[str, tuple[int, str]]:
        """Per memory.* table, its row count and a digest of every row as text in a
        fixed order: equal dumps mean byte-for-byte equal tables. (Hashed in the
        database, so a large table is compared without shipping it.)"""
        return {
            table: tuple(
                self.owner.execute(
                    "SELECT count(*), coalesce(md5(string_agg(t::text, E'\\n' ORDER BY t::text)), '') "
                    f"FROM memory.{table} AS t"  # table names come from the catalog
                ).fetchone()
                or (0, "")
            )
            for table in self.tables()
        }

    def dump_rows(self, table: str) -> list[str]:
        return [
            row for (row,) in self.owner.execute(f"SELECT t::text FROM memory.{table} t ORDER BY 1")
        ]

    def change_counts(self) -> dict[str, int]:
        """How much has ever been written (rows in append-only and current tables)."""
        return {
            table: self.one(f"SELECT count(*) FROM memory.{table}")
            for table in ("memories", "revisions", "audit_outbox", "idempotency_keys")
        }

    def history(self, memory_ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        """memory.revisions for the given records, oldest first."""
        rows = self.owner.execute(
            "SELECT memory_id::text, revision, operation, path, body, writer_id::text, source "
            "FROM memory.revisions WHERE memory_id = ANY(%s::uuid[]) ORDER BY memory_id, revision",
            (list(memory_ids),),
        ).fetchall()
        out: dict[str, list[dict[str, Any]]] = {}
        for mid, revision, operation, path, body, writer, source in rows:
            out.setdefault(mid, []).append(
                {
                    "revision": revision,
                    "operation": operation,
                    "path": path,
                    "body": body,
                    "writer": writer,
                    "source": source,
                }
            )
        return out

    def outbox(self, memory_ids: Iterable[str]) -> Counter[tuple[str, int, str]]:
        rows = self.owner.execute(
            "SELECT memory_id::text, revision, operation FROM memory.audit_outbox "
            "WHERE memory_id = ANY(%s::uuid[])",
            (list(memory_ids),),
        ).fetchall()
        return Counter((mid, rev, op) for mid, rev, op in rows)

    def unpublished(self) -> int:
        return int(self.one("SELECT count(*) FROM memory.audit_outbox WHERE published_at IS NULL"))

    # -- audit ----------------------------------------------------------------

    def sweep(self) -> tuple[int, int]:
        """Run the sweeper now (as the auditor role), whatever the rows' age, once the
        handler has finished what it publishes after its responses."""
        aws = self.stack.aws
        assert aws is not None
        assert self.stack.wait_published(), "audit publishing after the responses hung"
        sink = EventBridgeSink(aws.client("events"), aws.provisioned.bus_name)
        total = (0, 0)
        with psycopg.connect(self.auditor_url) as auditor:
            while True:
                published, failed = sweep(auditor, sink, min_age=timedelta(0))
                total = (total[0] + published, total[1] + failed)
                if published == 0 or failed:
                    return total

    def clock(self) -> datetime:
        """The database's wall clock (expiry is compared with it, not with ours)."""
        moment = self.one("SELECT clock_timestamp()")
        assert isinstance(moment, datetime)
        return moment

    def wait_for_clock(self, moment: datetime, timeout_s: float = 30.0) -> None:
        """Until the database's clock is past ``moment`` (a time, not a guess)."""
        deadline = time.monotonic() + timeout_s
        while self.clock() <= moment:
            assert time.monotonic() < deadline, f"the database's clock never passed {moment}"
            time.sleep(0.02)

    def purge_expired(self) -> int:
        """Run the sweeper's purge of expired records now (as the auditor role)."""
        with psycopg.connect(self.auditor_url) as auditor:
            return purge_expired(auditor)

    def purge_until_gone(self, memory_ids: Iterable[str], timeout_s: float = 30.0) -> None:
        """Purge until none of ``memory_ids`` is left (another purge, the stack's own
        sweeper, may take some of them meanwhile: it skips what this one locks)."""
        ids = list(memory_ids)
        deadline = time.monotonic() + timeout_s
        while self.one("SELECT count(*) FROM memory.memories WHERE id = ANY(%s::uuid[])", [ids]):
            assert time.monotonic() < deadline, "expired records were never purged"
            if not self.purge_expired():
                time.sleep(0.02)

    def drain_events(self) -> list[dict[str, Any]]:
        aws = self.stack.aws
        assert aws is not None
        self.stack.wait_published()
        return aws.read_audit_events()

    def settle_audit(self) -> None:
        """Publish whatever is pending and empty the tap, so a proof starts clean."""
        self.sweep()
        self.drain_events()


def runtime_backends_sql() -> str:
    """Backends of the runtime role in the stack's database (and nothing else)."""
    return (
        "SELECT pid FROM pg_stat_activity "
        f"WHERE datname = '{DATABASE}' AND usename = '{migrate.RUNTIME_ROLE}' "
        "AND pid <> pg_backend_pid()"
    )


def event_keys(events: Iterable[dict[str, Any]], ids: set[str]) -> Counter[tuple[str, int, str]]:
    """(record id, revision, operation) of every audit event about ``ids``."""
    return Counter(
        (e["detail"]["record_id"], e["detail"]["revision"], e["detail"]["operation"])
        for e in events
        if e["detail"]["record_id"] in ids
    )


def assert_each_commit_published_once(
    inspector: Inspector, ids: Iterable[str], *, sweep_first: bool = True
) -> Counter[tuple[str, int, str]]:
    """Every commit to ``ids`` reached the bus under exactly one ``event_id``, and
    nothing reached it that is not a commit; then nothing is left to deliver.

    Delivery is at least once by design (docs/security.md): a ``PutEvents`` that
    timed out on the client after the bus took it is sent again (by the client's
    retry or by the sweeper) under the same ``event_id``, so consumers deduplicate
    on it. Returns how many copies beyond the first each commit had.
    """
    ids = set(ids)
    if sweep_first:
        inspector.sweep()
    commits = Counter(
        (mid, e["revision"], e["operation"])
        for mid, entries in inspector.history(sorted(ids)).items()
        for e in entries
    )
    assert all(n == 1 for n in commits.values()), "a revision was committed twice"
    ids_per_commit: dict[tuple[str, int, str], set[int]] = {}
    copies: Counter[tuple[str, int, str]] = Counter()
    for event in inspector.drain_events():
        detail = event["detail"]
        if detail["record_id"] not in ids:
            continue
        key = (detail["record_id"], detail["revision"], detail["operation"])
        ids_per_commit.setdefault(key, set()).add(detail["event_id"])
        copies[key] += 1
    assert set(ids_per_commit) == set(commits), {
        "missing": sorted(set(commits) - set(ids_per_commit))[:10],
        "unexpected": sorted(set(ids_per_commit) - set(commits))[:10],
    }
    several = {key: found for key, found in ids_per_commit.items() if len(found) != 1}
    assert not several, f"a commit was published under several event ids: {several}"
    event_ids = [next(iter(found)) for found in ids_per_commit.values()]
    assert len(set(event_ids)) == len(event_ids), "two commits share an event id"
    assert inspector.sweep() == (0, 0)  # nothing left to deliver
    assert event_keys(inspector.drain_events(), ids) == Counter()
    return copies - Counter(dict.fromkeys(copies, 1))


def dump_difference(
    before: dict[str, tuple[int, str]], after: dict[str, tuple[int, str]]
) -> dict[str, Any]:
    """The tables whose content changed, with their row counts before and after."""
    return {
        table: {
            "rows before": before.get(table, (0, ""))[0],
            "rows after": after.get(table, (0, ""))[0],
        }
        for table in sorted(set(before) | set(after))
        if before.get(table) != after.get(table)
    }
