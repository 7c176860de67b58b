"""Builders for tenants, principals and callers, through the real code paths."""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from memory_local.dev import DevStack
from memory_server.admin import operators
from memory_server.data.pool import request_settings
from memory_server.domain.caller import Caller
from memory_server.domain.contexts import parse_context
from memory_server.domain.deadline import Deadline
from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES
from memory_server.domain.limits import DEADLINE_S
from memory_server.operations.audit_events import EventBridgeSink, sweep
from memory_server.operations.membership import resolve_caller
from memory_server.operations.store import Store
from memory_server.protocol.tools import ToolTable

ALL_SCOPES = [GRANT_SCOPES[g] for g in ALL_GRANTS]
# The tools a caller with every grant is offered (tools/list).
ALL_TOOLS = {
    "memory_list",
    "memory_read",
    "memory_search",
    "memory_write",
    "memory_delete",
    "memory_remember",
    "memory_move",
    "memory_brief",
    "memory_scopes",
}


def resolve_with_all_scopes(db: Any, workspace: str, subject: str, **options: Any) -> Any:
    """``resolve_caller`` for a token with every scope, in the workspace context."""
    return resolve_caller(
        db,
        workspace=workspace,
        subject=subject,
        scopes=ALL_SCOPES,
        context=parse_context(None),
        **options,
    )


@dataclass(frozen=True)
class Principal:
    id: uuid.UUID
    subject: str
    handle: str


@dataclass
class Workspace:
    world: World
    id: uuid.UUID
    slug: str

    def person(self, handle: str, grants: tuple[str, ...] = ALL_GRANTS) -> Principal:
        return self._member("person", handle, grants, None)

    def service(self, handle: str, grants: tuple[str, ...], personal: bool = False) -> Principal:
        return self._member("service", handle, grants, personal)

    def add(self, principal: Principal, grants: tuple[str, ...] = ALL_GRANTS) -> Principal:
        operators.set_membership(self.world.owner, self.id, principal.id, grants)
        return principal

    def _member(
        self, kind: str, handle: str, grants: tuple[str, ...], personal: bool | None
    ) -> Principal:
        subject = f"{handle}-{uuid.uuid4().hex[:10]}"
        pid = operators.ensure_principal(self.world.owner, kind, subject, handle)  # type: ignore[arg-type]
        operators.set_membership(
            self.world.owner, self.id, pid, grants, personal_namespace=personal
        )
        return Principal(pid, subject, handle)

    def register(self, context_key: str, *members: Principal) -> None:
        operators.register_context(self.world.owner, self.id, context_key, [m.id for m in members])

    def caller(
        self, who: Principal, context: str = "workspace", scopes: list[str] | None = None
    ) -> Caller:
        membership = resolve_caller(
            self.world.store.db,
            workspace=self.slug,
            subject=who.subject,
            scopes=ALL_SCOPES if scopes is None else scopes,
            context=parse_context(context),
        )
        assert membership is not None, "not a member"
        return membership.caller

    def agent(
        self, who: Principal, context: str = "workspace", scopes: list[str] | None = None
    ) -> Agent:
        return Agent(self.world.store, self.caller(who, context, scopes))


@dataclass
class World:
    store: Store
    owner: psycopg.Connection
    made: list[str] = field(default_factory=list)

    def workspace(self, slug: str | None = None, *, enabled: bool = True) -> Workspace:
        slug = slug or f"ws-{uuid.uuid4().hex[:12]}"
        wid = operators.ensure_workspace(self.owner, slug, memory_enabled=enabled)
        return Workspace(self, wid, slug)


@dataclass
class Agent:
    """Calls the tools the way an MCP client does, through the tool table: raw
    arguments in, the structured result out; a tool error is raised as ``ToolError``."""

    store: Store
    caller: Caller
    # Each call's deadline, as the service gives it; longer for a test that holds a
    # call on a lock on purpose, for longer than a loaded machine leaves of it.
    deadline_s: float = DEADLINE_S

    def _run(self, tool: str, raw: dict[str, Any]) -> dict[str, Any]:
        return ToolTable(self.store).run(tool, self.caller, raw, Deadline.after(self.deadline_s))

    def list(self, **raw: Any) -> dict[str, Any]:
        return self._run("memory_list", raw)

    def read(self, **raw: Any) -> dict[str, Any]:
        return self._run("memory_read", raw)

    def search(self, **raw: Any) -> dict[str, Any]:
        return self._run("memory_search", raw)

    def write(self, **raw: Any) -> dict[str, Any]:
        return self._run("memory_write", raw)

    def delete(self, **raw: Any) -> dict[str, Any]:
        return self._run("memory_delete", raw)

    def remember(self, **raw: Any) -> dict[str, Any]:
        return self._run("memory_remember", raw)

    def move(self, **raw: Any) -> dict[str, Any]:
        return self._run("memory_move", raw)


@dataclass(frozen=True)
class SharedStack:
    """The session's dev stack and the environment it set for this process."""

    dev: DevStack
    environment: dict[str, str]  # what DevStack.start added or changed in os.environ


