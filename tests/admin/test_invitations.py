"""Invitations (issue 23, item 6): an admin invites, the invitee accepts with its own
token, and until then it has no access at all. The admin API is no identity oracle:
unknown, foreign and known identities are answered alike, by the same statements; and
the database refuses a membership the runtime role tries to force."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from memory_server.admin import operators
from memory_server.data import statements

from tests.admin.conftest import ALL_SCOPES, call, create_agent_key
from tests.builders import resolve_with_all_scopes, set_caller_settings
from tests.endpoint.conftest import event

TIME_FIELDS = ("id", "subject", "created_at", "expires_at", "accept")


@dataclass(frozen=True)
class Someone:
    """A token's subject that may or may not be an identity the service knows."""

    subject: str


@pytest.fixture
def ws(world):  # type: ignore[no-untyped-def]
    return world.workspace()


def invite(service: Any, ws: Any, admin: Any, subject: str, **body: Any) -> Any:
    return call(
        service,
        ws.slug,
        "POST",
        "/invitations",
        admin,
        body={"subject": subject, "grants": ["read", "write:personal"], **body},
    )


def accept(
    service: Any, slug: str, who: Any, invitation_id: str, body: Any = None, **options: Any
) -> Any:
    return call(
        service,
        slug,
        "POST",
        f"/invitations/{invitation_id}/accept",
        who,
        body={} if body is None else body,
        **options,
    )


def mcp_status(service: Any, slug: str, who: Any) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    answer = service.invoke(event(slug, sub=who.subject, scopes=ALL_SCOPES, body=body))
    return int(answer["statusCode"])


@contextmanager
def statements_run() -> Iterator[list[str]]:
    """The names of the statements run inside the block (every statement of the
    server goes through ``statements.cursor``)."""
    names: list[str] = []
    original = statements.cursor

    def recording(conn: Any, name: str, params: Any = None) -> Any:
        names.append(name)
        return original(conn, name, params)

    statements.cursor = recording  # type: ignore[assignment]
    try:
        yield names
    finally:
        statements.cursor = original  # type: ignore[assignment]


def test_a_person_joins_only_by_accepting_and_has_no_access_before(
    ws, world, admin_service, owner
) -> None:  # type: ignore[no-untyped-def]
    alice, bob = ws.person("alice"), ws.person("bob", ("read",))
    erin = world.workspace().person("erin")  # known to the service, a member elsewhere
    # Adding her directly is no longer possible: the answer any non-member gets.
    direct = call(
        admin_service, ws.slug, "PUT", f"/members/{erin.subject}", alice, body={"grants": ["read"]}
    )
    assert direct.status == 404 and "invite" in direct.body["message"]

    made = invite(admin_service, ws, alice, erin.subject, personal_namespace=False)
    assert made.status == 201, made.body
    invitation = made.body
    assert invitation["grants"] == ["read", "write:personal"]
    assert invitation["invited_by"] == "alice"
    assert invitation["accept"] == f"/w/{ws.slug}/admin/invitations/{invitation['id']}/accept"
    listed = call(admin_service, ws.slug, "GET", "/invitations", alice).body["invitations"]
    assert [i["id"] for i in listed] == [invitation["id"]]

    # Pending: nothing at all, on either route, and no membership row.
    assert resolve_with_all_scopes(admin_service.db, ws.slug, erin.subject) is None
    assert mcp_status(admin_service, ws.slug, erin) == 404
    assert call(admin_service, ws.slug, "GET", "/members", erin).status == 404
    members = call(admin_service, ws.slug, "GET", "/members", alice).body["members"]
    assert erin.subject not in {m["subject"] for m in members}

    # Someone else cannot accept it, nor erin with a wrong id or in another workspace:
    # the one empty 404 of a workspace one is not a member of.
    for who, slug, invitation_id in (
        (bob, ws.slug, invitation["id"]),
        (Someone(f"nobody-{uuid.uuid4().hex[:8]}"), ws.slug, invitation["id"]),
        (erin, ws.slug, str(uuid.uuid4())),
        (erin, f"nope-{uuid.uuid4().hex[:8]}", invitation["id"]),
    ):
        refused = accept(admin_service, slug, who, invitation_id)
        assert (refused.status, refused.body) == (404, None), (who, slug)

    accepted = accept(admin_service, ws.slug, erin, invitation["id"])
    assert accepted.status == 200, accepted.body
    assert accepted.body["subject"] == erin.subject and accepted.body["handle"] == "erin"
    # A person always has a personal namespace, whatever the invitation said.
    assert accepted.body["grants"] == ["read", "write:personal"]
    assert accepted.body["personal_namespace"] is True
    assert mcp_status(admin_service, ws.slug, erin) == 200
    # Used once: gone from the list, and a second accept finds nothing.
    assert call(admin_service, ws.slug, "GET", "/invitations", alice).body["invitations"] == []
    assert accept(admin_service, ws.slug, erin, invitation["id"]).status == 404

    trail = call(admin_service, ws.slug, "GET", "/audit", alice, query="limit=2").body["events"]
    added, invited = trail
    assert invited["operation"] == "invitation.create" and invited["actor"] == str(alice.id)
    assert added["operation"] == "member.add" and added["actor_handle"] == "erin"
    assert added["details"]["invitation_id"] == invitation["id"]
    assert added["source"] == "admin-api"
    # The trail names no subject: erasure has nothing to find there.
    assert erin.subject not in repr(trail)


