"""Every admin route: success, missing scope, non-admin member, another workspace's
admin, an unknown workspace, bad input, and the audit row each change leaves."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from memory_server.admin.http import ROUTES

from tests.admin.conftest import (
    ALL_SCOPES,
    NO_ADMIN_SCOPES,
    assert_schema,
    call,
    create_agent_key,
    response_schema,
)
from tests.builders import Principal, Workspace


@dataclass
class Tenants:
    ws: Workspace
    alice: Principal  # admin
    bob: Principal  # member without the admin grant
    other: Workspace
    carol: Principal  # admin of the other workspace


@pytest.fixture
def tenants(world) -> Tenants:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.person("alice")
    bob = ws.person("bob", ("read", "write:personal", "write:shared", "delete"))
    other = world.workspace()
    carol = other.person("carol")
    return Tenants(ws, alice, bob, other, carol)


@dataclass
class Case:
    """One route: how to call it successfully, what it audits, and a bad input."""

    method: str
    template: str
    path: Callable[[Tenants, Any], str]
    status: int = 200
    body: Any = None
    query: str = ""
    operation: str | None = None
    setup: Callable[[Tenants, Any], None] | None = None
    bad: tuple[str, Any, str, str] | None = None  # (path suffix or "", body, query, field)
    # The invitee's route (not yet a member, no admin grant asked): who calls it.
    invitee: Callable[[Tenants], Principal] | None = None


def _invite(t: Tenants, service: Any) -> None:
    """dave (a person of the other workspace) invited into this one."""
    dave = t.other.person("dave")
    made = call(
        service,
        t.ws.slug,
        "POST",
        "/invitations",
        t.alice,
        body={"subject": dave.subject, "grants": ["read"]},
    )
    assert made.status == 201, made.body
    t.ws.__dict__["invitee"] = dave
    t.ws.__dict__["invitation"] = made.body["id"]


def _make_key(t: Tenants, service: Any) -> None:
    made = create_agent_key(service, t.ws.slug, t.alice, "to-revoke", ["memory/read"])
    assert made.status == 201, made.body
    t.ws.__dict__["key"] = made.body["client_id"]


def _register(t: Tenants, service: Any) -> None:
    made = call(
        service,
        t.ws.slug,
        "PUT",
        "/contexts/channel:secret",
        t.alice,
        body={"members": [t.alice.subject]},
    )
    assert made.status == 200, made.body


CASES: dict[str, Case] = {
    "getMemory": Case("GET", "/memory", lambda t, s: "/memory"),
    "setMemory": Case(
        "PUT",
        "/memory",
        lambda t, s: "/memory",
        body={"enabled": False},
        operation="memory.disable",
        bad=("", {"enabled": "yes"}, "", "enabled"),
    ),
    "listMembers": Case("GET", "/members", lambda t, s: "/members"),
    "putMember": Case(
        "PUT",
        "/members/{subject}",
        lambda t, s: f"/members/{t.bob.subject}",
        body={"grants": ["read"]},
        operation="member.change",
        bad=("", {"grants": ["fly"], "extra": 1}, "", "grants.0"),
    ),
    "removeMember": Case(
        "DELETE",
        "/members/{subject}",
        lambda t, s: f"/members/{t.bob.subject}",
        operation="member.remove",
        bad=("/members/not%20a%20subject", None, "", "subject"),
    ),
    "listAgentKeys": Case("GET", "/agent-keys", lambda t, s: "/agent-keys"),
    "createAgentKey": Case(
        "POST",
        "/agent-keys",
        lambda t, s: "/agent-keys",
        status=201,
        body={"name": "ci", "scopes": ["memory/read", "memory/write.shared"]},
        operation="agent_key.create",
        bad=("", {"name": "", "scopes": []}, "", "name"),
    ),
    "revokeAgentKey": Case(
        "DELETE",
        "/agent-keys/{client_id}",
        lambda t, s: f"/agent-keys/{t.ws.__dict__['key']}",
        operation="agent_key.revoke",
        setup=_make_key,
        bad=("/agent-keys/bad%20id", None, "", "client_id"),
    ),
    "listContexts": Case("GET", "/contexts", lambda t, s: "/contexts"),
    "putContext": Case(
        "PUT",
        "/contexts/{context}",
        lambda t, s: "/contexts/channel:secret",
        body=None,  # filled per test (needs subjects)
        operation="context.register",
        bad=("", {"members": "alice"}, "", "members"),
    ),
    "deleteContext": Case(
        "DELETE",
        "/contexts/{context}/records",
        lambda t, s: "/contexts/channel:secret/records",
        operation="context.delete",
        setup=_register,
        bad=("/contexts/channel:secret/thread:t1/records", None, "", "context"),
    ),
    "removeContext": Case(
        "DELETE",
        "/contexts/{context}",
        lambda t, s: "/contexts/channel:secret",
        operation="context.unregister",
        setup=_register,
        bad=("/contexts/channel:secret/thread:t1", None, "", "context"),
    ),
    "listInvitations": Case("GET", "/invitations", lambda t, s: "/invitations"),
    "createInvitation": Case(
        "POST",
        "/invitations",
        lambda t, s: "/invitations",
        status=201,
        body={"subject": "someone-new", "grants": ["read", "write:personal"]},
        operation="invitation.create",
        bad=("", {"subject": "not a subject", "grants": ["write:shared"]}, "", "subject"),
    ),
    "revokeInvitation": Case(
        "DELETE",
        "/invitations/{invitation_id}",
        lambda t, s: f"/invitations/{t.ws.__dict__['invitation']}",
        operation="invitation.revoke",
        setup=_invite,
        bad=("/invitations/not-an-id", None, "", "invitation_id"),
    ),
    "acceptInvitation": Case(
        "POST",
        "/invitations/{invitation_id}/accept",
        lambda t, s: f"/invitations/{t.ws.__dict__['invitation']}/accept",
        body={},
        operation="member.add",
        setup=_invite,
        bad=("", {"handle": 5}, "", "handle"),
        invitee=lambda t: t.ws.__dict__["invitee"],
    ),
    "listAudit": Case(
        "GET",
        "/audit",
        lambda t, s: "/audit",
        query="limit=5",
        bad=("", None, "limit=0", "limit"),
    ),
}


def test_every_route_has_a_case() -> None:
    assert set(CASES) == {route.operation_id for route in ROUTES}
    for route in ROUTES:
        case = CASES[route.operation_id]
        assert (case.method, case.template) == (route.method, route.template)


def _body(case: Case, t: Tenants) -> Any:
    if case.template == "/contexts/{context}" and case.method == "PUT":
        return {"members": [t.alice.subject, t.bob.subject]}
    return case.body


def _send(service: Any, case: Case, t: Tenants, who: Any, **options: Any) -> Any:
    """The case's request (its path, body and query), as ``who``."""
    return call(
        service,
        t.ws.slug,
        case.method,
        case.path(t, service),
        who,
        body=_body(case, t),
        query=case.query,
        **options,
    )