@contextmanager
def running_dev_stack(cluster: Any, root: Path) -> Iterator[SharedStack]:
    """``make dev``'s stack on the test server, for the whole session.

    Role passwords are cluster-wide, so the stack reuses the session's. DevStack
    points the process's AWS SDK at moto and ``DATABASE_URL`` at its runtime role
    (os.environ): that is captured and the environment restored at once, so only
    the packages using the stack see it (``using_stack``); the handler's clients
    were built while it was set.
    """
    saved = dict(os.environ)
    dev = DevStack(
        root,
        port=0,
        admin_url=cluster.admin_url,
        moto_seed=None,
        quiet=True,
        credentials={**cluster.passwords, "cursor_secret": "test-stack-" + "s" * 40},
        # Words alone: the shared stack's tests hold lexical results; hybrid recall is
        # proven by tests/integration/test_hybrid_recall.py and its own stack test.
        embedder="off",
    )
    try:
        dev.start()
        changed = {k: v for k, v in os.environ.items() if saved.get(k) != v}
    except BaseException:
        dev.stop()
        raise
    finally:
        _restore_environment(saved)
    try:
        yield SharedStack(dev, changed)
    finally:
        dev.stop()


@contextmanager
def using_stack(shared: SharedStack) -> Iterator[DevStack]:
    """The shared stack for one test package, as its own stack once was: the stack's
    environment applied until the package ends, and the audit tap settled first, so
    no row left pending by another package reaches this package's tap (the stack's
    sweeper publishes old rows at any moment)."""
    saved = dict(os.environ)
    os.environ.update(shared.environment)
    try:
        settle_audit(shared.dev)
        yield shared.dev
    finally:
        _restore_environment(saved)


def settle_audit(dev: DevStack) -> None:
    """Publish every pending audit row now (as the auditor role), then empty the tap."""
    assert dev.aws is not None and dev.roles is not None
    assert dev.wait_published(), "audit publishing after the responses did not finish"
    sink = EventBridgeSink(dev.aws.client("events"), dev.aws.provisioned.bus_name)
    with psycopg.connect(dev.roles.auditor_url) as auditor:
        while True:
            published, failed = sweep(auditor, sink, min_age=timedelta(0))
            if published == 0 or failed:
                break
    dev.aws.read_audit_events()


def _restore_environment(saved: dict[str, str]) -> None:
    os.environ.clear()
    os.environ.update(saved)


@contextmanager
def table_locked(owner_url: str, table: str) -> Iterator[None]:
    """``table`` held in ACCESS EXCLUSIVE mode by another connection for the block, so
    any statement that touches it waits (and meets its statement timeout)."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        with psycopg.connect(owner_url) as conn:
            conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10), f"could not lock {table}"
        yield
    finally:
        release.set()
        holder.join()


def set_caller_settings(conn: psycopg.Connection, caller: Caller) -> None:
    """The caller's ``app.*`` settings for row-level security, set in raw SQL for the
    transaction (as ``sql/request_settings.sql`` does, less the statement timeout)."""
    conn.execute(
        "SELECT set_config('app.workspace_id', %(workspace_id)s, true),"
        " set_config('app.principal_id', %(principal_id)s, true),"
        " set_config('app.grants', %(grants)s, true),"
        " set_config('app.contexts', %(contexts)s, true),"
        " set_config('app.personal', %(personal)s, true)",
        request_settings(caller, Deadline().remaining_ms()),
    )


def insert_unguarded_membership(owner: psycopg.Connection, workspace: Any, principal: Any) -> None:
    """A membership row no code path makes any more, made behind every check's back:
    the trigger that refuses it (migration 0012) is lifted for this one insert."""
    toggle = (
        "DO $$ BEGIN IF EXISTS (SELECT FROM pg_trigger WHERE tgname = 'memberships_principal') "
        "THEN ALTER TABLE memory.memberships {} TRIGGER memberships_principal; END IF; END $$"
    )
    with owner.transaction():
        owner.execute(toggle.format("DISABLE"))
        owner.execute(
            "INSERT INTO memory.memberships (workspace_id, principal_id, grants, "
            "personal_namespace) VALUES (%s, %s, '{read}', false)",
            (workspace, principal),
        )
        owner.execute(toggle.format("ENABLE"))


def audit_tap(events: Any, sqs: Any, bus: str) -> Callable[[], list[dict[str, Any]]]:
    """Creates the EventBridge bus ``bus`` and a rule that copies the memory server's
    events on it into a new SQS queue; returns ``drain``, which receives and deletes
    every event the queue holds, in order."""
    events.create_event_bus(Name=bus)
    queue = sqs.create_queue(QueueName=f"{bus}-tap")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events.put_rule(
        Name="all", EventBusName=bus, EventPattern=json.dumps({"source": ["memory-server"]})
    )
    events.put_targets(Rule="all", EventBusName=bus, Targets=[{"Id": "q", "Arn": arn}])

    def drain() -> list[dict[str, Any]]:
        out = []
        while got := sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get(
            "Messages", []
        ):
            for message in got:
                out.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
        return out

    return drain


# -- the service's log ---------------------------------------------------------------

# The loggers whose lines reach the function's log (memory_server.edge.logs routes them).
LOGGED = ("memory_server", "psycopg", "psycopg_pool")


class _Kept(logging.Handler):
    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not any(kept is record for kept in self.records):  # once, whichever logger
            self.records.append(record)


@contextmanager
def service_log(level: int = logging.ERROR) -> Iterator[list[logging.LogRecord]]:
    """The lines the service logs at ``level`` or above while the block runs. The
    local stack runs the handler in this process; Powertools turns its loggers'
    propagation off, so the handler goes on each of them."""
    kept = _Kept(level)
    names = {n for n in logging.root.manager.loggerDict if n.split(".")[0] in LOGGED}
    loggers = [logging.getLogger(n) for n in sorted(names | set(LOGGED))]
    for logger in loggers:
        logger.addHandler(kept)
    try:
        yield kept.records
    finally:
        for logger in loggers:
            logger.removeHandler(kept)