def test_a_person_new_to_the_service_names_its_handle(ws, admin_service, owner) -> None:  # type: ignore[no-untyped-def]
    alice = ws.person("alice")
    newcomer = Someone(f"new-{uuid.uuid4().hex[:10]}")
    invitation = invite(admin_service, ws, alice, newcomer.subject).body
    unnamed = accept(admin_service, ws.slug, newcomer, invitation["id"])
    assert unnamed.status == 422
    assert unnamed.body["problems"][0] == {
        "field": "handle",
        "rule": "required_for_a_new_identity",
        "message": unnamed.body["problems"][0]["message"],
    }
    bad = accept(admin_service, ws.slug, newcomer, invitation["id"], {"handle": "tab\there"})
    assert bad.status == 422 and bad.body["problems"][0]["field"] == "handle"
    assert (
        owner.execute(
            "SELECT count(*) FROM memory.principals WHERE subject = %s", (newcomer.subject,)
        ).fetchone()[0]
        == 0
    )  # nothing was made by the refusals
    named = accept(admin_service, ws.slug, newcomer, invitation["id"], {"handle": "nia"})
    assert named.status == 200 and named.body["handle"] == "nia"
    assert named.body["kind"] == "person"


def test_a_service_accepts_with_its_own_token_and_gets_a_namespace_only_if_invited_with_one(
    ws, world, owner, admin_service
) -> None:  # type: ignore[no-untyped-def]
    alice = ws.person("alice")
    indexer = Someone(f"svc-{uuid.uuid4().hex[:8]}")
    operators.ensure_principal(owner, "service", indexer.subject, "indexer")
    plain = Someone(f"svc-{uuid.uuid4().hex[:8]}")
    operators.ensure_principal(owner, "service", plain.subject, "plain")
    with_namespace = invite(admin_service, ws, alice, indexer.subject, personal_namespace=True)
    without = invite(admin_service, ws, alice, plain.subject)
    one = accept(admin_service, ws.slug, indexer, with_namespace.body["id"], as_service=True)
    two = accept(admin_service, ws.slug, plain, without.body["id"], as_service=True)
    assert (one.status, one.body["kind"], one.body["personal_namespace"]) == (
        200,
        "service",
        True,
    )
    assert (two.status, two.body["personal_namespace"]) == (200, False)
    # A service's token is not a person's: a person's token with the client's id as
    # subject does not make a person of it.
    other = Someone(f"svc-{uuid.uuid4().hex[:8]}")
    operators.ensure_principal(owner, "service", other.subject, "other")
    pending = invite(admin_service, ws, alice, other.subject).body
    assert accept(admin_service, ws.slug, other, pending["id"]).status == 404


def test_unknown_foreign_and_known_identities_are_invited_alike(
    ws, world, owner, admin_service, directory
) -> None:  # type: ignore[no-untyped-def]
    """Same status, same body (but the subject, id and times), same statements in the
    same order: the admin API tells an admin nothing about identities outside."""
    alice = ws.person("alice")
    elsewhere = world.workspace()
    carol = elsewhere.person("carol")
    foreign_key = create_agent_key(admin_service, elsewhere.slug, carol, "bot", ["memory/read"])
    assert foreign_key.status == 201
    subjects = {
        "unknown": f"nobody-{uuid.uuid4().hex[:10]}",
        "person known elsewhere": elsewhere.person("dave").subject,
        "person known nowhere else": world.workspace().person("eve").subject,
        "another workspace's key": foreign_key.body["client_id"],
        "a service identity": f"svc-{uuid.uuid4().hex[:8]}",
    }
    operators.ensure_principal(owner, "service", subjects["a service identity"], "svc")
    answers, runs = {}, {}
    for kind, subject in subjects.items():
        with statements_run() as names:
            answer = invite(admin_service, ws, alice, subject, personal_namespace=True)
        assert answer.status == 201, (kind, answer.body)
        answers[kind] = {k: v for k, v in answer.body.items() if k not in TIME_FIELDS}
        runs[kind] = names
    assert len({repr(a) for a in answers.values()}) == 1, answers
    assert len({tuple(r) for r in runs.values()}) == 1, runs
    assert "admin_invite" in runs["unknown"]
    assert not any("principal" in name for name in runs["unknown"])  # no identity look-up

    # The same for the members route: no direct add, one answer for all of them.
    refusals = {
        kind: call(
            admin_service, ws.slug, "PUT", f"/members/{subject}", alice, body={"grants": ["read"]}
        )
        for kind, subject in subjects.items()
    }
    assert {(r.status, repr(r.body)) for r in refusals.values()} == {
        (404, repr(refusals["unknown"].body))
    }
    # A current member is no secret from its admin: inviting it says so.
    bob = ws.person("bob", ("read",))
    member = invite(admin_service, ws, alice, bob.subject)
    assert member.status == 409 and member.body["problems"][0]["rule"] == "already_a_member"

    # Another workspace's key can never accept, whatever it was invited to.
    foreign = Someone(subjects["another workspace's key"])
    pending = {
        i["subject"]: i["id"]
        for i in call(admin_service, ws.slug, "GET", "/invitations", alice).body["invitations"]
    }
    refused = accept(admin_service, ws.slug, foreign, pending[foreign.subject], as_service=True)
    assert (refused.status, refused.body) == (404, None)
    assert resolve_with_all_scopes(admin_service.db, ws.slug, foreign.subject) is None


