"""The security review's findings that live below HTTP (docs/security.md, "Hardening"):
the database idempotency key's scope, erasure racing a write in flight, caller
resolution (revoked and foreign keys, a statement timeout), the narrower row-level
security of the second wall, and the operator path that must not re-attach keys."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any

import psycopg
import pytest
from memory_server.admin import operators
from memory_server.data import records
from memory_server.data.records import Content
from memory_server.domain.addresses import RevisionAddress, parse_path_address
from memory_server.domain.arguments import DeleteArgs, MoveArgs, RememberArgs, WriteArgs
from memory_server.domain.contexts import parse_context
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import AdminError, ToolError
from memory_server.operations import (
    memory_delete,
    memory_move,
    memory_remember,
    memory_write,
    read_revision,
)
from memory_server.operations.membership import resolve_caller

from tests.builders import (
    ALL_SCOPES,
    insert_unguarded_membership,
    resolve_with_all_scopes,
    service_log,
    set_caller_settings,
    table_locked,
)

NIL = "00000000-0000-0000-0000-000000000000"


def _count(owner: psycopg.Connection, sql: str, *params: Any) -> int:
    row = owner.execute(sql, params).fetchone()
    assert row is not None
    return int(row[0])


# -- 4. the database key of memory_remember is bound to the listening context -----------


def test_the_database_key_replays_only_in_its_own_context(world, store) -> None:  # type: ignore[no-untyped-def]
    """Without the DynamoDB layer: the same key from another context is another
    request, and never replays a result from a context the caller cannot hear."""
    ws = world.workspace()
    alice = ws.person("alice")
    ws.register("dm:secret", alice)
    args = RememberArgs(
        uri="memory://workspace/notes/plan.md",
        fact="ship it",
        idempotency_key="key-context-0001",
        source=None,
        context=None,
    )
    in_dm = memory_remember(store, ws.caller(alice, "dm:secret"), args)
    assert memory_remember(store, ws.caller(alice, "dm:secret"), args)["replayed"] is True
    in_workspace = memory_remember(store, ws.caller(alice), args)
    assert in_workspace["replayed"] is False and in_workspace["id"] != in_dm["id"]
    # A read-only token of the same person is refused before any key is looked up.
    with pytest.raises(ToolError) as refused:
        memory_remember(store, ws.caller(alice, "dm:secret", ["memory/read"]), args)
    assert refused.value.code == "permission_denied"


# -- 5. erasure racing a change in flight ----------------------------------------------------


def test_erasure_waits_for_a_change_in_flight_and_purges_it(world, store, owner, cluster) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    dave = ws.person(f"dave-{uuid.uuid4().hex[:6]}")
    caller = ws.caller(dave)
    address = parse_path_address("memory://me/notes/late.md")
    written, release = threading.Event(), threading.Event()
    outcome: dict[str, Any] = {}

    def write_slowly() -> None:
        try:
            with store.db.write(caller, Deadline.after(20)) as tx:
                row = records.create(
                    tx,
                    caller,
                    address,
                    context_key="workspace",
                    content=Content("late.md", "written while being erased", None),
                    operation="create",
                ).get()
                outcome["row"] = row
                written.set()
                release.wait(10)
        except ToolError as error:  # reported below
            outcome["error"] = error

    def erase() -> None:
        with psycopg.connect(cluster.owner_url, autocommit=True) as conn:
            outcome["report"] = operators.erase_person(conn, dave.subject)

    writer = threading.Thread(target=write_slowly)
    writer.start()
    assert written.wait(10), outcome
    eraser = threading.Thread(target=erase)
    eraser.start()
    eraser.join(1.0)
    assert eraser.is_alive(), "erasure went ahead while a change of the person was in flight"
    release.set()
    writer.join(10)
    eraser.join(10)
    assert "error" not in outcome and outcome["report"].personal_records == 1
    # Nothing of the person is left: the late record was purged with the rest.
    for table, column in (("memories", "owner_id"), ("revisions", "owner_id")):
        assert (
            _count(owner, f"SELECT count(*) FROM memory.{table} WHERE {column} = %s", dave.id) == 0
        )


def test_a_change_after_the_erasure_is_refused_and_leaves_nothing(world, store, owner) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    erin = ws.person(f"erin-{uuid.uuid4().hex[:6]}")
    stale = ws.agent(erin)  # resolved before the erasure, as a request in flight is
    operators.erase_person(owner, erin.subject)
    with pytest.raises(ToolError) as refused:
        stale.write(uri="memory://me/notes/orphan.md", content="x", expected_revision=0)
    assert refused.value.code == "permission_denied"
    with pytest.raises(ToolError):
        stale.remember(uri="memory://me/notes/orphan.md", fact="x", idempotency_key="key-orphan-01")
    for table in ("memories", "revisions"):
        assert (
            _count(owner, f"SELECT count(*) FROM memory.{table} WHERE owner_id = %s", erin.id) == 0
        )
    assert (
        _count(owner, "SELECT count(*) FROM memory.audit_outbox WHERE writer_id = %s", erin.id) == 0
    )


def _waiting_on_a_lock(admin_url: str, role: str) -> bool:
    """Whether a backend of ``role`` waits for a lock (the cluster's administrator sees
    every backend's wait)."""
    with psycopg.connect(admin_url) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND wait_event_type = 'Lock'",
            (role,),
        ).fetchone()
    return bool(row and row[0])