def _latest_event(service: Any, t: Tenants) -> dict[str, Any]:
    page = call(service, t.ws.slug, "GET", "/audit", t.alice, query="limit=1")
    assert page.status == 200
    return dict(page.body["events"][0])


@pytest.mark.parametrize("name", list(CASES))
def test_success_matches_the_openapi_and_is_audited(
    name: str, tenants: Tenants, admin_service, openapi, owner: psycopg.Connection
) -> None:  # type: ignore[no-untyped-def]
    case, t = CASES[name], tenants
    if case.setup:
        case.setup(t, admin_service)
    before = owner.execute(
        "SELECT count(*) FROM memory.audit_outbox WHERE workspace_id = %s", (t.ws.id,)
    ).fetchone()[0]
    who = case.invitee(t) if case.invitee else t.alice
    response = _send(admin_service, case, t, who)
    assert response.status == case.status, response.body
    assert response.headers["cache-control"] == "no-store"
    assert_schema(
        openapi, response_schema(openapi, case.method, case.template, case.status), response.body
    )
    after = owner.execute(
        "SELECT count(*) FROM memory.audit_outbox WHERE workspace_id = %s", (t.ws.id,)
    ).fetchone()[0]
    if case.operation is None:
        assert after == before  # reading changes nothing and audits nothing
        return
    assert after == before + 1
    event = _latest_event(admin_service, t)
    assert event["operation"] == case.operation
    assert event["actor"] == str(who.id) and event["actor_handle"] == who.handle
    assert event["uri"].startswith("memory-admin://") and event["record_id"] is None
    assert event["source"] == "admin-api" and event["details"]
    assert_schema(openapi, "AuditEvent", event)


@pytest.mark.parametrize("name", list(CASES))
def test_a_token_without_the_admin_scope_is_refused(
    name: str, tenants: Tenants, admin_service
) -> None:  # type: ignore[no-untyped-def]
    case, t = CASES[name], tenants
    path = case.path(t, admin_service) if not case.setup else case.template
    response = call(
        admin_service,
        t.ws.slug,
        case.method,
        path,
        t.alice,
        scopes=NO_ADMIN_SCOPES,
        body=_body(case, t),
    )
    assert response.status == 403
    challenge = response.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="memory/admin"' in challenge
    assert f"/.well-known/oauth-protected-resource/w/{t.ws.slug}/mcp" in challenge
    no_token = call(admin_service, t.ws.slug, case.method, path, None, body=_body(case, t))
    assert no_token.status == 401 and "www-authenticate" in no_token.headers


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if not c.invitee])
def test_a_member_without_the_admin_grant_is_refused(
    name: str, tenants: Tenants, admin_service, owner: psycopg.Connection
) -> None:  # type: ignore[no-untyped-def]
    case, t = CASES[name], tenants
    if case.setup:
        case.setup(t, admin_service)
    before = owner.execute("SELECT count(*) FROM memory.audit_outbox").fetchone()[0]
    response = _send(admin_service, case, t, t.bob, scopes=ALL_SCOPES)
    assert response.status == 403
    assert response.body["error"] == "permission_denied"
    assert owner.execute("SELECT count(*) FROM memory.audit_outbox").fetchone()[0] == before


