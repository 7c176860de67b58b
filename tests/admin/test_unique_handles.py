"""Unique handles (issue 33, parts 1 and 2): no newcomer and no agent key takes the
handle of a member, however it is spelt (case, fullwidth forms, Cyrillic or Greek
look-alikes), so that provenance says truthfully who wrote a record; and wherever
provenance is shown, the writer's kind (a person, or a service: an agent key) stands
beside its handle. Each case goes through the real admin API and tools over the real
database; the rule's cases show it is the database's own, whichever role inserts the
membership."""

from __future__ import annotations

import json
import uuid
from typing import Any

import jsonschema
import psycopg
import pytest
from memory_server.admin import operators
from memory_server.domain.errors import AdminError

from tests.admin.conftest import ALL_SCOPES, call, create_agent_key
from tests.admin.test_invitations import Someone, accept, invite
from tests.endpoint.conftest import api_event

RULE = "taken by another member of this workspace"


@pytest.fixture
def ws(world):  # type: ignore[no-untyped-def]
    return world.workspace()


def newcomer_accepts(service: Any, ws: Any, admin: Any, handle: str) -> Any:
    newcomer = Someone(f"new-{uuid.uuid4().hex[:10]}")
    invitation = invite(service, ws, admin, newcomer.subject).body
    return accept(service, ws.slug, newcomer, invitation["id"], {"handle": handle})


def handles(service: Any, ws: Any, admin: Any) -> list[str]:
    members = call(service, ws.slug, "GET", "/members", admin).body["members"]
    return sorted(m["handle"] for m in members)


@pytest.mark.parametrize(
    "taken",
    [
        "alice",  # the same
        "Alice",  # another case
        "ALICE",
        "\u0430lice",  # Cyrillic а
        "\u0410LICE",  # Cyrillic А
        "\uff41\uff4c\uff49\uff43\uff45",  # fullwidth ａｌｉｃｅ
        "al\u200bice",  # a zero-width space inside (not printable: refused as input)
        " alice ",
        "\u03b1lice",  # Greek α
    ],
)
def test_a_newcomer_cannot_take_a_members_handle(ws, admin_service, owner, taken) -> None:  # type: ignore[no-untyped-def]
    alice = ws.person("alice")
    answer = newcomer_accepts(admin_service, ws, alice, taken)
    assert answer.status in (409, 422), answer.body
    if answer.status == 409:
        assert answer.body["error"] == "conflict" and RULE in answer.body["message"]
        # The answer names the rule, not the member holding the handle.
        assert alice.subject not in repr(answer.body) and str(alice.id) not in repr(answer.body)
    assert handles(admin_service, ws, alice) == ["alice"]


def test_a_newcomer_with_a_handle_of_its_own_joins(ws, admin_service) -> None:  # type: ignore[no-untyped-def]
    alice = ws.person("alice")
    # Different letters, even if close: a different handle.
    for handle in ("alice2", "alíce", "bob"):
        answer = newcomer_accepts(admin_service, ws, alice, handle)
        assert answer.status == 200, (handle, answer.body)
    assert handles(admin_service, ws, alice) == ["alice", "alice2", "alíce", "bob"]


def test_the_same_handle_in_another_workspace_is_no_clash(world, admin_service) -> None:  # type: ignore[no-untyped-def]
    first, second = world.workspace(), world.workspace()
    first.person("alice")
    admin = second.person("root")
    answer = newcomer_accepts(admin_service, second, admin, "alice")
    assert answer.status == 200, answer.body


def test_a_known_person_whose_handle_a_member_holds_cannot_join(world, ws, admin_service) -> None:  # type: ignore[no-untyped-def]
    alice = ws.person("alice")
    other = world.workspace().person("Alice")  # another person, a member elsewhere
    invitation = invite(admin_service, ws, alice, other.subject).body
    answer = accept(admin_service, ws.slug, other, invitation["id"])
    assert answer.status == 409 and RULE in answer.body["message"], answer.body
    assert handles(admin_service, ws, alice) == ["alice"]