def test_the_membership_lock_is_a_row_lock_erasure_and_removal_wait_for(  # type: ignore[no-untyped-def]
    world, store, owner, cluster
) -> None:
    """The lock every change takes on its membership row (FOR KEY SHARE, not an
    advisory lock RDS Proxy would pin a connection on): a change that starts while
    erasure holds the person's rows waits, then is refused; removing the member
    waits for a change in flight; changing its grants does not."""
    ws = world.workspace()
    gail = ws.person(f"gail-{uuid.uuid4().hex[:6]}")
    caller = ws.caller(gail)
    address = parse_path_address("memory://me/notes/during.md")

    def write(outcome: dict[str, Any], hold: threading.Event | None = None) -> None:
        try:
            with store.db.write(caller, Deadline.after(20)) as tx:
                outcome["row"] = records.create(
                    tx,
                    caller,
                    address,
                    context_key="workspace",
                    content=Content("during.md", "x", None),
                    operation="create",
                ).get()
                if hold is not None:
                    outcome["in_flight"] = True
                    hold.wait(10)
        except ToolError as error:
            outcome["error"] = error

    # A change in flight: a grant change goes ahead, removing the member waits.
    release, outcome = threading.Event(), {}
    writer = threading.Thread(target=write, args=(outcome, release))
    writer.start()
    give_up = time.monotonic() + 10
    while "in_flight" not in outcome and writer.is_alive() and time.monotonic() < give_up:
        time.sleep(0.01)
    assert outcome.get("in_flight"), outcome
    with psycopg.connect(cluster.owner_url) as other:
        other.execute("SET lock_timeout = '500ms'")
        other.execute(
            "UPDATE memory.memberships SET grants = grants WHERE principal_id = %s", (gail.id,)
        )
        other.commit()
        with pytest.raises(psycopg.errors.LockNotAvailable):
            other.execute("DELETE FROM memory.memberships WHERE principal_id = %s", (gail.id,))
        other.rollback()
    release.set()
    writer.join(10)
    assert "error" not in outcome

    # Erasure holds the person's rows: a change that starts now waits, then is refused.
    with psycopg.connect(cluster.owner_url) as eraser:
        from memory_server.data import operators as operator_data

        operator_data.lock_person(eraser, gail.id)
        eraser.execute("DELETE FROM memory.memberships WHERE principal_id = %s", (gail.id,))
        late: dict[str, Any] = {}
        writer = threading.Thread(target=write, args=(late,))
        writer.start()
        give_up = time.monotonic() + 10
        while not _waiting_on_a_lock(cluster.admin_url, "memory_runtime"):
            assert writer.is_alive(), f"the change did not wait for the erasure: {late}"
            assert time.monotonic() < give_up, "the change is not waiting for a lock"
            time.sleep(0.01)
        eraser.commit()
    writer.join(10)
    assert isinstance(late.get("error"), ToolError) and late["error"].code == "permission_denied"
    assert "row" not in late