@pytest.mark.parametrize("name", list(CASES))
def test_another_workspaces_admin_and_an_unknown_workspace_look_alike(
    name: str, tenants: Tenants, admin_service
) -> None:  # type: ignore[no-untyped-def]
    case, t = CASES[name], tenants
    if case.setup:
        case.setup(t, admin_service)
    path = case.path(t, admin_service)
    foreign = call(
        admin_service, t.ws.slug, case.method, path, t.carol, body=_body(case, t), query=case.query
    )
    unknown = call(
        admin_service,
        f"nope-{uuid.uuid4().hex[:8]}",
        case.method,
        path,
        t.alice,
        body=_body(case, t),
        query=case.query,
    )
    assert (foreign.status, foreign.body) == (404, None)
    assert (unknown.status, unknown.body, unknown.headers) == (404, None, foreign.headers)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.bad])
def test_bad_input_names_the_field_and_the_rule(
    name: str, tenants: Tenants, admin_service, openapi, owner: psycopg.Connection
) -> None:  # type: ignore[no-untyped-def]
    case, t = CASES[name], tenants
    assert case.bad is not None
    suffix, body, query, field = case.bad
    if case.setup:
        case.setup(t, admin_service)
    before = owner.execute("SELECT count(*) FROM memory.audit_outbox").fetchone()[0]
    path = suffix or case.path(t, admin_service)
    response = call(admin_service, t.ws.slug, case.method, path, t.alice, body=body, query=query)
    assert response.status == 422, response.body
    assert_schema(openapi, "ErrorBody", response.body)
    assert response.body["error"] == "invalid_request"
    fields = [p["field"] for p in response.body["problems"]]
    assert field in fields, response.body
    assert all(p["rule"] and p["message"] for p in response.body["problems"])
    assert owner.execute("SELECT count(*) FROM memory.audit_outbox").fetchone()[0] == before


def test_the_invitees_route_asks_no_admin_grant_and_answers_others_with_the_empty_404(
    tenants: Tenants, admin_service, owner: psycopg.Connection
) -> None:  # type: ignore[no-untyped-def]
    """Accepting is the invitee's, before it is a member. A member without the admin
    grant, and an admin, with no invitation of their own, get what a stranger gets."""
    t = tenants
    _invite(t, admin_service)
    path = f"/invitations/{t.ws.__dict__['invitation']}/accept"
    before = owner.execute("SELECT count(*) FROM memory.audit_outbox").fetchone()[0]
    for who in (t.bob, t.alice, t.carol):
        refused = call(admin_service, t.ws.slug, "POST", path, who, body={})
        assert (refused.status, refused.body) == (404, None)
    assert owner.execute("SELECT count(*) FROM memory.audit_outbox").fetchone()[0] == before
    # Any other method on it is an admin route that does not exist there.
    wrong = call(admin_service, t.ws.slug, "GET", path, t.alice)
    assert wrong.status == 405 and wrong.headers["allow"] == "POST"


def test_non_json_and_missing_bodies_are_422(tenants: Tenants, admin_service) -> None:  # type: ignore[no-untyped-def]
    t = tenants
    for body in ("{not json", None, "[]", '{"enabled": 1}'):
        response = call(admin_service, t.ws.slug, "PUT", "/memory", t.alice, body=body)
        assert response.status == 422, (body, response.body)
        assert response.body["problems"][0]["field"] in ("body", "enabled")


def test_unknown_routes_and_methods(tenants: Tenants, admin_service) -> None:  # type: ignore[no-untyped-def]
    t = tenants
    assert call(admin_service, t.ws.slug, "GET", "/nothing", t.alice).status == 404
    wrong = call(admin_service, t.ws.slug, "POST", "/memory", t.alice, body={})
    assert wrong.status == 405 and set(wrong.headers["allow"].split(", ")) == {"GET", "PUT"}
    # ...and a non-member gets the same 404 for a route that does not exist.
    assert call(admin_service, t.ws.slug, "GET", "/nothing", t.carol).body is None
