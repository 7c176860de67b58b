"""Each operation against real PostgreSQL: the happy paths and the rules they enforce."""

from __future__ import annotations

import psycopg
import pytest
from memory_server.domain.arguments import ListArgs, ReadArgs
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import ToolError
from memory_server.operations import memory_list, memory_read

from tests.builders import table_locked


def error_of(call, **kwargs) -> ToolError:  # type: ignore[no-untyped-def]
    with pytest.raises(ToolError) as caught:
        call(**kwargs)
    return caught.value


def error_code(call, **kwargs) -> str:  # type: ignore[no-untyped-def]
    """The code of the tool error ``call(**kwargs)`` must raise."""
    return error_of(call, **kwargs).code


def test_write_read_replace_and_history(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.agent(ws.person("alice"))
    created = alice.write(
        uri="memory://workspace/memories/deploy.md",
        content="# Deploys\nFridays are frozen.",
        expected_revision=0,
        source="test",
    )
    assert created["revision"] == 1 and created["context"] == "workspace"
    replaced = alice.write(
        uri="memory://workspace/memories/deploy.md",
        content="# Deploys\nThursdays too.",
        expected_revision=1,
    )
    assert replaced["revision"] == 2 and replaced["id"] == created["id"]

    read = alice.read(uri="memory://workspace/memories/deploy.md", history=True)
    assert read["content"] == "# Deploys\nThursdays too."
    assert read["title"] == "Deploys"
    assert read["trust"] == "recorded-data"
    assert read["created_by"] == "alice" and read["updated_by"] == "alice"
    assert read["created_by_kind"] == "person" and read["updated_by_kind"] == "person"
    assert {(h["by"], h["by_kind"]) for h in read["history"]} == {("alice", "person")}
    assert [h["operation"] for h in read["history"]] == ["replace", "create"]
    assert read["history"][1]["source"] == "test"

    by_id = alice.read(uri=f"memory://record/{created['id']}")
    assert by_id["uri"] == "memory://workspace/memories/deploy.md"
    first = alice.read(uri=f"memory://record/{created['id']}/revisions/1")
    assert first["content"] == "# Deploys\nFridays are frozen."


def test_stale_and_duplicate_creates_conflict(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.agent(ws.person("alice"))
    alice.write(uri="memory://me/notes/a.md", content="x", expected_revision=0)
    err = error_of(alice.write, uri="memory://me/notes/a.md", content="y", expected_revision=0)
    assert err.code == "revision_conflict" and err.details["current_revision"] == 1
    err = error_of(alice.write, uri="memory://me/notes/a.md", content="y", expected_revision=5)
    assert err.code == "revision_conflict" and err.details["current_revision"] == 1


def test_read_windows_cut_on_character_boundaries(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.agent(ws.person("alice"))
    text = "日本語🙂" * 100
    alice.write(uri="memory://me/notes/u.md", content=text, expected_revision=0)
    collected, offset = "", 0
    while offset is not None:
        page = alice.read(uri="memory://me/notes/u.md", offset=offset, max_bytes=10)
        assert len(page["content"].encode()) <= 10
        collected += page["content"]
        offset = page["next_offset"]
        assert page["truncated"] == (offset is not None)
    assert collected == text
    assert error_code(alice.read, uri="memory://me/notes/u.md", offset=1) == "invalid_argument"


def test_list_pages_with_bound_cursors(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice_p, bob_p = ws.person("alice"), ws.person("bob")
    alice, bob = ws.agent(alice_p), ws.agent(bob_p)
    for i in range(7):
        alice.write(
            uri=f"memory://workspace/notes/n{i}.md", content=f"note {i}", expected_revision=0
        )
    alice.write(uri="memory://me/notes/private.md", content="mine", expected_revision=0)
    seen, cursor = [], None
    while True:
        page = alice.list(limit=3, **({"cursor": cursor} if cursor else {}))
        assert len(page["items"]) <= 3 and page["trust"] == "recorded-data"
        assert all("content" not in item for item in page["items"])
        seen += [item["uri"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        # Another caller cannot use it; neither can the same caller from another context.
        assert error_code(bob.list, limit=3, cursor=cursor) == "invalid_argument"
        assert (
            error_code(ws.agent(alice_p, "channel:eng").list, limit=3, cursor=cursor)
            == "invalid_argument"
        )
    assert len(seen) == 8 and len(set(seen)) == 8
    assert "memory://me/notes/private.md" in seen
    only = alice.list(prefix="memory://workspace/notes/")
    assert len(only["items"]) == 7
    assert [i["uri"] for i in bob.list()["items"]].count("memory://me/notes/private.md") == 0


def test_move_keeps_id_and_refuses_taken_paths(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.agent(ws.person("alice"))
    a = alice.write(uri="memory://workspace/notes/a.md", content="a", expected_revision=0)
    alice.write(uri="memory://workspace/notes/b.md", content="b", expected_revision=0)
    err = error_of(
        alice.move,
        uri="memory://workspace/notes/a.md",
        new_uri="memory://workspace/notes/b.md",
        expected_revision=1,
    )
    assert err.code == "already_exists"
    moved = alice.move(
        uri="memory://workspace/notes/a.md",
        new_uri="memory://workspace/notes/c.md",
        expected_revision=1,
    )
    assert moved == {"uri": "memory://workspace/notes/c.md", "id": a["id"], "revision": 2}
    assert error_code(alice.read, uri="memory://workspace/notes/a.md") == "not_found"
    history = alice.read(uri="memory://workspace/notes/c.md", history=True)["history"]
    assert (
        history[0]["operation"] == "move" and history[1]["uri"] == "memory://workspace/notes/a.md"
    )


def test_delete_purges_bodies_and_keeps_who_and_when(world, owner) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.agent(ws.person("alice"))
    a = alice.write(uri="memory://workspace/notes/a.md", content="secret v1", expected_revision=0)
    alice.write(uri="memory://workspace/notes/a.md", content="secret v2", expected_revision=1)
    assert (
        error_code(alice.delete, uri="memory://workspace/notes/a.md", expected_revision=1)
        == "revision_conflict"
    )
    gone = alice.delete(uri="memory://workspace/notes/a.md", expected_revision=2)
    assert gone == {"uri": "memory://workspace/notes/a.md", "id": a["id"], "deleted_revision": 2}
    assert error_code(alice.read, uri=f"memory://record/{a['id']}/revisions/1") == "not_found"
    rows = owner.execute(
        "SELECT revision, operation, body, title FROM memory.revisions WHERE memory_id = %s ORDER BY revision",
        (a["id"],),
    ).fetchall()
    assert rows == [
        (1, "create", None, None),
        (2, "replace", None, None),
        (3, "delete", None, None),
    ]
    assert owner.execute(
        "SELECT count(*) FROM memory.search_documents WHERE memory_id = %s", (a["id"],)
    ).fetchone() == (0,)
    audit = owner.execute(
        "SELECT operation, revision FROM memory.audit_outbox WHERE memory_id = %s ORDER BY id",
        (a["id"],),
    ).fetchall()
    assert audit == [("create", 1), ("replace", 2), ("delete", 3)]


def test_grants_are_enforced_by_the_operations(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.agent(ws.person("alice"))
    made = alice.write(uri="memory://workspace/notes/a.md", content="a", expected_revision=0)
    reader = ws.agent(ws.service("ci-bot", ("read",)))
    readonly_alice = ws.agent(alice.caller and ws.person("alice2"), scopes=["memory/read"])
    for agent in (reader, readonly_alice):
        assert (
            error_code(
                agent.write, uri="memory://workspace/notes/a.md", content="x", expected_revision=1
            )
            == "permission_denied"
        )
        assert (
            error_code(agent.delete, uri="memory://workspace/notes/a.md", expected_revision=1)
            == "permission_denied"
        )
        assert (
            error_code(
                agent.move,
                uri=f"memory://record/{made['id']}",
                new_uri="memory://workspace/notes/z.md",
                expected_revision=1,
            )
            == "permission_denied"
        )
        assert (
            error_code(
                agent.remember,
                uri="memory://workspace/notes/a.md",
                fact="x",
                idempotency_key="k-12345678",
            )
            == "permission_denied"
        )
        assert (
            error_code(
                agent.write, uri="memory://workspace/notes/new.md", content="x", expected_revision=0
            )
            == "permission_denied"
        )
        # By path the grant is checked for the namespace before any record is looked
        # up: the answer does not tell whether one is there.
        for uri in ("memory://workspace/notes/a.md", "memory://workspace/notes/none.md"):
            assert (
                error_code(agent.write, uri=uri, content="x", expected_revision=1),
                error_code(agent.delete, uri=uri, expected_revision=1),
            ) == ("permission_denied", "permission_denied")
    # A service has no personal namespace unless assigned one.
    assert error_code(reader.read, uri="memory://me/notes/a.md") == "not_found"
    assert alice.read(uri="memory://workspace/notes/a.md")["revision"] == 1


def test_bad_input_names_the_rule(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.agent(ws.person("alice"))
    cases = {
        "memory://workspace/memories/../x.md": "'..'",
        "memory://workspace/memories/a//b.md": "empty segment",
        "memory://workspace/memories/a%2Fb.md": "percent",
        "memory://workspace/memories/Cafe\u0301.md": "NFC",
        "memory://workspace/memories/noext": "extension",
        "memory://elsewhere/memories/a.md": "namespace",
        "memory://workspace/secrets/a.md": "kind",
    }
    for uri, rule in cases.items():
        err = error_of(alice.write, uri=uri, content="x", expected_revision=0)
        assert err.code == "invalid_argument" and rule in err.message, (uri, err.message)
    assert error_code(
        alice.write, uri="memory://me/notes/a.md", content="x" * 70000, expected_revision=0
    ) in ("invalid_argument", "too_large")
    assert (
        error_code(
            alice.write, uri="memory://me/notes/a.md", content="é" * 40000, expected_revision=0
        )
        == "too_large"
    )
    assert (
        error_code(alice.write, uri="memory://me/notes/a.md", content="a\x00b", expected_revision=0)
        == "invalid_argument"
    )
    assert (
        error_code(
            alice.write, uri="memory://me/notes/a.md", content="x", expected_revision=0, owner="bob"
        )
        == "invalid_argument"
    )
    assert (
        error_code(alice.write, uri="memory://me/notes/a.md", content="x", expected_revision="0")
        == "invalid_argument"
    )
    assert (
        error_code(
            alice.write,
            uri="memory://workspace/skills/tool/SKILL.md",
            content="no front matter",
            expected_revision=0,
        )
        == "invalid_argument"
    )
    skill = "---\nname: tool\ndescription: Does a thing\n---\nSteps."
    assert (
        alice.write(
            uri="memory://workspace/skills/tool/SKILL.md", content=skill, expected_revision=0
        )["revision"]
        == 1
    )
    assert alice.read(uri="memory://workspace/skills/tool/SKILL.md")["title"] == "tool"
    assert alice.list(prefix="memory://me/")["items"] == []


def test_one_round_trip_reads_fail_loudly_and_leave_the_connection_clean(world, cluster) -> None:  # type: ignore[no-untyped-def]
    """Reads and lists send BEGIN, the settings, the statement and COMMIT in one sync:
    a statement that times out there is a `timeout` error (never an empty answer),
    and the pooled connection is back to idle for the next request."""
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    written = agent.write(uri="memory://workspace/notes/a.md", content="x", expected_revision=0)
    with table_locked(cluster.owner_url, "memory.memories"):
        calls = [
            lambda: memory_read(
                agent.store, agent.caller, ReadArgs(uri=written["uri"]), Deadline.after(0.3)
            ),
            lambda: memory_list(agent.store, agent.caller, ListArgs(), Deadline.after(0.3)),
        ]
        for call in calls:
            with pytest.raises(ToolError) as caught:
                call()
            assert caught.value.code == "timeout"
    with agent.store.db.pool.connection() as conn:
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert agent.read(uri=written["uri"])["revision"] == 1
    assert [i["id"] for i in agent.list()["items"]] == [written["id"]]