# -- 6. caller resolution: revoked and foreign keys, under a deadline ------------------------


def _key(world, owner, ws) -> tuple[str, uuid.UUID]:  # type: ignore[no-untyped-def]
    """A live agent key of ``ws`` (as the admin API makes one), with its membership."""
    client_id = f"client{uuid.uuid4().hex[:12]}"
    row = owner.execute(
        "INSERT INTO memory.principals (kind, subject, handle, workspace_id, key_scopes) "
        "VALUES ('service', %s, 'bot', %s, '{memory/read}') RETURNING id",
        (client_id, ws.id),
    ).fetchone()
    principal = row[0]
    operators.set_membership(owner, ws.id, principal, ["read"])
    return client_id, principal


def test_resolution_ignores_revoked_and_foreign_keys_whatever_rows_exist(
    world, store, owner
) -> None:  # type: ignore[no-untyped-def]
    ws, other = world.workspace(), world.workspace()
    client_id, principal = _key(world, owner, ws)

    def resolves(slug: str) -> bool:
        return (
            resolve_caller(
                store.db, workspace=slug, subject=client_id, scopes=ALL_SCOPES,
                context=parse_context(None),
            )
            is not None
        )  # fmt: skip

    assert resolves(ws.slug)
    insert_unguarded_membership(owner, other.id, principal)
    assert not resolves(other.slug)
    owner.execute("UPDATE memory.principals SET revoked_at = now() WHERE id = %s", (principal,))
    assert not resolves(ws.slug)


def test_the_operator_path_never_reattaches_a_key_or_renames_an_identity(world, owner) -> None:  # type: ignore[no-untyped-def]
    ws, other = world.workspace(), world.workspace()
    client_id, principal = _key(world, owner, ws)
    person = ws.person("kept")
    with pytest.raises(AdminError) as foreign:
        operators.set_membership(owner, other.id, principal, ["read"])
    assert foreign.value.status == 409
    with pytest.raises(AdminError):  # not as a new global identity either
        operators.ensure_principal(owner, "service", client_id, "renamed")
    assert operators.ensure_principal(owner, "person", person.subject, "mallory") == person.id
    assert owner.execute(
        "SELECT handle FROM memory.principals WHERE id = %s", (person.id,)
    ).fetchone() == ("kept",)
    owner.execute("UPDATE memory.principals SET revoked_at = now() WHERE id = %s", (principal,))
    owner.execute("DELETE FROM memory.memberships WHERE principal_id = %s", (principal,))
    with pytest.raises(AdminError):
        operators.set_membership(owner, ws.id, principal, ["read"])
    # And the database refuses it whoever asks, the owner included.
    with pytest.raises(psycopg.errors.CheckViolation):
        owner.execute(
            "INSERT INTO memory.memberships VALUES (%s, %s, '{read}', false)", (ws.id, principal)
        )


def test_resolution_has_a_statement_timeout(world, store, cluster) -> None:  # type: ignore[no-untyped-def]
    """A locked table no longer holds caller resolution past the call's deadline."""
    ws = world.workspace()
    alice = ws.person("alice")
    with table_locked(cluster.owner_url, "memory.memberships"):
        started = time.monotonic()
        with pytest.raises(ToolError) as failed:
            resolve_with_all_scopes(store.db, ws.slug, alice.subject, deadline=Deadline.after(1.0))
        elapsed = time.monotonic() - started
    assert failed.value.code == "timeout" and elapsed < 2.5, elapsed


# -- 8. the second wall: as narrow as what the code does -------------------------------------


@pytest.fixture
def team(world):  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.person("alice")  # admin
    bob = ws.person("bob", ("read", "write:personal", "write:shared"))
    carol = ws.person("carol", ("read", "write:shared"))
    ws.register("channel:leads", alice)
    ws.agent(alice).write(uri="memory://workspace/notes/a.md", content="a", expected_revision=0)
    ws.agent(bob).write(uri="memory://workspace/notes/b.md", content="b", expected_revision=0)
    return ws, alice, bob, carol