def test_another_workspaces_service_whose_handle_a_member_holds_cannot_join(
    ws, owner, admin_service
) -> None:  # type: ignore[no-untyped-def]
    # A service is named by its own handle (it names none when it accepts): one that
    # folds to a member's is refused like a person, and joins nothing.
    alice = ws.person("alice")
    look_alike = Someone(f"svc-{uuid.uuid4().hex[:8]}")
    operators.ensure_principal(owner, "service", look_alike.subject, "\u0430lice")  # Cyrillic а
    invitation = invite(admin_service, ws, alice, look_alike.subject).body
    answer = accept(admin_service, ws.slug, look_alike, invitation["id"], as_service=True)
    assert answer.status == 409 and RULE in answer.body["message"], answer.body
    assert handles(admin_service, ws, alice) == ["alice"]
    pending = call(admin_service, ws.slug, "GET", "/invitations", alice).body["invitations"]
    assert [i["id"] for i in pending] == [invitation["id"]]  # still open for a rename


def test_an_admin_cannot_name_an_agent_key_like_a_member(ws, admin_service, directory) -> None:  # type: ignore[no-untyped-def]
    alice, _bob = ws.person("alice"), ws.person("bob")
    joined = newcomer_accepts(admin_service, ws, alice, "\u0455am")  # Cyrillic ѕ + "am"
    assert joined.status == 200, joined.body
    # A key's name is ASCII; a member's handle that looks like it is taken alike.
    for name in ("bob", "Bob", "BOB", "sam"):
        made = create_agent_key(admin_service, ws.slug, alice, name, ["memory/read"])
        assert made.status == 409, (name, made.body)
        assert made.body["error"] == "conflict" and RULE in made.body["message"]
    keys = call(admin_service, ws.slug, "GET", "/agent-keys", alice).body["agent_keys"]
    assert keys == []
    # Its app client was deleted again: no key the service does not know about.
    assert not any(ws.slug in str(c) for c in directory.clients.values())
    made = create_agent_key(admin_service, ws.slug, alice, "bob-bot", ["memory/read"])
    assert made.status == 201, made.body
    # And no newcomer takes the key's name either.
    answer = newcomer_accepts(admin_service, ws, alice, "BOB-BOT")
    assert answer.status == 409, answer.body


def test_the_database_refuses_a_duplicate_whoever_inserts_it(ws, owner) -> None:  # type: ignore[no-untyped-def]
    ws.person("alice")
    twin = operators.ensure_principal(owner, "person", f"twin-{uuid.uuid4().hex[:8]}", "АLICE")
    with pytest.raises(psycopg.errors.UniqueViolation) as refused, owner.transaction():
        owner.execute(
            "INSERT INTO memory.memberships (workspace_id, principal_id, grants,"
            " personal_namespace, handle_key, handle_conflict)"
            " VALUES (%s, %s, '{read}', true, 'something-else', true)",
            (ws.id, twin),
        )
    assert refused.value.diag.constraint_name == "memberships_handle"


def test_renaming_to_a_members_handle_is_refused(ws, owner) -> None:  # type: ignore[no-untyped-def]
    ws.person("alice")
    bob = ws.person("bob")
    with pytest.raises(AdminError) as refused:
        operators.rename_principal(owner, bob.subject, "\u0391lice")  # Greek Α
    assert refused.value.status == 409 and RULE in refused.value.message
    assert operators.rename_principal(owner, bob.subject, "robert") == bob.id
    # And the raw statement, whoever runs it, is refused by the database alike.
    with pytest.raises(psycopg.errors.UniqueViolation), owner.transaction():
        owner.execute("UPDATE memory.principals SET handle = 'Alice' WHERE id = %s", (bob.id,))


def test_a_flagged_member_keeps_its_handle_from_newcomers_until_renamed(  # type: ignore[no-untyped-def]
    ws, admin_service, owner
) -> None:
    alice = ws.person("alice")
    # As an upgrade leaves a member that shared its handle (the index leaves it out).
    owner.execute(
        "UPDATE memory.memberships SET handle_conflict = true"
        " WHERE workspace_id = %s AND principal_id = %s",
        (ws.id, alice.id),
    )
    members = call(admin_service, ws.slug, "GET", "/members", alice).body["members"]
    assert [m["handle_conflict"] for m in members] == [True]
    answer = newcomer_accepts(admin_service, ws, alice, "ALICE")
    assert answer.status == 409 and RULE in answer.body["message"], answer.body
    operators.rename_principal(owner, alice.subject, "alice-a")
    members = call(admin_service, ws.slug, "GET", "/members", alice).body["members"]
    assert [(m["handle"], m["handle_conflict"]) for m in members] == [("alice-a", False)]


