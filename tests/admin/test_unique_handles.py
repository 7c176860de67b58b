"""Unique handles (issue 33, parts 1 and 2): no newcomer and no agent key takes the
handle of a member, however it is spelt (case, fullwidth forms, Cyrillic or Greek
look-alikes), so that provenance says truthfully who wrote a record. Each case goes
through the real admin API over the real database; the last ones show the rule is the
database's own, whichever role inserts the membership."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from memory_server.admin import operators
from memory_server.domain.errors import AdminError

from tests.admin.conftest import call, create_agent_key
from tests.admin.test_invitations import Someone, accept, invite

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
