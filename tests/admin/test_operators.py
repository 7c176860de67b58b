"""Operator commands as the owner role: workspaces, and erasure of a person."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from memory_server.admin import operators
from memory_server.domain.contexts import parse_context
from memory_server.domain.errors import AdminError
from memory_server.operations.membership import resolve_caller

from tests.admin.conftest import ALL_SCOPES, FakeDirectory, call
from tests.builders import resolve_with_all_scopes


def every_row(owner: psycopg.Connection) -> dict[str, list[str]]:
    """Every row of every table in the schema, as text (the owner sees them all)."""
    tables = [
        r[0]
        for r in owner.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'memory' AND table_type = 'BASE TABLE'"
        ).fetchall()
    ]
    assert {"memories", "revisions", "search_documents", "audit_outbox"} <= set(tables)
    return {
        table: [r[0] for r in owner.execute(f"SELECT t::text FROM memory.{table} AS t").fetchall()]
        for table in tables
    }


def traces(owner: psycopg.Connection, *needles: str) -> list[tuple[str, str]]:
    return [
        (table, needle)
        for table, rows in every_row(owner).items()
        for row in rows
        for needle in needles
        if needle in row
    ]


def test_create_list_and_delete_a_workspace(world, owner, admin_service) -> None:  # type: ignore[no-untyped-def]
    slug = f"op-{uuid.uuid4().hex[:10]}"
    subject = f"sub-{uuid.uuid4().hex[:10]}"
    made = operators.create_workspace(
        owner, slug, admin_subject=subject, admin_handle="olga", memory_enabled=False
    )
    assert made.slug == slug and made.memory_enabled is False
    with pytest.raises(AdminError) as taken:
        operators.create_workspace(owner, slug, admin_subject=subject, admin_handle="olga")
    assert taken.value.status == 409
    with pytest.raises(AdminError) as bad:
        operators.create_workspace(owner, "Bad Slug", admin_subject=subject, admin_handle="o")
    assert bad.value.status == 422 and bad.value.problems[0]["field"] == "slug"

    # The first admin administers it through the API, and everything is audited.
    olga = type("P", (), {"subject": subject})()
    assert call(admin_service, slug, "PUT", "/memory", olga, body={"enabled": True}).status == 200
    trail = call(admin_service, slug, "GET", "/audit", olga).body["events"]
    assert [e["operation"] for e in trail] == ["memory.enable", "member.add", "workspace.create"]
    assert trail[-1]["actor"] == str(operators.OPERATOR) and trail[-1]["source"] == "operator"

    key = call(
        admin_service,
        slug,
        "POST",
        "/agent-keys",
        olga,
        body={"name": "k", "scopes": ["memory/read"]},
    ).body
    membership = resolve_caller(
        admin_service.db,
        workspace=slug,
        subject=subject,
        scopes=ALL_SCOPES,
        context=parse_context("channel:x"),
    )
    assert membership is not None
    from memory_server.domain.arguments import WriteArgs
    from memory_server.operations import memory_write

    marker = f"zebra{uuid.uuid4().hex[:8]}"  # no other test's record contains it
    memory_write(
        admin_service.store,
        membership.caller,
        WriteArgs(uri="memory://workspace/notes/n.md", content=marker, expected_revision=0),
    )
    listed = {w.slug: w for w in operators.list_workspaces(owner)}
    assert listed[slug].records == 1 and listed[slug].admins == 1 and listed[slug].agent_keys == 1

    directory = FakeDirectory(clients={key["client_id"]: ("k", ["memory/read"])})
    gone = operators.delete_workspace(owner, slug, directory=directory)
    assert (gone.records, gone.revisions, gone.members, gone.contexts) == (1, 1, 2, 0)
    assert gone.audit_events >= 5
    assert gone.agent_clients == gone.agent_clients_deleted == [key["client_id"]]
    assert slug not in {w.slug for w in operators.list_workspaces(owner)}
    assert traces(owner, made.id, key["client_id"], marker) == []
    with pytest.raises(AdminError) as missing:
        operators.delete_workspace(owner, slug)
    assert missing.value.status == 404


def test_erasing_a_person_leaves_no_trace_of_their_personal_content(
    world, owner, admin_service
) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:8]
    one, two = world.workspace(), world.workspace()
    handle = f"dave-{tag}"
    dave = one.person(handle)
    two.add(dave)
    bob = one.person(f"bob-{tag}")
    one.register("dm:dave-bob", dave, bob)

    secret = f"SECRET-{tag}"
    me = one.agent(dave)
    me.write(
        uri=f"memory://me/notes/health-{tag}.md",
        content=f"# {secret} diagnosis",
        expected_revision=0,
        source=f"phone-{tag}",
    )
    me.write(uri="memory://me/notes/diary.md", content=f"{secret} day one", expected_revision=0)
    me.write(uri="memory://me/notes/diary.md", content=f"{secret} day two", expected_revision=1)
    me.remember(
        uri="memory://me/memories/prefs.md",
        fact=f"{secret} likes tea",
        idempotency_key=f"key-{tag}",
    )
    gone = me.write(uri=f"memory://me/notes/old-{tag}.md", content=secret, expected_revision=0)
    me.delete(uri=f"memory://me/notes/old-{tag}.md", expected_revision=gone["revision"])
    one.agent(dave, "dm:dave-bob").write(
        uri="memory://me/notes/dm.md", content=secret, expected_revision=0
    )
    two.agent(dave).write(uri="memory://me/notes/two.md", content=secret, expected_revision=0)
    # Shared work stays: one record dave created, one bob created and dave changed.
    shared = f"SHARED-{tag}"
    me.write(uri="memory://workspace/notes/plan.md", content=f"{shared} plan", expected_revision=0)
    bobs = one.agent(bob)
    bobs.write(uri="memory://workspace/notes/bob.md", content="v1", expected_revision=0)
    me.write(uri="memory://workspace/notes/bob.md", content=f"{shared} v2", expected_revision=1)
    # Admin work names dave's id in audit details; an agent key he created names him too.
    assert (
        call(
            admin_service,
            two.slug,
            "POST",
            "/invitations",
            dave,
            body={"subject": f"new-{tag}", "grants": ["read"]},
        ).status
        == 201
    )
    # A third workspace invited him; he had not accepted yet.
    three = world.workspace()
    inviter = three.person(f"ivy-{tag}")
    assert (
        call(
            admin_service,
            three.slug,
            "POST",
            "/invitations",
            inviter,
            body={"subject": dave.subject, "grants": ["read"]},
        ).status
        == 201
    )
    assert (
        call(
            admin_service,
            two.slug,
            "PUT",
            f"/members/{dave.subject}",
            dave,
            body={"grants": ["read", "write:personal", "write:shared", "delete", "admin"]},
        ).status
        == 200
    )  # unchanged: no event
    assert (
        call(
            admin_service,
            two.slug,
            "POST",
            "/agent-keys",
            dave,
            body={"name": "daves-bot", "scopes": ["memory/read"]},
        ).status
        == 201
    )
    call(
        admin_service,
        one.slug,
        "PUT",
        f"/members/{bob.subject}",
        dave,
        body={"grants": ["read", "write:shared", "admin"]},
    )

    assert traces(owner, secret)  # it is there before...
    directory = FakeDirectory()
    report = operators.erase_person(owner, dave.subject, directory=directory)

    # ...and nowhere after: not the content, the paths, the source, the identity.
    assert (
        traces(
            owner,
            secret,
            f"health-{tag}",
            f"old-{tag}",
            f"phone-{tag}",
            f"key-{tag}",
            dave.subject,
            handle,
            str(dave.id),
        )
        == []
    )
    assert report.personal_records == 5 and report.personal_revisions == 8
    # The audit rows of his personal records never named them (memory://record/{id}
    # from the start: migration 0012), so erasure has no path left to redact.
    assert report.idempotency_keys == 1 and report.audit_paths_redacted == 0
    assert report.memberships_removed == 2 and sorted(report.workspaces) == sorted(
        [one.slug, two.slug]
    )
    assert report.invitations_removed == 1 and report.invitations_pseudonymised == 1
    assert report.records_pseudonymised == 2 and report.revisions_pseudonymised == 2
    assert report.agent_keys_pseudonymised == 1 and report.audit_events_pseudonymised >= 4
    assert report.identity_provider == {"found": True, "signed_out": True, "disabled": True}
    assert directory.signed_out == [dave.subject]

    # Their tokens resolve to nothing, anywhere.
    for ws in (one, two):
        assert resolve_with_all_scopes(admin_service.db, ws.slug, dave.subject) is None
    # The shared records stay, written by the pseudonym (a non-member: its handle reads
    # as null in provenance, like any departed member's); bob's own history is his.
    plan = bobs.read(uri="memory://workspace/notes/plan.md", history=True)
    assert plan["content"] == f"{shared} plan" and plan["created_by"] is None
    assert plan["created_by_kind"] is None  # nor what kind of principal it was
    changed = bobs.read(uri="memory://workspace/notes/bob.md", history=True)
    assert changed["content"] == f"{shared} v2" and changed["updated_by"] is None
    assert (changed["updated_by_kind"], changed["created_by_kind"]) == (None, "person")
    assert [(h["by"], h["by_kind"]) for h in changed["history"]] == [
        (None, None),
        (f"bob-{tag}", "person"),
    ]
    writers = owner.execute(
        "SELECT DISTINCT writer_id FROM memory.revisions WHERE workspace_id = %s", (one.id,)
    ).fetchall()
    assert {str(w[0]) for w in writers} == {report.pseudonym_id, str(bob.id)}
    trail = call(admin_service, one.slug, "GET", "/audit", bob).body["events"]
    assert trail[0]["operation"] == "person.erase"
    assert {e["actor"] for e in trail if e["operation"] != "person.erase"} >= {report.pseudonym_id}
    # The pseudonym is no member: neither a handle nor a kind is shown for it.
    assert {
        (e["actor_handle"], e["actor_kind"]) for e in trail if e["actor"] == report.pseudonym_id
    } == {(None, None)}
    with pytest.raises(AdminError):
        operators.erase_person(owner, dave.subject)


def test_an_erased_identity_cannot_be_added_back_by_pseudonym(world, owner, admin_service) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice, erin = ws.person("alice"), ws.person("erin")
    report = operators.erase_person(owner, erin.subject)
    subject: Any = owner.execute(
        "SELECT subject FROM memory.principals WHERE id = %s", (report.pseudonym_id,)
    ).fetchone()[0]
    assert subject.startswith("erased:")
    refused = call(
        admin_service,
        ws.slug,
        "PUT",
        f"/members/{subject}",
        alice,
        body={"grants": ["read"], "kind": "person", "handle": "x"},
    )
    assert refused.status == 422  # ':' is not in a subject: it cannot even be named


def test_the_idempotent_forms_change_and_audit_only_what_is_not_in_place(owner) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    slug, subject = f"seed-{tag}", f"pat-{tag}"
    ws = operators.ensure_workspace(owner, slug, memory_enabled=True)
    assert operators.ensure_workspace(owner, slug, memory_enabled=False) == ws  # left as it is
    pat = operators.ensure_principal(owner, "person", subject, "pat")
    assert operators.ensure_principal(owner, "person", subject, "renamed") == pat
    bot = operators.ensure_principal(owner, "service", f"bot-{tag}", "bot")
    assert operators.set_membership(owner, ws, pat, ["read"]) is True
    assert operators.set_membership(owner, ws, pat, ["read"]) is False
    assert operators.set_membership(owner, ws, pat, ["admin", "read"]) is True
    assert operators.set_membership(owner, ws, bot, ["read"]) is True
    assert operators.register_context(owner, ws, "dm:pat-bot", [pat, bot]) is True
    assert operators.register_context(owner, ws, "dm:pat-bot", [bot, pat, bot]) is False
    assert operators.set_memory_enabled(owner, ws, True) is False
    assert operators.set_memory_enabled(owner, ws, False) is True

    rows = owner.execute(
        "SELECT operation, writer_id, source, details FROM memory.audit_outbox "
        "WHERE workspace_id = %s ORDER BY id",
        (ws,),
    ).fetchall()
    assert [r[0] for r in rows] == [
        "workspace.create",
        "member.add",
        "member.change",
        "member.add",
        "context.register",
        "memory.disable",
    ]
    assert {(r[1], r[2]) for r in rows} == {(operators.OPERATOR, "operator")}
    assert rows[2][3] == {
        "principal_id": str(pat),
        "grants": ["read", "admin"],
        "personal_namespace": True,
        "previous_grants": ["read"],
        "previous_personal_namespace": True,
    }
    assert rows[3][3]["personal_namespace"] is False  # a service has none unless asked
    assert rows[4][3] == {"context": "dm:pat-bot", "members": sorted([str(pat), str(bot)])}
    handle = owner.execute("SELECT handle FROM memory.principals WHERE id = %s", (pat,))
    assert handle.fetchone()[0] == "pat"  # an existing principal is not changed

    stranger = operators.ensure_principal(owner, "person", f"stranger-{tag}", "stranger")
    refusals = [
        (lambda: operators.register_context(owner, ws, "channel:x", [stranger]), 422),
        (lambda: operators.register_context(owner, ws, "channel:x/thread:1", [pat]), 422),
        # A DM's participants are fixed for the operator too.
        (lambda: operators.register_context(owner, ws, "dm:pat-bot", [pat]), 409),
        (lambda: operators.ensure_principal(owner, "service", subject, "pat"), 409),
        (lambda: operators.set_membership(owner, ws, pat, ["fly"]), 422),
        (
            lambda: operators.set_membership(owner, ws, pat, ["read"], personal_namespace=False),
            422,
        ),
        (lambda: operators.workspace_id(owner, f"none-{tag}"), 404),
    ]
    for refused, status in refusals:
        with pytest.raises(AdminError) as caught:
            refused()
        assert caught.value.status == status
    assert len(
        owner.execute("SELECT 1 FROM memory.audit_outbox WHERE workspace_id = %s", (ws,)).fetchall()
    ) == len(rows)  # refusals audit nothing
