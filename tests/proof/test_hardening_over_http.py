"""The security review's findings (docs/security.md, "Hardening"), each proved over HTTP
against the shared local stack where the defect showed there: raw JSON-RPC and admin
calls through the API Gateway emulator, tokens from the local issuer, and the
database inspected from outside as the owner.

Every test works in a workspace of its own (``hard-{run id}``), so nothing here
depends on or disturbs the demo tenants the other proofs use. Nothing depends on
the emulated user pool either (other packages reset moto's state): subjects are
fresh ids, tokens are minted for the people client the demo tokens name, and the
admin API's agent keys go to an in-memory directory.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import psycopg
import pytest
from memory_local.dev import DevStack
from memory_server.admin import operators

from tests.builders import insert_unguarded_membership
from tests.proof.harness import HANDSHAKE, LEAK, Directory, Inspector, assert_no_leak, people_client
from tests.tls import TLS

ALL_SCOPES = [
    "memory/read",
    "memory/write.personal",
    "memory/write.shared",
    "memory/delete",
    "memory/admin",
]


@dataclass
class Person:
    name: str
    subject: str
    principal_id: str


@dataclass
class Tenant:
    """A workspace of this module: alice (admin), bob (a member who writes), and the
    means to mint tokens for them with any scopes."""

    stack: DevStack
    owner: psycopg.Connection
    slug: str
    workspace_id: uuid.UUID
    alice: Person
    bob: Person

    def token(self, who: Person, scopes: list[str] = ALL_SCOPES) -> str:
        issuer = self.stack.gateway.local_issuer  # type: ignore[union-attr]
        assert issuer is not None
        return issuer.issue_access_token(
            sub=who.subject, client_id=people_client(self.stack), scopes=scopes, username=who.name
        )

    @property
    def api(self) -> str:
        return str(self.stack.info["api_url"])

    def mcp(
        self,
        token: str,
        tool: str,
        *,
        context: str | None = None,
        slug: str | None = None,
        **arguments: Any,
    ) -> httpx2.Response:
        headers = {
            "authorization": f"Bearer {token}",
            "mcp-protocol-version": HANDSHAKE,
            "accept": "application/json, text/event-stream",
        }
        if context is not None:
            headers["memory-context"] = context
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        return httpx2.post(
            f"{self.api}/w/{slug or self.slug}/mcp",
            json=message,
            headers=headers,
            timeout=30,
            verify=TLS,
        )

    def tool(self, token: str, tool: str, **kwargs: Any) -> tuple[dict[str, Any], str | None]:
        """A tool's structured result and its error code (None on success); the HTTP
        answer must be a 200 with a tool result."""
        response = self.mcp(token, tool, **kwargs)
        assert response.status_code == 200, (response.status_code, response.text[:300])
        result = response.json()["result"]
        structured = dict(result["structuredContent"])
        code = structured["error"]["code"] if result["isError"] else None
        return structured, code

    def succeeds(self, token: str, tool: str, **kwargs: Any) -> dict[str, Any]:
        """The structured result of a tool call that must succeed."""
        structured, code = self.tool(token, tool, **kwargs)
        assert code is None, structured
        return structured

    def admin(self, token: str) -> httpx2.Client:
        return httpx2.Client(
            base_url=f"{self.api}/w/{self.slug}/admin",
            headers={"authorization": f"Bearer {token}"},
            timeout=30,
            verify=TLS,
        )


def _person(stack: DevStack, owner: psycopg.Connection, slug: str, name: str) -> Person:
    subject = str(uuid.uuid4())  # a Cognito sub's form
    principal = operators.ensure_principal(owner, "person", subject, f"{name}-{slug}")
    return Person(f"{name}-{slug}", subject, str(principal))


@pytest.fixture(scope="module")
def tenant(stack: DevStack, inspector: Inspector, run_id: str) -> Iterator[Tenant]:
    owner = inspector.owner
    slug = f"hard-{run_id}"
    alice = _person(stack, owner, slug, "alice")
    made = operators.create_workspace(
        owner, slug, admin_subject=alice.subject, admin_handle=alice.name, memory_enabled=True
    )
    workspace_id = uuid.UUID(made.id)
    bob = _person(stack, owner, slug, "bob")
    operators.set_membership(
        owner,
        workspace_id,
        uuid.UUID(bob.principal_id),
        ["read", "write:personal", "write:shared", "delete"],
    )
    yield Tenant(stack, owner, slug, workspace_id, alice, bob)


def _rows(owner: psycopg.Connection, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return owner.execute(sql, params).fetchall()


# -- 1. an admin sees no member's personal record names --------------------------------


def test_admins_and_the_audit_bus_never_see_personal_or_private_record_names(
    tenant: Tenant, inspector: Inspector
) -> None:
    t = tenant
    tag = uuid.uuid4().hex[:8]
    bob = t.token(t.bob)
    personal = f"memory://me/notes/offer-globex-{tag}.md"
    secret_source = f"recruiter-call-{tag}"
    inspector.settle_audit()

    made = t.succeeds(
        bob,
        "memory_write",
        uri=personal,
        content="# offer",
        expected_revision=0,
        source=secret_source,
    )
    t.succeeds(
        bob,
        "memory_move",
        uri=personal,
        expected_revision=1,
        new_uri=f"memory://me/notes/accepted-{tag}.md",
    )
    t.succeeds(
        bob,
        "memory_remember",
        uri=f"memory://me/memories/salary-{tag}.md",
        fact="asks for more",
        idempotency_key=f"key-{tag}-0001",
        source=secret_source,
    )
    t.succeeds(
        bob, "memory_delete", uri=f"memory://me/notes/accepted-{tag}.md", expected_revision=2
    )
    # A private channel alice is not in, and a thread under it.
    operators.register_context(
        t.owner, t.workspace_id, f"channel:hush-{tag}", [uuid.UUID(t.bob.principal_id)]
    )
    hushed = t.succeeds(
        bob,
        "memory_write",
        context=f"channel:hush-{tag}/thread:t1",
        uri=f"memory://workspace/notes/layoffs-{tag}.md",
        content="x",
        expected_revision=0,
        source=secret_source,
    )
    # The positive control: a shared record in an open context keeps its address.
    t.succeeds(
        bob,
        "memory_write",
        uri=f"memory://workspace/notes/menu-{tag}.md",
        content="soup",
        expected_revision=0,
        source="kitchen",
    )

    with t.admin(t.token(t.alice)) as admin:
        page = admin.get("/audit", params={"limit": 50})
        assert page.status_code == 200, page.text
        trail = [e for e in page.json()["events"] if e["actor"] == t.bob.principal_id]
        usage = admin.get("/contexts").json()["in_use"]
    inspector.sweep()
    published = [
        e["detail"]
        for e in inspector.drain_events()
        if e["detail"]["workspace"] == t.slug and e["detail"]["writer"] == t.bob.principal_id
    ]
    for where, events in (("admin trail", trail), ("audit bus", published)):
        assert len(events) >= 6, (where, events)
        text = repr(events)
        for hidden in ("offer-globex", "accepted-", "salary-", "layoffs-", secret_source):
            assert hidden not in text, f"{where} shows {hidden!r}"
        for event in events:
            record = event.get("record_id")
            if event["uri"] == f"memory://workspace/notes/menu-{tag}.md":
                assert event["source"] == "kitchen"  # shared and open: as it was
            else:
                assert event["uri"] == f"memory://record/{record}" and event["source"] is None
    assert {e["uri"] for e in trail} >= {
        f"memory://record/{made['id']}",
        f"memory://record/{hushed['id']}",
        f"memory://workspace/notes/menu-{tag}.md",
    }
    # Usage counts shared records only, and not the private channel alice is not in.
    assert {u["context"] for u in usage} == {"workspace"}
    assert (
        usage[0]["records"]
        == _rows(
            t.owner,
            "SELECT count(*) FROM memory.memories WHERE workspace_id = %s AND context_key = "
            "'workspace' AND owner_id = '00000000-0000-0000-0000-000000000000'",
            t.workspace_id,
        )[0][0]
    )


# -- 2. writing needs reading; no database error is a 500 --------------------------------


def test_a_write_scope_without_read_is_refused_not_a_500_and_reads_say_so(
    tenant: Tenant, inspector: Inspector
) -> None:
    t = tenant
    tag = uuid.uuid4().hex[:8]
    writer_only = t.token(t.alice, ["memory/write.shared", "memory/write.personal"])
    inspector.settle_audit()
    before = inspector.dump()
    for uri in (f"memory://workspace/notes/w-{tag}.md", f"memory://me/notes/w-{tag}.md"):
        _, code = t.tool(writer_only, "memory_write", uri=uri, content="x", expected_revision=0)
        assert code == "permission_denied"
    _, code = t.tool(
        writer_only,
        "memory_remember",
        uri=f"memory://workspace/notes/r-{tag}.md",
        fact="f",
        idempotency_key=f"key-{tag}-0002",
    )
    assert code == "permission_denied"
    # Reads without the read grant are refused, never an empty success.
    for tool, arguments in (
        ("memory_list", {}),
        ("memory_search", {"query": "anything"}),
        ("memory_read", {"uri": "memory://workspace/notes/anything.md"}),
    ):
        structured, code = t.tool(writer_only, tool, **arguments)
        assert code == "permission_denied", (tool, structured)
    assert inspector.dump() == before
    # Such grants and keys cannot be made any more.
    with t.admin(t.token(t.alice)) as admin:
        member = admin.put(f"/members/{t.bob.subject}", json={"grants": ["write:shared"]})
        assert member.status_code == 422 and member.json()["problems"][0]["field"] == "grants"
        key = admin.post("/agent-keys", json={"name": f"w-{tag}", "scopes": ["memory/delete"]})
        assert key.status_code == 422 and key.json()["problems"][0]["field"] == "scopes"


def test_an_unexpected_database_error_is_unavailable_never_a_500(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The handler runs in this process: make the database fail a statement in a way
    no code expects (a division by zero), on a tool and on an admin route."""
    from memory_server.data import statements as sql_files

    real = sql_files.query
    broken = {"create_record_unless_taken", "admin_audit_page", "list_page"}

    def failing(name: str) -> bytes:
        return b"SELECT 1 / 0 AS id" if name in broken else real(name)

    monkeypatch.setattr(sql_files, "query", failing)
    t = tenant
    token = t.token(t.alice)
    response = t.mcp(
        token,
        "memory_write",
        uri="memory://workspace/notes/boom.md",
        content="x",
        expected_revision=0,
    )
    assert_no_leak(response)
    result = response.json()["result"]
    assert result["isError"] and result["structuredContent"]["error"]["code"] == "unavailable"
    _, code = t.tool(token, "memory_list")
    assert code == "unavailable"
    with t.admin(token) as admin:
        trail = admin.get("/audit")
    assert LEAK.search(trail.text) is None and "division" not in trail.text
    assert trail.status_code == 503 and trail.json()["error"] == "unavailable"
    assert trail.headers["retry-after"] == "1"


