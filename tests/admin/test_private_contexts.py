"""Private channels and DMs stay private from the workspace's admins (issue 23, item 2):
only a private context's members change its members or unregister it, a DM's
participants are fixed, a private context holding records is never unregistered, and an
admin outside it may delete it wholesale without ever reading it. The admin API answers
by the rules of ``admin/rules.py``; the database refuses the same to raw SQL."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from tests.admin.conftest import ALL_SCOPES, call
from tests.builders import set_caller_settings
from tests.endpoint.conftest import event

MEMBERS_ONLY = "private_context_members"


@pytest.fixture
def team(world):  # type: ignore[no-untyped-def]
    """alice and dana administer; bob writes; dana and bob share a private channel
    (holding records, in a thread too, shared and personal) and a DM; alice is in
    neither."""
    ws = world.workspace()
    alice, dana = ws.person("alice"), ws.person("dana")
    bob = ws.person("bob", ("read", "write:personal", "write:shared", "delete"))
    ws.register("channel:hush", dana, bob)
    ws.register("dm:dana-bob", dana, bob)
    ws.register("channel:quiet", dana, bob)  # private, and empty
    channel = ws.agent(bob, "channel:hush")
    made = channel.write(
        uri="memory://workspace/notes/plan.md", content="SECRET plan v1", expected_revision=0
    )
    channel.write(
        uri="memory://workspace/notes/plan.md", content="SECRET plan v2", expected_revision=1
    )
    channel.write(uri="memory://me/notes/mine.md", content="SECRET mine", expected_revision=0)
    ws.agent(bob, "channel:hush/thread:t1").write(
        uri="memory://workspace/notes/reply.md", content="SECRET reply", expected_revision=0
    )
    ws.agent(bob, "dm:dana-bob").write(
        uri="memory://workspace/notes/dm.md", content="SECRET dm", expected_revision=0
    )
    ws.agent(bob).write(uri="memory://workspace/notes/open.md", content="open", expected_revision=0)
    return ws, alice, dana, bob, made["id"]


def listens(service: Any, ws: Any, who: Any, context: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    found = service.invoke(
        event(
            ws.slug,
            sub=who.subject,
            scopes=ALL_SCOPES,
            body=body,
            headers={"memory-context": context},
        )
    )
    return int(found["statusCode"])


def context_members(owner: psycopg.Connection, ws: Any, key: str) -> set[uuid.UUID]:
    rows = owner.execute(
        "SELECT principal_id FROM memory.context_members WHERE workspace_id = %s "
        "AND context_key = %s",
        (ws.id, key),
    ).fetchall()
    return {r[0] for r in rows}


def test_an_admin_outside_a_private_context_changes_nothing_and_learns_nothing(
    team, admin_service, owner
) -> None:  # type: ignore[no-untyped-def]
    ws, alice, dana, bob, _ = team
    before = {key: context_members(owner, ws, key) for key in ("channel:hush", "dm:dana-bob")}
    trail = "SELECT count(*) FROM memory.audit_outbox WHERE workspace_id = %s"
    events = owner.execute(trail, (ws.id,)).fetchone()[0]
    answers = []
    for key in ("channel:hush", "dm:dana-bob", "channel:quiet"):
        for members in (
            [alice.subject],  # adding herself
            [alice.subject, dana.subject, bob.subject],  # joining them
            [dana.subject, bob.subject],  # exactly the members it has: still refused
            [dana.subject],  # dropping someone
            [],
        ):
            answers.append(
                call(
                    admin_service,
                    ws.slug,
                    "PUT",
                    f"/contexts/{key}",
                    alice,
                    body={"members": members},
                )
            )
        answers.append(call(admin_service, ws.slug, "DELETE", f"/contexts/{key}", alice))
    # One answer, whatever the context holds, whoever is in it and whatever was asked:
    # it says only what alice knows (she is not in it).
    assert {(a.status, repr(a.body)) for a in answers} == {(403, repr(answers[0].body))}
    assert answers[0].body["error"] == "permission_denied"
    assert [p["rule"] for p in answers[0].body["problems"]] == [MEMBERS_ONLY]
    assert {key: context_members(owner, ws, key) for key in before} == before
    assert owner.execute(trail, (ws.id,)).fetchone()[0] == events
    for key in ("channel:hush", "channel:hush/thread:t1", "dm:dana-bob"):
        assert listens(admin_service, ws, alice, key) == 403, key

    # The registry shows alice that they exist, not who is in them; dana sees hers.
    seen = {
        c["context"]: c["members"]
        for c in call(admin_service, ws.slug, "GET", "/contexts", alice).body["contexts"]
    }
    assert seen == {"channel:hush": None, "channel:quiet": None, "dm:dana-bob": None}
    theirs = {
        c["context"]: c["members"]
        for c in call(admin_service, ws.slug, "GET", "/contexts", dana).body["contexts"]
    }
    assert theirs["channel:hush"] == sorted([dana.subject, bob.subject])


def test_a_private_channels_members_change_it_and_a_dms_participants_are_fixed(
    team, admin_service
) -> None:  # type: ignore[no-untyped-def]
    ws, alice, dana, bob, _ = team
    # dana, an admin in the channel, may take alice in.
    joined = call(
        admin_service,
        ws.slug,
        "PUT",
        "/contexts/channel:hush",
        dana,
        body={"members": [dana.subject, bob.subject, alice.subject]},
    )
    assert joined.status == 200 and alice.subject in joined.body["members"]
    assert listens(admin_service, ws, alice, "channel:hush") == 200
    # A DM's participants are fixed, for its participants too.
    for members in ([dana.subject, bob.subject, alice.subject], [dana.subject]):
        fixed = call(
            admin_service,
            ws.slug,
            "PUT",
            "/contexts/dm:dana-bob",
            dana,
            body={"members": members},
        )
        assert fixed.status == 409, fixed.body
        assert fixed.body["problems"][0]["rule"] == "dm_participants_fixed"
    same = call(
        admin_service,
        ws.slug,
        "PUT",
        "/contexts/dm:dana-bob",
        dana,
        body={"members": [bob.subject, dana.subject]},
    )
    assert same.status == 200 and same.body["members"] == sorted([dana.subject, bob.subject])
    # A new DM is registered with whoever its participants are (alice need not be one).
    new = call(
        admin_service,
        ws.slug,
        "PUT",
        "/contexts/dm:bob-dana-2",
        alice,
        body={"members": [bob.subject, dana.subject]},
    )
    assert new.status == 200 and new.body["members"] is None  # not hers to see


def test_a_private_context_that_holds_records_is_not_unregistered(team, admin_service) -> None:  # type: ignore[no-untyped-def]
    ws, alice, dana, bob, _ = team
    for key in ("channel:hush", "dm:dana-bob"):
        kept = call(admin_service, ws.slug, "DELETE", f"/contexts/{key}", dana)
        assert kept.status == 409, kept.body
        assert kept.body["problems"][0]["rule"] == "private_context_holds_records"
        assert listens(admin_service, ws, alice, key) == 403  # still closed to her
    # A record only in a thread holds the channel too.
    ws.register("channel:threads", dana, bob)
    ws.agent(bob, "channel:threads/thread:x").write(
        uri="memory://me/notes/t.md", content="t", expected_revision=0
    )
    assert call(admin_service, ws.slug, "DELETE", "/contexts/channel:threads", dana).status == 409
    # An empty one is its members' to unregister: it is open again.
    assert call(admin_service, ws.slug, "DELETE", "/contexts/channel:quiet", dana).status == 200
    assert listens(admin_service, ws, alice, "channel:quiet") == 200


def test_an_admin_outside_deletes_a_private_context_wholesale_without_reading_it(
    team, admin_service, owner
) -> None:  # type: ignore[no-untyped-def]
    ws, alice, _, bob, plan_id = team
    ids = [
        r[0]
        for r in owner.execute(
            "SELECT id FROM memory.memories WHERE workspace_id = %s "
            "AND split_part(context_key, '/', 1) = 'channel:hush'",
            (ws.id,),
        ).fetchall()
    ]
    assert len(ids) == 3  # plan (two revisions), bob's own note, the thread's reply
    deleted = call(admin_service, ws.slug, "DELETE", "/contexts/channel:hush/records", alice)
    assert deleted.status == 200, deleted.body
    assert deleted.body == {"deleted": "channel:hush", "records": 3, "revisions_purged": 4}
    assert "SECRET" not in repr(deleted.body)

    # Deleted as memory_delete deletes: no record, every revision's body and title
    # gone, a tombstone by alice after each, audited by id only.
    assert (
        owner.execute(
            "SELECT count(*) FROM memory.memories WHERE id = ANY (%s)", (ids,)
        ).fetchone()[0]
        == 0
    )
    history = owner.execute(
        "SELECT memory_id, revision, operation, title, body, writer_id FROM memory.revisions "
        "WHERE memory_id = ANY (%s) ORDER BY memory_id, revision",
        (ids,),
    ).fetchall()
    assert all(title is None and body is None for _, _, _, title, body, _ in history)
    tombstones = [(m, r, w) for m, r, op, _, _, w in history if op == "delete"]
    assert len(tombstones) == 3 and {w for _, _, w in tombstones} == {alice.id}
    assert (plan_id, 3, alice.id) in [(str(m), r, w) for m, r, w in tombstones]
    rows = owner.execute(
        "SELECT operation, uri, writer_id, details FROM memory.audit_outbox "
        "WHERE workspace_id = %s ORDER BY id DESC LIMIT 4",
        (ws.id,),
    ).fetchall()
    assert rows[0][0] == "context.delete" and rows[0][3] == {
        "context": "channel:hush",
        "records": 3,
    }
    assert sorted(r[1] for r in rows[1:]) == sorted(f"memory://record/{i}" for i in ids)
    assert {r[0] for r in rows[1:]} == {"delete"} and {r[2] for r in rows[1:]} == {alice.id}
    assert "SECRET" not in repr(rows)
    # Nothing of it is readable anywhere now; the open channel's record is untouched.
    leftovers = owner.execute(
        "SELECT count(*) FROM memory.revisions WHERE workspace_id = %s AND body LIKE 'SECRET%%'"
        " AND split_part(context_key, '/', 1) = 'channel:hush'",
        (ws.id,),
    ).fetchone()[0]
    assert leftovers == 0
    assert ws.agent(bob).read(uri="memory://workspace/notes/open.md")["content"] == "open"

    # It stays registered and nobody's: its former members no longer hear it, nothing
    # anyone writes there lands in an open channel.
    assert listens(admin_service, ws, bob, "channel:hush") == 403
    assert listens(admin_service, ws, alice, "channel:hush") == 403
    # Nobody's and empty: any admin may now register it again, or unregister it.
    again = call(
        admin_service,
        ws.slug,
        "PUT",
        "/contexts/channel:hush",
        alice,
        body={"members": [alice.subject]},
    )
    assert again.status == 200 and again.body["members"] == [alice.subject]
    heard = ws.agent(alice, "channel:hush").list()["items"]
    assert [i["uri"] for i in heard] == ["memory://workspace/notes/open.md"]  # nothing old

    # A DM too; an open channel has no wholesale delete (the tools delete its records).
    dm = call(admin_service, ws.slug, "DELETE", "/contexts/dm:dana-bob/records", alice)
    assert dm.status == 200 and dm.body["records"] == 1
    open_channel = call(admin_service, ws.slug, "DELETE", "/contexts/channel:eng/records", alice)
    assert open_channel.status == 404
    thread = call(admin_service, ws.slug, "DELETE", "/contexts/channel:x/thread:y/records", alice)
    assert thread.status == 422 and thread.body["problems"][0]["rule"] == "channel_or_dm"


def test_a_dm_left_with_records_is_not_registered_again_with_others(
    world, admin_service, owner
) -> None:  # type: ignore[no-untyped-def]
    """A DM unregistered with records in it (before this rule existed) is nobody's; it
    is not handed to new participants until its records are deleted."""
    ws = world.workspace()
    alice, bob = ws.person("alice"), ws.person("bob")
    ws.register("dm:old", bob)
    ws.agent(bob, "dm:old").write(
        uri="memory://workspace/notes/x.md", content="x", expected_revision=0
    )
    owner.execute(
        "DELETE FROM memory.contexts WHERE workspace_id = %s AND context_key = 'dm:old'", (ws.id,)
    )
    taken = call(
        admin_service, ws.slug, "PUT", "/contexts/dm:old", alice, body={"members": [alice.subject]}
    )
    assert taken.status == 409 and taken.body["problems"][0]["rule"] == "dm_participants_fixed"
    assert call(admin_service, ws.slug, "DELETE", "/contexts/dm:old/records", alice).status == 200
    fresh = call(
        admin_service, ws.slug, "PUT", "/contexts/dm:old", alice, body={"members": [alice.subject]}
    )
    assert fresh.status == 200


def test_the_runtime_role_cannot_bypass_the_rules_in_sql(team, cluster, owner) -> None:  # type: ignore[no-untyped-def]
    """alice's (an admin outside) and dana's (an admin inside) settings, raw SQL, no
    application code in between: what the admin API refuses, the database refuses."""
    ws, alice, dana, bob, _ = team
    before = {key: context_members(owner, ws, key) for key in ("channel:hush", "dm:dana-bob")}
    outside = [
        (
            "INSERT INTO memory.context_members VALUES (%s, 'channel:hush', %s)",
            (ws.id, alice.id),
        ),
        ("DELETE FROM memory.contexts WHERE workspace_id = %s", (ws.id,)),
        ("DELETE FROM memory.context_members WHERE workspace_id = %s", (ws.id,)),
        ("UPDATE memory.contexts SET private = false WHERE workspace_id = %s", (ws.id,)),
        (
            "INSERT INTO memory.contexts VALUES (%s, 'channel:new', 'channel', true)",
            (ws.id,),
        ),
        ("SELECT memory.admin_register_context('channel:hush', %s)", ([alice.id, bob.id],)),
        ("SELECT memory.admin_register_context('dm:dana-bob', %s)", ([alice.id],)),
        ("SELECT memory.admin_unregister_context('channel:hush')", ()),
        ("SELECT memory.admin_unregister_context('channel:quiet')", ()),
        # The helpers answer only inside the admin functions.
        ("SELECT * FROM memory.context_state(%s, 'channel:hush', %s)", (ws.id, alice.id)),
        ("SELECT * FROM memory.lock_private_context(%s, 'channel:hush', %s)", (ws.id, alice.id)),
    ]
    inside = [
        # dana is in them, yet a DM's participants stay and records keep them closed.
        ("SELECT memory.admin_register_context('dm:dana-bob', %s)", ([dana.id],)),
        ("SELECT memory.admin_unregister_context('channel:hush')", ()),
        ("SELECT memory.admin_unregister_context('dm:dana-bob')", ()),
    ]
    with psycopg.connect(cluster.runtime_url) as conn:
        for who, statements, error in (
            (alice, outside, psycopg.errors.InsufficientPrivilege),
            (dana, inside, psycopg.errors.CheckViolation),
        ):
            for sql, params in statements:
                with conn.transaction():
                    set_caller_settings(conn, ws.caller(who))
                    with pytest.raises(error):
                        conn.execute(sql, params)
        with conn.transaction():
            set_caller_settings(conn, ws.caller(alice))
            # Who is in a private context is not alice's to read.
            visible = conn.execute(
                "SELECT count(*) FROM memory.context_members WHERE workspace_id = %s", (ws.id,)
            ).fetchone()
            assert visible == (0,)
            # Her wholesale delete never returns what it deletes.
            assert conn.execute(
                "SELECT * FROM memory.admin_delete_context('channel:quiet', 'r')"
            ).fetchall() == [(0, 0)]
    assert {key: context_members(owner, ws, key) for key in before} == before
    assert owner.execute(
        "SELECT private FROM memory.contexts WHERE workspace_id = %s AND context_key = "
        "'channel:hush'",
        (ws.id,),
    ).fetchone() == (True,)