def test_an_operator_cannot_add_a_member_with_a_taken_handle(ws, owner) -> None:  # type: ignore[no-untyped-def]
    ws.person("alice")
    twin = operators.ensure_principal(owner, "person", f"twin-{uuid.uuid4().hex[:8]}", "ALICE")
    with pytest.raises(AdminError) as refused:
        operators.set_membership(owner, ws.id, twin, ["read"])
    assert refused.value.status == 409 and RULE in refused.value.message


# -- issue 33: where provenance is shown, the principal's kind beside its handle --------

KINDS = ["person", "service", None]


def rpc(service: Any, slug: str, subject: str, scopes: list[str], body: dict[str, Any]) -> Any:
    """One JSON-RPC request through the real service; ``scopes`` without ``memory/admin``
    stand for an agent key's client-credentials token (its client id is its subject)."""
    key = "memory/admin" not in scopes
    answer = service.invoke(
        api_event(
            "ANY /w/{workspace}/mcp",
            f"/w/{slug}/mcp",
            {"workspace": slug},
            sub=subject,
            scopes=scopes,
            method="POST",
            headers={"mcp-protocol-version": "2025-11-25"},
            body={"jsonrpc": "2.0", "id": 1, **body},
            client_id=subject if key else "test-client",
        )
    )
    assert answer["statusCode"] == 200, answer
    return json.loads(answer["body"])["result"]


def tool(service: Any, slug: str, subject: str, scopes: list[str], name: str, **args: Any) -> Any:
    """One ``tools/call``."""
    body = {"method": "tools/call", "params": {"name": name, "arguments": args}}
    result = rpc(service, slug, subject, scopes, body)
    assert result["isError"] is False, result
    return result["structuredContent"]


def output_schemas(service: Any, slug: str, subject: str) -> dict[str, Any]:
    tools = rpc(service, slug, subject, ALL_SCOPES, {"method": "tools/list"})["tools"]
    return {t["name"]: t["outputSchema"] for t in tools}


def test_tools_list_names_the_writers_kind_beside_each_handle(ws, admin_service) -> None:  # type: ignore[no-untyped-def]
    schemas = output_schemas(admin_service, ws.slug, ws.person("alice").subject)
    read = schemas["memory_read"]
    for field in ("created_by_kind", "updated_by_kind"):
        assert read["properties"][field]["enum"] == KINDS and field in read["required"]
    entry = read["properties"]["history"]["items"]
    assert entry["properties"]["by_kind"]["enum"] == KINDS and "by_kind" in entry["required"]
    recent = schemas["memory_brief"]["properties"]["recent"]["items"]
    assert recent["properties"]["updated_by_kind"]["enum"] == KINDS
    assert "updated_by_kind" in recent["required"]
    # memory_scopes names the caller's kind with the same words.
    principal = schemas["memory_scopes"]["properties"]["principal"]
    assert principal["properties"]["kind"]["enum"] == KINDS[:2]


