"""What the admin actions decide: last admin, identities, keys, contexts, paging, and
the database refusing admin functions to a caller without the grant."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from memory_server.data.pool import request_settings
from memory_server.domain.contexts import parse_context
from memory_server.domain.deadline import Deadline
from memory_server.operations.membership import resolve_caller

from tests.admin.conftest import ALL_SCOPES, call, create_agent_key
from tests.endpoint.conftest import event


@pytest.fixture
def ws(world):  # type: ignore[no-untyped-def]
    return world.workspace()


def test_the_last_admin_cannot_be_removed_or_demoted(ws, admin_service) -> None:  # type: ignore[no-untyped-def]
    alice = ws.person("alice")
    demote = call(
        admin_service, ws.slug, "PUT", f"/members/{alice.subject}", alice, body={"grants": ["read"]}
    )
    assert demote.status == 409 and "at least one" in demote.body["message"]
    remove = call(admin_service, ws.slug, "DELETE", f"/members/{alice.subject}", alice)
    assert remove.status == 409
    # With a second admin, alice may step down.
    bob = ws.person("bob", ("read",))
    promoted = call(
        admin_service,
        ws.slug,
        "PUT",
        f"/members/{bob.subject}",
        alice,
        body={"grants": ["read", "admin"]},
    )
    assert promoted.status == 200 and promoted.body["grants"] == ["read", "admin"]
    assert call(admin_service, ws.slug, "DELETE", f"/members/{alice.subject}", alice).status == 200
    # ...and her admin token no longer reaches the admin API (not a member: 404).
    assert call(admin_service, ws.slug, "GET", "/members", alice).status == 404


def test_an_unchanged_put_audits_nothing(ws, admin_service, owner) -> None:  # type: ignore[no-untyped-def]
    alice, bob = ws.person("alice"), ws.person("bob", ("read",))
    count = "SELECT count(*) FROM memory.audit_outbox WHERE workspace_id = %s"
    before = owner.execute(count, (ws.id,)).fetchone()[0]
    same = call(
        admin_service, ws.slug, "PUT", f"/members/{bob.subject}", alice, body={"grants": ["read"]}
    )
    assert same.status == 200
    assert (
        call(admin_service, ws.slug, "PUT", "/memory", alice, body={"enabled": True}).status == 200
    )
    assert owner.execute(count, (ws.id,)).fetchone()[0] == before


def test_agent_keys_are_bound_to_one_workspace(ws, world, admin_service, directory) -> None:  # type: ignore[no-untyped-def]
    alice = ws.person("alice")
    created = create_agent_key(
        admin_service, ws.slug, alice, "ci", ["memory/write.shared", "memory/read"]
    )
    assert created.status == 201
    key = created.body
    assert key["scopes"] == ["memory/read", "memory/write.shared"]
    assert key["grants"] == ["read", "write:shared"] and key["client_secret"]
    assert directory.clients[key["client_id"]] == (f"{ws.slug}.ci", key["scopes"])
    listed = call(admin_service, ws.slug, "GET", "/agent-keys", alice).body["agent_keys"]
    assert [k["client_id"] for k in listed] == [key["client_id"]]
    assert "client_secret" not in listed[0]  # shown once
    again = create_agent_key(admin_service, ws.slug, alice, "ci", ["memory/read"])
    assert again.status == 409
    # The key is a member that only revocation removes...
    members = call(admin_service, ws.slug, "GET", "/members", alice).body["members"]
    assert any(m["subject"] == key["client_id"] and m["agent_key"] for m in members)
    assert (
        call(admin_service, ws.slug, "DELETE", f"/members/{key['client_id']}", alice).status == 409
    )
    # ...and another workspace's admin cannot adopt or revoke it.
    other = world.workspace()
    carol = other.person("carol")
    adopt = call(
        admin_service,
        other.slug,
        "PUT",
        f"/members/{key['client_id']}",
        carol,
        body={"grants": ["read"]},
    )
    assert adopt.status == 404  # the answer for an identity that does not exist
    steal = call(admin_service, other.slug, "DELETE", f"/agent-keys/{key['client_id']}", carol)
    assert steal.status == 404 and key["client_id"] in directory.clients
    # Revocation: app client deleted, membership gone, so its tokens resolve to nothing.
    revoked = call(admin_service, ws.slug, "DELETE", f"/agent-keys/{key['client_id']}", alice)
    assert revoked.body == {"revoked": key["client_id"], "client_deleted": True}
    assert key["client_id"] not in directory.clients
    assert (
        resolve_caller(
            admin_service.db,
            workspace=ws.slug,
            subject=key["client_id"],
            scopes=ALL_SCOPES,
            context=parse_context(None),
        )
        is None
    )
    assert (
        call(admin_service, ws.slug, "DELETE", f"/agent-keys/{key['client_id']}", alice).status
        == 404
    )
    readd = call(
        admin_service,
        ws.slug,
        "PUT",
        f"/members/{key['client_id']}",
        alice,
        body={"grants": ["read"]},
    )
    assert readd.status == 404  # a revoked key never comes back


def test_a_key_never_has_more_than_its_creators_effective_grants(
    ws, admin_service, directory
) -> None:  # type: ignore[no-untyped-def]
    # An admin by membership without delete, and one whose token lacks write.shared:
    # effective grants are token scopes ∩ membership grants, and keys stay within them.
    dana = ws.person("dana", ("read", "write:shared", "admin"))
    erin = ws.person("erin")
    before = set(directory.clients)
    cases = [
        (dana, ALL_SCOPES, ["memory/read", "memory/delete"], "memory/delete"),
        (
            erin,
            ["memory/read", "memory/admin"],
            ["memory/read", "memory/write.shared"],
            "memory/write.shared",
        ),
        (erin, ["memory/read", "memory/admin"], ["memory/admin"], None),  # admin itself: ok
    ]
    for who, token_scopes, key_scopes, beyond in cases:
        made = create_agent_key(
            admin_service,
            ws.slug,
            who,
            f"k-{uuid.uuid4().hex[:6]}",
            key_scopes,
            scopes=token_scopes,
        )
        if beyond is None:
            assert made.status == 201, made.body
            continue
        assert made.status == 403 and made.body["error"] == "permission_denied", made.body
        assert beyond in made.body["message"]
    # Only the allowed key was created in the pool.
    assert len(set(directory.clients) - before) == 1
    within = create_agent_key(
        admin_service, ws.slug, dana, "within", ["memory/read", "memory/write.shared"]
    )
    assert within.status == 201 and within.body["grants"] == ["read", "write:shared"]


def test_a_failed_key_creation_leaves_no_app_client(
    ws, admin_service, directory, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    alice = ws.person("alice")
    from memory_server.data import admin as admin_data

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("database fell over")

    # Fails inside the key's transaction, after its principal is created.
    monkeypatch.setattr(admin_data, "add_member", broken)
    before = set(directory.clients)
    with pytest.raises(RuntimeError):
        create_agent_key(admin_service, ws.slug, alice, "doomed", ["memory/read"])
    assert set(directory.clients) == before
    monkeypatch.undo()
    keys = call(admin_service, ws.slug, "GET", "/agent-keys", alice)
    assert keys.status == 200 and keys.body["agent_keys"] == []  # rolled back too


def test_agent_keys_need_a_user_pool(ws, admin_service, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    alice = ws.person("alice")
    monkeypatch.setattr(admin_service.admin, "directory", None)
    response = create_agent_key(admin_service, ws.slug, alice, "ci", ["memory/read"])
    assert response.status == 503 and response.body["error"] == "not_configured"


def test_contexts_take_members_only_and_gate_the_mcp_endpoint(ws, admin_service) -> None:  # type: ignore[no-untyped-def]
    alice, bob = ws.person("alice"), ws.person("bob", ("read",))
    stranger = call(
        admin_service,
        ws.slug,
        "PUT",
        "/contexts/dm:x",
        alice,
        body={"members": [alice.subject, "not-a-member"]},
    )
    assert stranger.status == 422 and "not-a-member" in stranger.body["message"]
    bad = call(admin_service, ws.slug, "PUT", "/contexts/team:x", alice, body={"members": []})
    assert bad.status == 422 and bad.body["problems"][0]["rule"] == "context_syntax"
    made = call(
        admin_service, ws.slug, "PUT", "/contexts/dm:ab", alice, body={"members": [alice.subject]}
    )
    assert made.body == {
        "context": "dm:ab",
        "kind": "dm",
        "private": True,
        "members": [alice.subject],
    }

    def mcp_status(who, context: str) -> int:  # type: ignore[no-untyped-def]
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        return int(
            admin_service.invoke(
                event(
                    ws.slug,
                    sub=who.subject,
                    scopes=ALL_SCOPES,
                    body=body,
                    headers={"memory-context": context},
                )
            )["statusCode"]
        )

    assert (mcp_status(alice, "dm:ab"), mcp_status(bob, "dm:ab")) == (200, 403)
    # A private channel's members (here alice) change its members.
    call(admin_service, ws.slug, "PUT", "/contexts/channel:ab", alice, body={"members": []})
    assert mcp_status(bob, "channel:ab") == 403 and mcp_status(alice, "channel:ab") == 403
    both = {"members": [alice.subject, bob.subject]}
    assert (
        call(admin_service, ws.slug, "PUT", "/contexts/channel:ab", alice, body=both).status == 200
    )
    assert mcp_status(bob, "channel:ab") == 200
    listed = call(admin_service, ws.slug, "GET", "/contexts", alice).body
    assert [c["members"] for c in listed["contexts"]] == [
        sorted([alice.subject, bob.subject]),
        [alice.subject],
    ]
    # Unregistered while it holds nothing: the channel is open again, the DM nobody's.
    assert call(admin_service, ws.slug, "DELETE", "/contexts/channel:ab", alice).status == 200
    assert call(admin_service, ws.slug, "DELETE", "/contexts/dm:ab", alice).status == 200
    assert mcp_status(alice, "dm:ab") == 403
    assert call(admin_service, ws.slug, "DELETE", "/contexts/dm:ab", alice).status == 404


def test_context_usage_lists_contexts_holding_records(ws, admin_service) -> None:  # type: ignore[no-untyped-def]
    """Shared records only, and no private context the admin is not in (item 1 of the
    hardening: an admin learns nothing about members' personal records)."""
    alice, bob = ws.person("alice"), ws.person("bob", ("read", "write:personal", "write:shared"))
    ws.agent(alice, "channel:eng").write(
        uri="memory://workspace/notes/a.md", content="a", expected_revision=0
    )
    ws.agent(alice).write(uri="memory://workspace/notes/w.md", content="w", expected_revision=0)
    ws.agent(alice).write(uri="memory://me/notes/b.md", content="b", expected_revision=0)
    ws.agent(bob).write(uri="memory://me/notes/c.md", content="c", expected_revision=0)
    ws.register("channel:bobs", bob)
    ws.agent(bob, "channel:bobs/thread:t").write(
        uri="memory://workspace/notes/d.md", content="d", expected_revision=0
    )
    usage = call(admin_service, ws.slug, "GET", "/contexts", alice).body["in_use"]
    assert usage == [
        {"context": "channel:eng", "records": 1},
        {"context": "workspace", "records": 1},
    ]
    ws.register("channel:bobs", bob, alice)  # now alice hears it: she sees its count
    usage = call(admin_service, ws.slug, "GET", "/contexts", alice).body["in_use"]
    assert {"context": "channel:bobs/thread:t", "records": 1} in usage


def test_memory_off_closes_mcp_but_not_admin(world, admin_service) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace(enabled=False)
    alice = ws.person("alice")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

    def mcp() -> dict:  # type: ignore[type-arg]
        return admin_service.invoke(event(ws.slug, sub=alice.subject, scopes=ALL_SCOPES, body=body))

    assert mcp()["statusCode"] == 404
    assert call(admin_service, ws.slug, "GET", "/memory", alice).body == {"enabled": False}
    assert (
        call(admin_service, ws.slug, "PUT", "/memory", alice, body={"enabled": True}).status == 200
    )
    assert mcp()["statusCode"] == 200


def test_the_audit_trail_pages_without_gaps(ws, admin_service) -> None:  # type: ignore[no-untyped-def]
    alice = ws.person("alice")
    for n in range(1, 8):  # off, on, off, …: seven changes (the workspace starts on)
        call(admin_service, ws.slug, "PUT", "/memory", alice, body={"enabled": n % 2 == 0})
    ws.agent(alice).write(uri="memory://workspace/notes/x.md", content="x", expected_revision=0)
    seen, cursor = [], None
    while True:
        query = "limit=3" + (f"&cursor={cursor}" if cursor else "")
        page = call(admin_service, ws.slug, "GET", "/audit", alice, query=query).body
        seen += page["events"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    ids = [e["id"] for e in seen]
    # The operator's setup (workspace, then alice) opens the trail: 2 + 7 + 1 events.
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids) == 10
    assert seen[0]["operation"] == "create" and seen[0]["uri"] == "memory://workspace/notes/x.md"
    assert [e["operation"] for e in seen[1:]] == ["memory.disable", "memory.enable"] * 3 + [
        "memory.disable",
        "member.add",
        "workspace.create",
    ]
    bad = call(admin_service, ws.slug, "GET", "/audit", alice, query="cursor=abc&limit=3")
    assert bad.status == 422 and bad.body["problems"][0]["field"] == "cursor"


def test_the_database_refuses_admin_functions_without_the_grant(ws, cluster) -> None:  # type: ignore[no-untyped-def]
    """RLS and the SECURITY DEFINER checks, without any application code in between."""
    bob = ws.person("bob", ("read", "write:shared"))
    caller = ws.caller(bob)
    with psycopg.connect(cluster.runtime_url) as conn:
        for statement, params in [
            ("SELECT * FROM memory.admin_joinable_principal('x')", ()),
            ("SELECT memory.admin_create_agent_key('x', 'x', '{}')", ()),
            ("SELECT memory.admin_revoke_agent_key('x')", ()),
            ("SELECT * FROM memory.admin_context_state('channel:x')", ()),
            ("SELECT memory.admin_register_context('channel:x', '{}')", ()),
            ("SELECT memory.admin_unregister_context('channel:x')", ()),
            ("SELECT * FROM memory.admin_delete_context('channel:x', 'r')", ()),
            ("SELECT * FROM memory.admin_invite('x', '{read}', NULL, '1 day', 10)", ()),
            ("SELECT * FROM memory.admin_invitations()", ()),
            ("SELECT memory.admin_revoke_invitation(gen_random_uuid())", ()),
        ]:
            with conn.transaction():
                conn.execute(
                    "SELECT set_config('app.workspace_id', %(workspace_id)s, true),"
                    " set_config('app.principal_id', %(principal_id)s, true),"
                    " set_config('app.grants', %(grants)s, true)",
                    request_settings(caller, Deadline().remaining_ms()),
                )
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(statement, params)
        with conn.transaction():
            conn.execute(
                "SELECT set_config('app.workspace_id', %(workspace_id)s, true),"
                " set_config('app.grants', %(grants)s, true)",
                request_settings(caller, Deadline().remaining_ms()),
            )
            assert conn.execute("SELECT count(*) FROM memory.admin_context_usage()").fetchone() == (
                0,
            )
            changed = conn.execute(
                "UPDATE memory.memberships SET grants = '{read,admin}' WHERE workspace_id = %s",
                (ws.id,),
            )
            assert changed.rowcount == 0  # RLS: no admin grant, no row to change
