"""The connection pool: dead pooled connections must not cost a request its answer."""

from __future__ import annotations

import time
import uuid

import psycopg
from memory_server.data.pool import Database
from memory_server.domain.arguments import ReadArgs, parse_args
from memory_server.domain.deadline import Deadline
from memory_server.operations import memory_read
from memory_server.operations.store import Store


def _backends(admin: psycopg.Connection, app: str) -> list[int]:
    rows = admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (app,)
    ).fetchall()
    return [r[0] for r in rows]


def test_a_request_after_every_pooled_connection_died_is_answered(world, cluster) -> None:  # type: ignore[no-untyped-def]
    """As after a database failover or a proxy dropping idle connections: every idle
    connection in the pool is dead. The next request must still be answered within
    its deadline, by a fresh connection, and not wait out a backoff per dead one."""
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    written = agent.write(uri="memory://workspace/notes/n.md", content="kept", expected_revision=0)
    app = f"pooltest-{uuid.uuid4().hex[:8]}"
    db = Database(f"{cluster.runtime_url}?application_name={app}", min_size=3, max_size=3)
    try:
        db.pool.wait(timeout=10)
        store = Store(db, agent.store.cursor_secret)
        args = parse_args(ReadArgs, {"uri": "memory://workspace/notes/n.md"})
        assert memory_read(store, agent.caller, args)["id"] == written["id"]
        with psycopg.connect(cluster.admin_url, autocommit=True) as admin:
            killed = _backends(admin, app)
            assert len(killed) == 3
            for pid in killed:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            for _ in range(100):  # until the server has closed them all
                if not set(killed) & set(_backends(admin, app)):
                    break
                time.sleep(0.05)
        for _ in range(3):
            result = memory_read(store, agent.caller, args, Deadline.after(2.0))
            assert result["id"] == written["id"] and result["content"] == "kept"
    finally:
        db.close()