# -- 3. one long word ---------------------------------------------------------------------


def test_a_very_long_word_is_stored_and_the_record_is_found(tenant: Tenant) -> None:
    t = tenant
    tag = uuid.uuid4().hex[:8]
    token = t.token(t.alice)
    long_word = "q" + "z" * 2039  # 2,040 characters: a lexeme, too long beside the cell
    # (Longer than a query may be, so it is looked for by the other words.)
    body = f"# Notes {tag}\nmarker{tag} before {long_word} after\n"
    made = t.succeeds(
        token,
        "memory_write",
        uri=f"memory://workspace/notes/long-{tag}.md",
        content=body,
        expected_revision=0,
    )
    for query in (f"marker{tag}", f"marker{tag} after"):
        found = t.succeeds(token, "memory_search", query=query)
        assert made["id"] in [hit["id"] for hit in found["hits"]], query
    replaced, code = t.tool(
        token,
        "memory_write",
        uri=f"memory://record/{made['id']}",
        content=body + long_word.upper(),
        expected_revision=1,
    )
    assert code is None and replaced["revision"] == 2
    # A query word that long (510 four-byte letters, 2,040 bytes, within the query
    # limit) is cut to fit as well, and finds the record holding it.
    wide = "\U00020000" * 510
    held = t.succeeds(
        token,
        "memory_write",
        uri=f"memory://workspace/notes/wide-{tag}.md",
        content=f"{wide} wide{tag}",
        expected_revision=0,
    )
    found = t.succeeds(token, "memory_search", query=wide)
    assert held["id"] in [hit["id"] for hit in found["hits"]]


