"""The database's own wall: raw SQL as the runtime role, with no application code."""

from __future__ import annotations

import psycopg
import pytest

from tests.builders import set_caller_settings

TENANT_TABLES = [
    "workspaces",
    "principals",
    "memberships",
    "contexts",
    "context_members",
    "memories",
    "revisions",
    "idempotency_keys",
    "audit_outbox",
]


def runtime(cluster, autocommit: bool = False) -> psycopg.Connection:  # type: ignore[no-untyped-def]
    return psycopg.connect(cluster.runtime_url, autocommit=autocommit)


@pytest.fixture
def two_tenants(world):  # type: ignore[no-untyped-def]
    a, b = world.workspace(), world.workspace()
    alice, bob = a.person("alice"), b.person("bob")
    agent_a, agent_b = a.agent(alice), b.agent(bob)
    for agent in (agent_a, agent_b):
        agent.write(
            uri="memory://workspace/notes/shared.md", content="team fact", expected_revision=0
        )
        agent.write(uri="memory://me/notes/mine.md", content="private fact", expected_revision=0)
        agent.remember(
            uri="memory://me/notes/facts.md", fact="likes tea", idempotency_key="key-00000001"
        )
    return agent_a, agent_b


def test_runtime_role_is_not_privileged(cluster) -> None:  # type: ignore[no-untyped-def]
    with runtime(cluster) as conn:
        row = conn.execute(
            "SELECT rolsuper, rolbypassrls, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert row == (False, False, False, False)
        owned = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'memory' AND pg_get_userbyid(c.relowner) = current_user"
        ).fetchone()
        assert owned == (0,)
        member_of_owner = conn.execute(
            "SELECT pg_has_role(current_user, 'memory_owner', 'MEMBER')"
        ).fetchone()
        assert member_of_owner == (False,)


def test_every_tenant_table_forces_rls_and_the_rest_are_unreachable(cluster) -> None:  # type: ignore[no-untyped-def]
    with runtime(cluster) as conn:
        rows = conn.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,"
            " has_table_privilege(current_user, c.oid, 'SELECT,INSERT,UPDATE,DELETE') "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'memory' AND c.relkind = 'r'"
        ).fetchall()
        policies = conn.execute(
            "SELECT tablename, cmd FROM pg_policies WHERE schemaname = 'memory' AND 'memory_runtime' = ANY (roles)"
        ).fetchall()
    tables = {name: (rls, force, reachable) for name, rls, force, reachable in rows}
    for name in TENANT_TABLES:
        assert tables.pop(name)[:2] == (True, True), name
        commands = {cmd for table, cmd in policies if table == name}
        assert commands == {"SELECT", "INSERT", "UPDATE", "DELETE"} or commands == {"ALL"}, (
            name,
            commands,
        )
    # What is left (search index, statistics and embeddings, invitations, the migrator's ledgers)
    # the runtime role cannot touch at all (only SECURITY DEFINER functions do).
    assert set(tables) == {
        "search_documents",
        "search_statistics",
        "search_embeddings",
        "embedding_queue",
        "invitations",
        "schema_migrations",
        "schema_files",
    }
    assert all(reachable is False for _, _, reachable in tables.values())
    for table in (
        "search_documents",
        "search_statistics",
        "search_embeddings",
        "embedding_queue",
        "invitations",
    ):
        with runtime(cluster) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"SELECT count(*) FROM memory.{table}")


def test_no_settings_sees_nothing(cluster, two_tenants) -> None:  # type: ignore[no-untyped-def]
    with runtime(cluster, autocommit=True) as conn:
        for table in TENANT_TABLES:
            assert conn.execute(f"SELECT count(*) FROM memory.{table}").fetchone() == (0,), table
        # A transaction that set them and ended leaves nothing behind either.
        with conn.transaction():
            set_caller_settings(conn, two_tenants[0].caller)
            assert conn.execute("SELECT count(*) FROM memory.memories").fetchone()[0] > 0
        assert conn.execute("SELECT count(*) FROM memory.memories").fetchone() == (0,)