def test_a_member_reads_and_marks_only_its_own_audit_rows(cluster, team) -> None:  # type: ignore[no-untyped-def]
    ws, alice, bob, _ = team
    with psycopg.connect(cluster.runtime_url) as conn:
        set_caller_settings(conn, ws.caller(bob))
        writers = {w for (w,) in conn.execute("SELECT writer_id FROM memory.audit_outbox")}
        assert writers == {bob.id}
        marked = conn.execute(
            "UPDATE memory.audit_outbox SET published_at = now() WHERE writer_id <> %s", (bob.id,)
        )
        assert marked.rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO memory.audit_outbox (workspace_id, memory_id, uri, operation, "
                "revision, writer_id) VALUES (%s, %s, 'memory://x', 'create', 1, %s)",
                (ws.id, NIL, alice.id),
            )
    with psycopg.connect(cluster.runtime_url) as conn:  # the admin pages the whole trail
        set_caller_settings(conn, ws.caller(alice))
        writers = {w for (w,) in conn.execute("SELECT writer_id FROM memory.audit_outbox")}
        assert {alice.id, bob.id} <= writers


def test_a_member_sees_only_its_own_memberships(cluster, team) -> None:  # type: ignore[no-untyped-def]
    ws, alice, bob, _ = team
    with psycopg.connect(cluster.runtime_url) as conn:
        set_caller_settings(conn, ws.caller(bob))
        assert [p for (p,) in conn.execute("SELECT principal_id FROM memory.memberships")] == [
            bob.id
        ]
        assert conn.execute("SELECT count(*) FROM memory.context_members").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM memory.contexts").fetchone() == (0,)
        # Provenance still names other members (the principals policy asks no membership
        # rows of the caller's).
        writers = set(
            conn.execute(
                "SELECT w.handle, w.kind FROM memory.memories AS m"
                " CROSS JOIN LATERAL memory.principal_provenance(m.created_by) AS w"
            ).fetchall()
        )
        assert writers == {("alice", "person"), ("bob", "person")}
        # The handle alone, as the release before the kind asks for it, agrees.
        handles = {
            h
            for (h,) in conn.execute(
                "SELECT memory.principal_handle(created_by) FROM memory.memories"
            )
        }
        assert handles == {"alice", "bob"}
    with psycopg.connect(cluster.runtime_url) as conn:
        set_caller_settings(conn, ws.caller(alice))
        assert conn.execute("SELECT count(*) FROM memory.memberships").fetchone() == (3,)
        assert conn.execute("SELECT count(*) FROM memory.contexts").fetchone() == (1,)


def test_every_row_a_member_writes_names_it_as_the_writer(cluster, team) -> None:  # type: ignore[no-untyped-def]
    ws, alice, bob, _ = team
    record = uuid.uuid4()
    statements = [
        (
            "INSERT INTO memory.revisions (workspace_id, memory_id, revision, operation, owner_id,"
            " context_key, kind, path, title, body, writer_id) VALUES (%s, %s, 1, 'create', %s,"
            " 'workspace', 'notes', 'forged.md', 't', 'b', %s)",
            (ws.id, record, NIL, alice.id),
        ),
        (
            "INSERT INTO memory.memories (workspace_id, owner_id, context_key, kind, path, title,"
            " body, revision, created_by, updated_by) VALUES (%s, %s, 'workspace', 'notes',"
            " 'forged.md', 't', 'b', 1, %s, %s)",
            (ws.id, NIL, alice.id, alice.id),
        ),
        (
            "UPDATE memory.memories SET updated_by = %s WHERE workspace_id = %s",
            (alice.id, ws.id),
        ),
    ]
    for sql, params in statements:
        with psycopg.connect(cluster.runtime_url) as conn:
            set_caller_settings(conn, ws.caller(bob))
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql, params)