# -- 4. a replay passes the first call's checks ------------------------------------------


def test_a_replay_is_bound_to_its_context_and_checks_the_grants_first(
    tenant: Tenant, inspector: Inspector
) -> None:
    t = tenant
    tag = uuid.uuid4().hex[:8]
    dm = f"dm:a-b-{tag}"
    operators.register_context(
        t.owner,
        t.workspace_id,
        dm,
        [uuid.UUID(t.alice.principal_id), uuid.UUID(t.bob.principal_id)],
    )
    token = t.token(t.alice)
    call = {
        "uri": f"memory://workspace/notes/plans-{tag}.md",
        "fact": "ship on friday",
        "idempotency_key": f"key-{tag}-0004",
    }
    first, code = t.tool(token, "memory_remember", context=dm, **call)
    assert code is None and first["replayed"] is False
    again, code = t.tool(token, "memory_remember", context=dm, **call)
    assert code is None and again == {**first, "replayed": True}  # the same context replays
    # From the workspace the DM's record is invisible: the same key there is another
    # request, which never shows the DM record's id.
    elsewhere, code = t.tool(token, "memory_remember", **call)
    assert code is None and elsewhere["replayed"] is False, elsewhere
    assert elsewhere["id"] != first["id"]
    _, code = t.tool(token, "memory_read", uri=f"memory://record/{first['id']}")
    assert code == "not_found"
    # A read-only token of the same person gets no replay of a change.
    inspector.settle_audit()
    before = inspector.dump()
    read_only = t.token(t.alice, ["memory/read"])
    refused, code = t.tool(read_only, "memory_remember", context=dm, **call)
    assert code == "permission_denied", refused
    assert first["id"] not in repr(refused)
    assert inspector.dump() == before