def test_invitations_expire_and_can_be_withdrawn(ws, world, owner, admin_service) -> None:  # type: ignore[no-untyped-def]
    alice = ws.person("alice")
    erin, fay = world.workspace().person("erin"), world.workspace().person("fay")
    first = invite(admin_service, ws, alice, erin.subject).body
    again = invite(admin_service, ws, alice, erin.subject, grants=["read"]).body
    assert again["id"] == first["id"] and again["grants"] == ["read"]  # replaced, one pending
    owner.execute(
        "UPDATE memory.invitations SET expires_at = now() - interval '1 second' WHERE id = %s",
        (first["id"],),
    )
    assert accept(admin_service, ws.slug, erin, first["id"]).status == 404
    assert call(admin_service, ws.slug, "GET", "/invitations", alice).body["invitations"] == []

    withdrawn = invite(admin_service, ws, alice, fay.subject).body
    revoked = call(admin_service, ws.slug, "DELETE", f"/invitations/{withdrawn['id']}", alice)
    assert revoked.body == {"revoked": withdrawn["id"]}
    assert accept(admin_service, ws.slug, fay, withdrawn["id"]).status == 404
    gone = call(admin_service, ws.slug, "DELETE", f"/invitations/{withdrawn['id']}", alice)
    assert gone.status == 404 and gone.body["error"] == "not_found"
    bad = call(admin_service, ws.slug, "DELETE", "/invitations/not-a-uuid", alice)
    assert bad.status == 422 and bad.body["problems"][0]["field"] == "invitation_id"
    operations = [
        e["operation"]
        for e in call(admin_service, ws.slug, "GET", "/audit", alice, query="limit=3").body[
            "events"
        ]
    ]
    assert operations == ["invitation.revoke", "invitation.create", "invitation.create"]


def test_erasure_removes_a_persons_pending_invitations(ws, world, owner, admin_service) -> None:  # type: ignore[no-untyped-def]
    alice = ws.person("alice")
    erin = world.workspace().person("erin")
    invite(admin_service, ws, alice, erin.subject)
    report = operators.erase_person(owner, erin.subject)
    assert report.invitations_removed == 1
    assert (
        owner.execute(
            "SELECT count(*) FROM memory.invitations WHERE subject = %s", (erin.subject,)
        ).fetchone()[0]
        == 0
    )


def test_the_runtime_role_cannot_force_a_membership_or_read_invitations(
    ws, world, cluster, admin_service
) -> None:  # type: ignore[no-untyped-def]
    """An admin's settings, raw SQL, no application code: a person (known elsewhere, or
    invited and pending) cannot be made a member, and invitations are out of reach but
    through the functions."""
    alice = ws.person("alice")
    erin = world.workspace().person("erin")
    pending = invite(admin_service, ws, alice, erin.subject).body
    with psycopg.connect(cluster.runtime_url) as conn:
        for sql, params in (
            (
                "INSERT INTO memory.memberships VALUES (%s, %s, '{read}', true)",
                (ws.id, erin.id),
            ),
            ("SELECT * FROM memory.invitations", ()),
            ("UPDATE memory.invitations SET expires_at = now()", ()),
        ):
            with conn.transaction():
                set_caller_settings(conn, ws.caller(alice))
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(sql, params)
        # Accepting for someone else (a subject that is not the invitation's) finds
        # nothing; the membership comes only with the invitee's own subject.
        with conn.transaction():
            forged = conn.execute(
                "SELECT * FROM memory.accept_invitation(%s, %s, %s, true, 'x', 'r')",
                (ws.slug, pending["id"], alice.subject),
            ).fetchall()
            assert forged == []
    assert resolve_with_all_scopes(admin_service.db, ws.slug, erin.subject) is None