def test_an_admin_setting_adds_only_principals_that_may_join(cluster, world, team, owner) -> None:  # type: ignore[no-untyped-def]
    ws, alice, _, carol = team
    elsewhere = world.workspace()
    _, foreign_key = _key(world, owner, elsewhere)
    dropped = world.workspace().person("dropped")
    _, revoked = _key(world, owner, ws)
    owner.execute("UPDATE memory.principals SET revoked_at = now() WHERE id = %s", (revoked,))
    owner.execute("DELETE FROM memory.memberships WHERE principal_id = %s", (revoked,))
    for principal in (foreign_key, revoked):
        with psycopg.connect(cluster.runtime_url) as conn:
            set_caller_settings(conn, ws.caller(alice))
            with pytest.raises(psycopg.errors.CheckViolation):
                conn.execute(
                    "INSERT INTO memory.memberships VALUES (%s, %s, '{read}', false)",
                    (ws.id, principal),
                )
    # A person joins only by accepting an invitation (issue 23): an admin's setting
    # cannot insert its membership (tests/admin/test_invitations.py has the rest).
    with psycopg.connect(cluster.runtime_url) as conn:
        set_caller_settings(conn, ws.caller(alice))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO memory.memberships VALUES (%s, %s, '{read}', true)",
                (ws.id, dropped.id),
            )
    with psycopg.connect(cluster.runtime_url) as conn:
        set_caller_settings(conn, ws.caller(alice))
        # ...and a membership's principal or workspace never changes under it.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "UPDATE memory.memberships SET principal_id = %s WHERE principal_id = %s",
                (foreign_key, carol.id),
            )


# -- numbers past their SQL type, should a caller skip the argument models --------------


@pytest.mark.parametrize("revision", [2**31, 2**63, -(2**31) - 1])
def test_a_number_past_its_sql_type_is_invalid_never_unavailable(world, store, revision) -> None:  # type: ignore[no-untyped-def]
    """The argument models bound every number a client sends; a direct caller that
    skips them (model_construct) still gets invalid_argument, not "unavailable, retry":
    each statement casts its revision to integer (22003 rather than a function that
    does not exist, 42883), and 22003 is logged as a warning, never an ERROR."""
    ws = world.workspace()
    alice = ws.person("alice")
    caller = ws.caller(alice)
    made = memory_write(
        store,
        caller,
        WriteArgs(uri="memory://workspace/notes/n.md", content="x", expected_revision=0),
    )
    rid = uuid.UUID(made["id"])
    by_id, by_path = f"memory://record/{rid}", "memory://workspace/notes/n.md"
    calls = [
        lambda: memory_write(store, caller, WriteArgs.model_construct(uri=by_path, content="y", expected_revision=revision, source=None, context=None, expires_at=None, pinned=None)),
        lambda: memory_write(store, caller, WriteArgs.model_construct(uri=by_id, content="y", expected_revision=revision, source=None, context=None, expires_at=None, pinned=None)),
        lambda: memory_delete(store, caller, DeleteArgs.model_construct(uri=by_path, expected_revision=revision)),
        lambda: memory_delete(store, caller, DeleteArgs.model_construct(uri=by_id, expected_revision=revision)),
        lambda: memory_move(store, caller, MoveArgs.model_construct(uri=by_id, new_uri="memory://workspace/notes/m.md", expected_revision=revision)),
        lambda: read_revision(store, caller, RevisionAddress(rid, revision)),
    ]  # fmt: skip
    answers = []
    with service_log(logging.WARNING) as logged:
        for call in calls:
            try:
                answers.append(("answered", call()))
            except ToolError as error:
                answers.append((error.code, error.message))
    # The move compares the revision it read before any statement takes the number.
    codes = ["invalid_argument"] * 4 + ["revision_conflict", "invalid_argument"]
    assert [code for code, _ in answers] == codes, answers
    warned = [r.getMessage() for r in logged if r.levelno == logging.WARNING]
    assert warned.count("a number out of its SQL type's range reached the database (22003)") == 5
    assert not [r for r in logged if r.levelno >= logging.ERROR], [r.getMessage() for r in logged]
    assert _count(world.owner, "SELECT revision FROM memory.memories WHERE id = %s", rid) == 1