def test_provenance_shows_whether_a_person_or_an_agent_key_wrote(ws, admin_service) -> None:  # type: ignore[no-untyped-def]
    alice = ws.person("alice")
    made = create_agent_key(
        admin_service, ws.slug, alice, "alice-bot", ["memory/read", "memory/write.shared"]
    )
    assert made.status == 201, made.body
    key = made.body["client_id"]
    key_scopes = ["memory/read", "memory/write.shared"]

    def as_alice(name: str, **args: Any) -> Any:
        return tool(admin_service, ws.slug, alice.subject, ALL_SCOPES, name, **args)

    def as_key(name: str, **args: Any) -> Any:
        return tool(admin_service, ws.slug, key, key_scopes, name, **args)

    plan, mine = "memory://workspace/notes/plan.md", "memory://workspace/notes/mine.md"
    written = as_alice("memory_write", uri=plan, content="v1", expected_revision=0)
    as_key("memory_write", uri=plan, content="v2 by the key", expected_revision=1)
    as_alice("memory_write", uri=mine, content="alice's", expected_revision=0)

    def writers(read: Any) -> tuple[Any, ...]:
        return (
            read["created_by"],
            read["created_by_kind"],
            read["updated_by"],
            read["updated_by_kind"],
        )

    schemas = output_schemas(admin_service, ws.slug, alice.subject)

    def checked(name: str, result: Any) -> Any:
        jsonschema.validate(result, schemas[name], cls=jsonschema.Draft202012Validator)
        return result

    # By path (with history) and by id: the person created it, the key changed it.
    read = checked("memory_read", as_alice("memory_read", uri=plan, history=True))
    assert writers(read) == ("alice", "person", "alice-bot", "service")
    assert [(h["by"], h["by_kind"]) for h in read["history"]] == [
        ("alice-bot", "service"),
        ("alice", "person"),
    ]
    by_id = checked("memory_read", as_alice("memory_read", uri=f"memory://record/{written['id']}"))
    assert writers(by_id) == writers(read)
    # A revision is its own writer's; as_of reads the revision current then.
    first = as_alice("memory_read", uri=f"memory://record/{written['id']}/revisions/1")
    assert writers(checked("memory_read", first)) == ("alice", "person", "alice", "person")
    second = as_alice("memory_read", uri=f"memory://record/{written['id']}/revisions/2")
    assert writers(second) == ("alice-bot", "service", "alice-bot", "service")
    now = as_alice("memory_read", uri=plan, as_of="2999-01-01T00:00:00Z")
    assert writers(checked("memory_read", now)) == writers(second)
    # The key reads the same provenance of the same record.
    assert writers(as_key("memory_read", uri=plan)) == writers(read)

    # The briefing's recent changes: each writer by handle and kind.
    brief = checked("memory_brief", as_alice("memory_brief", max_bytes=16384))
    assert [(r["uri"], r["updated_by"], r["updated_by_kind"]) for r in brief["recent"]] == [
        (mine, "alice", "person"),
        (plan, "alice-bot", "service"),
    ]

    # The admin API: the audit trail's actors, the key's maker, an invitation's sender.
    events = call(admin_service, ws.slug, "GET", "/audit", alice).body["events"]
    assert [(e["operation"], e["actor_handle"], e["actor_kind"]) for e in events][:4] == [
        ("create", "alice", "person"),
        ("replace", "alice-bot", "service"),
        ("create", "alice", "person"),
        ("agent_key.create", "alice", "person"),
    ]
    keys = call(admin_service, ws.slug, "GET", "/agent-keys", alice).body["agent_keys"]
    assert [(k["created_by"], k["created_by_kind"]) for k in keys] == [("alice", "person")]
    sent = invite(admin_service, ws, alice, f"new-{uuid.uuid4().hex[:10]}")
    assert (sent.body["invited_by"], sent.body["invited_by_kind"]) == ("alice", "person")
    pending = call(admin_service, ws.slug, "GET", "/invitations", alice).body["invitations"]
    assert [(i["invited_by"], i["invited_by_kind"]) for i in pending] == [("alice", "person")]

    # A revoked key is no member: its handle and its kind go together (null).
    assert call(admin_service, ws.slug, "DELETE", f"/agent-keys/{key}", alice).status == 200
    read = checked("memory_read", as_alice("memory_read", uri=plan, history=True))
    assert writers(read) == ("alice", "person", None, None)
    assert [h["by_kind"] for h in read["history"]] == [None, "person"]
    brief = as_alice("memory_brief", max_bytes=16384)
    assert [(r["updated_by"], r["updated_by_kind"]) for r in brief["recent"]] == [
        ("alice", "person"),
        (None, None),
    ]
    events = call(admin_service, ws.slug, "GET", "/audit", alice).body["events"]
    replaced = next(e for e in events if e["operation"] == "replace")
    assert (replaced["actor_handle"], replaced["actor_kind"]) == (None, None)