def test_workspace_a_settings_see_and_change_nothing_of_b(cluster, two_tenants) -> None:  # type: ignore[no-untyped-def]
    agent_a, agent_b = two_tenants
    b_id = agent_b.caller.workspace_id
    with runtime(cluster) as conn:
        set_caller_settings(conn, agent_a.caller)
        for table in TENANT_TABLES:
            column = "id" if table == "workspaces" else "workspace_id"
            if table == "principals":
                continue
            seen = conn.execute(
                f"SELECT count(*) FROM memory.{table} WHERE {column} = %s", (b_id,)
            ).fetchone()
            assert seen == (0,), table
        assert conn.execute(
            "SELECT count(*) FROM memory.principals WHERE id = %s", (agent_b.caller.principal_id,)
        ).fetchone() == (0,)
        assert (
            conn.execute(
                "UPDATE memory.memories SET body = 'x' WHERE workspace_id = %s", (b_id,)
            ).rowcount
            == 0
        )
        assert (
            conn.execute("DELETE FROM memory.memories WHERE workspace_id = %s", (b_id,)).rowcount
            == 0
        )
        assert (
            conn.execute(
                "UPDATE memory.audit_outbox SET published_at = now() WHERE workspace_id = %s",
                (b_id,),
            ).rowcount
            == 0
        )
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # RLS WITH CHECK violation
            conn.execute(
                "INSERT INTO memory.memories (workspace_id, owner_id, context_key, kind, path, title, body,"
                " revision, created_by, updated_by) VALUES (%s, '00000000-0000-0000-0000-000000000000',"
                " 'workspace', 'notes', 'planted.md', 't', 'b', 1, %s, %s)",
                (b_id, agent_a.caller.principal_id, agent_a.caller.principal_id),
            )
        conn.rollback()
        # Within A, only A's shared records and alice's own personal ones are visible.
        set_caller_settings(conn, agent_a.caller)
        owners = {r[0] for r in conn.execute("SELECT owner_id FROM memory.memories").fetchall()}
        assert owners <= {agent_a.caller.principal_id, *agent_a.caller.visible_owners()}
    with psycopg.connect(cluster.owner_url) as owner:
        bodies = owner.execute(
            "SELECT body FROM memory.memories WHERE workspace_id = %s", (b_id,)
        ).fetchall()
    assert sorted(b for (b,) in bodies) == ["- likes tea\n", "private fact", "team fact"]


def test_rls_alone_hides_other_members_personal_records(cluster, world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice, bob = ws.agent(ws.person("alice")), ws.agent(ws.person("bob"))
    alice.write(uri="memory://me/notes/diary.md", content="alice only", expected_revision=0)
    with runtime(cluster) as conn:
        set_caller_settings(conn, bob.caller)
        assert conn.execute(
            "SELECT count(*) FROM memory.memories WHERE body = 'alice only'"
        ).fetchone() == (0,)
        assert conn.execute(
            "SELECT count(*) FROM memory.revisions WHERE body = 'alice only'"
        ).fetchone() == (0,)
        assert (
            conn.execute(
                "UPDATE memory.memories SET body = 'bob was here' WHERE body = 'alice only'"
            ).rowcount
            == 0
        )


def test_rls_alone_puts_an_expired_record_out_of_every_view(cluster, world, owner) -> None:  # type: ignore[no-untyped-def]
    """An expired record is outside the view of raw SQL as the runtime role, before the
    sweeper purges it: no row, no revision, no change; its address is freed only where
    the caller may write, and the purge leaves a tombstone and one audit row."""
    ws, other = world.workspace(), world.workspace()
    alice = ws.agent(ws.person("alice"))
    stranger = other.agent(other.person("mallory"))
    made = alice.write(
        uri="memory://workspace/notes/lapsed.md", content="lapsed fact", expected_revision=0
    )
    owner.execute(  # its time passes (the tools refuse a past expiry)
        "UPDATE memory.memories SET expires_at = now() - interval '1 second' WHERE id = %s",
        (made["id"],),
    )
    with runtime(cluster) as conn:
        set_caller_settings(conn, alice.caller)
        for table, column in (("memories", "id"), ("revisions", "memory_id")):
            found = conn.execute(
                f"SELECT count(*) FROM memory.{table} WHERE {column} = %s",
                (made["id"],),
            ).fetchone()
            assert found == (0,), table
        for statement in (
            "UPDATE memory.memories SET body = 'revived', expires_at = NULL WHERE id = %s",
            "DELETE FROM memory.memories WHERE id = %s",
        ):
            assert conn.execute(statement, (made["id"],)).rowcount == 0
        conn.rollback()
        set_caller_settings(conn, stranger.caller)  # another workspace: nothing to free
        freed = conn.execute(
            "SELECT memory.expire_address(%s, %s, 'workspace', 'notes', 'lapsed.md')",
            (alice.caller.workspace_id, alice.caller.owner_for("workspace")),
        ).fetchone()
        assert freed == (False,)
        conn.rollback()
        set_caller_settings(conn, alice.caller)
        freed = conn.execute(
            "SELECT memory.expire_address(%s, %s, 'workspace', 'notes', 'lapsed.md')",
            (alice.caller.workspace_id, alice.caller.owner_for("workspace")),
        ).fetchone()
        assert freed == (True,)
        conn.commit()
    history = owner.execute(
        "SELECT operation, body IS NULL FROM memory.revisions WHERE memory_id = %s "
        "ORDER BY revision",
        (made["id"],),
    ).fetchall()
    assert history == [("create", True), ("expire", True)]
    events = owner.execute(
        "SELECT operation FROM memory.audit_outbox WHERE memory_id = %s ORDER BY id",
        (made["id"],),
    ).fetchall()
    assert events == [("create",), ("expire",)]