# -- 6. revoked and foreign agent keys ---------------------------------------------------


def test_revoked_or_foreign_agent_keys_reach_nothing_whatever_the_membership_rows_say(
    tenant: Tenant, inspector: Inspector, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = tenant
    tag = uuid.uuid4().hex[:8]
    assert t.stack.app is not None and t.stack.gateway is not None
    monkeypatch.setattr(t.stack.app.service.admin, "directory", Directory())
    with t.admin(t.token(t.alice)) as admin:
        made = admin.post("/agent-keys", json={"name": f"bot-{tag}", "scopes": ["memory/read"]})
    assert made.status_code == 201, made.text
    key = made.json()
    # The key's client-credentials token, as the pool would issue it (sub = client id).
    issuer = t.stack.gateway.local_issuer
    assert issuer is not None
    bot = issuer.issue_access_token(
        sub=key["client_id"], client_id=key["client_id"], scopes=["memory/read"]
    )
    assert t.tool(bot, "memory_list")[1] is None
    principal = _rows(
        t.owner, "SELECT id FROM memory.principals WHERE subject = %s", key["client_id"]
    )[0][0]

    # Another workspace holds a membership row for the key.
    other = f"hard2-{run_id}-{tag}"
    other_id = operators.ensure_workspace(t.owner, other, memory_enabled=True)
    insert_unguarded_membership(t.owner, other_id, principal)
    assert t.mcp(bot, "memory_list", slug=other).status_code == 404
    # Revoked with its membership row left in place (as a failed revocation would).
    t.owner.execute("UPDATE memory.principals SET revoked_at = now() WHERE id = %s", (principal,))
    assert t.mcp(bot, "memory_list").status_code == 404
    # Nothing can attach it again: not the database, not the admin API.
    with pytest.raises(psycopg.errors.CheckViolation):
        t.owner.execute(
            "UPDATE memory.memberships SET principal_id = principal_id, workspace_id = %s "
            "WHERE principal_id = %s AND workspace_id = %s",
            (t.workspace_id, principal, other_id),
        )
    with t.admin(t.token(t.alice)) as admin:
        again = admin.put(f"/members/{key['client_id']}", json={"grants": ["read", "admin"]})
    assert again.status_code == 404  # a revoked key is no member, whatever rows remain
    assert t.mcp(bot, "memory_list").status_code == 404


# -- 7. admins create no identities and learn nothing about outside ones ----------------


def test_admins_cannot_create_identities_or_probe_them(tenant: Tenant, run_id: str) -> None:
    t = tenant
    tag = uuid.uuid4().hex[:8]
    count = "SELECT count(*) FROM memory.principals"
    before = _rows(t.owner, count)[0][0]
    # Another workspace's live agent key, and a person known elsewhere.
    other = f"hard3-{run_id}-{tag}"
    operators.ensure_workspace(t.owner, other)
    foreign_key = _rows(
        t.owner,
        "INSERT INTO memory.principals (kind, subject, handle, workspace_id, key_scopes) "
        "SELECT 'service', %s, 'theirs', id, '{memory/read}' FROM memory.workspaces "
        "WHERE slug = %s RETURNING subject",
        f"client{tag}",
        other,
    )[0][0]
    with t.admin(t.token(t.alice)) as admin:
        squat = admin.put(
            f"/members/new-{tag}",
            json={"grants": ["read"], "kind": "service", "handle": "The CEO"},
        )
        assert squat.status_code == 422  # no kind or handle to choose
        unknown = admin.put(f"/members/new-{tag}", json={"grants": ["read"]})
        foreign = admin.put(f"/members/{foreign_key}", json={"grants": ["read"]})
    assert unknown.status_code == foreign.status_code == 404
    assert unknown.json() == foreign.json()  # one answer: no oracle
    assert _rows(t.owner, count)[0][0] == before + 1  # only the key made above


# -- 9. a 19-digit audit cursor --------------------------------------------------------------


@pytest.mark.parametrize("cursor", ["9223372036854775807", "9223372036854775808", "9" * 19])
def test_an_audit_cursor_past_the_largest_id_is_a_422(tenant: Tenant, cursor: str) -> None:
    t = tenant
    with t.admin(t.token(t.alice)) as admin:
        page = admin.get("/audit", params={"cursor": cursor})
    assert_no_leak(page)
    if int(cursor) <= 2**63 - 1:
        assert page.status_code == 200
    else:
        assert page.status_code == 422 and page.json()["problems"][0]["field"] == "cursor"
