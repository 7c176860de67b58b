"""Against the local stack over HTTP: agent keys through the gateway (the deployed
Lambda authorizer's code), the management function and the emulated pool; invitations
and private contexts as people and their agents meet them (issue 23, items 2 and 6)
(``memoryctl`` end to end is in ``tests/cli/``)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx2
import psycopg
import pytest
from memory_server.admin import operators

from tests.stack_clients import admin, client_token, mcp_status, mcp_tools, person
from tests.tls import TLS

READ_TOOLS = {"memory_list", "memory_read", "memory_search", "memory_brief", "memory_scopes"}
WRITE_TOOLS = {"memory_write", "memory_remember", "memory_move"}


def test_an_agent_key_authenticates_reaches_its_tools_and_dies_on_revocation(stack) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:8]
    slug = f"keys-{tag}"
    sub, token = person(stack, f"kim-{tag}")
    with psycopg.connect(stack.info["database_url"], autocommit=True) as owner:
        operators.create_workspace(
            owner, slug, admin_subject=sub, admin_handle="kim", memory_enabled=True
        )
    api = admin(stack, token, slug)
    stack.aws.read_audit_events()  # start from an empty tap

    # The gateway's authorizer refuses the admin route without memory/admin, and, as
    # API Gateway does, says nothing more.
    _, reader_only = person(stack, f"kim-{tag}", ["memory/read"])
    refused = httpx2.get(
        f"{api.base_url}/members", headers={"Authorization": f"Bearer {reader_only}"}, verify=TLS
    )
    assert (refused.status_code, refused.json()) == (403, {"message": "Forbidden"})
    assert "www-authenticate" not in refused.headers
    assert httpx2.get(f"{api.base_url}/members", verify=TLS).status_code == 401
    # The admin API holds no Cognito client: it asks the management function.
    management_calls = len(stack.lambdas.calls)

    keys = {}
    for name, scopes in (
        ("reader", ["memory/read"]),
        ("writer", ["memory/read", "memory/write.shared", "memory/delete"]),
    ):
        made = api.post("/agent-keys", json={"name": name, "scopes": scopes})
        assert made.status_code == 201, made.text
        keys[name] = made.json()
        described = stack.aws.describe_client(made.json()["client_id"])
        assert described["AllowedOAuthFlows"] == ["client_credentials"]
        assert sorted(described["AllowedOAuthScopes"]) == sorted(scopes)
    created = stack.lambdas.calls[management_calls:]
    assert [(name, event["action"]) for name, event in created] == [
        ("ManagementFunction", "create_agent_client")
    ] * 2

    tokens = {}
    for name, key in keys.items():
        issued = client_token(stack, key["client_id"], key["client_secret"])
        assert issued.status_code == 200, issued.text
        tokens[name] = issued.json()["access_token"]
    # A key made a moment ago passes the authorizer: it accepts any client of the pool.
    before = stack.gateway.authorizer.invocations
    assert mcp_tools(stack, tokens["reader"], slug) == READ_TOOLS
    assert stack.gateway.authorizer.invocations == before + 1  # then its cached decision
    assert mcp_tools(stack, tokens["writer"], slug) == READ_TOOLS | WRITE_TOOLS | {"memory_delete"}
    # Bound to this one workspace: elsewhere its tokens reach nothing.
    assert mcp_status(stack, tokens["writer"], "acme") == 404
    # ...and the admin API is not theirs (no memory/admin scope: the gateway says 403).
    assert (
        httpx2.get(
            f"{api.base_url}/members",
            headers={"Authorization": f"Bearer {tokens['writer']}"},
            verify=TLS,
        ).status_code
        == 403
    )

    # Issue 33: a key cannot take a member's handle (the admin's, kim): 409, and the app
    # client the management function made for it is deleted from the pool again.
    calls = len(stack.lambdas.calls)
    clash = api.post("/agent-keys", json={"name": "kim", "scopes": ["memory/read"]})
    assert clash.status_code == 409 and "taken by another member" in clash.json()["message"]
    made_then_gone = stack.lambdas.calls[calls:]
    assert [event["action"] for _, event in made_then_gone] == [
        "create_agent_client",
        "delete_agent_client",
    ]
    with pytest.raises(Exception, match="ResourceNotFound"):
        stack.aws.describe_client(made_then_gone[1][1]["client_id"])

    revoked = api.delete(f"/agent-keys/{keys['reader']['client_id']}")
    assert revoked.json() == {"revoked": keys["reader"]["client_id"], "client_deleted": True}
    # The authorizer's cached allow still holds for this token, yet it is dead at once:
    # the handler resolves the caller in the database on every request.
    before = stack.gateway.authorizer.invocations
    assert mcp_status(stack, tokens["reader"], slug) == 404  # the unexpired token is dead
    assert stack.gateway.authorizer.invocations == before
    assert (
        client_token(
            stack, keys["reader"]["client_id"], keys["reader"]["client_secret"]
        ).status_code
        == 401
    )
    assert mcp_status(stack, tokens["writer"], slug) == 200  # the other key lives on
    assert [k["name"] for k in api.get("/agent-keys").json()["agent_keys"]] == ["writer"]

    trail = [e["operation"] for e in api.get("/audit").json()["events"]]
    assert trail[:3] == ["agent_key.revoke", "agent_key.create", "agent_key.create"]
    assert stack.wait_published()  # events are published after the responses
    published = [e["detail"]["operation"] for e in stack.aws.read_audit_events()]
    assert published == ["agent_key.create", "agent_key.create", "agent_key.revoke"]


# -- issue 23: invitations, and private contexts an admin is not in -----------------------


def mcp_call(
    stack: Any, token: str, workspace: str, tool: str, context: str | None = None, **arguments: Any
) -> httpx2.Response:
    """One tool call as raw JSON-RPC through the gateway, from a listening context."""
    headers = {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2025-11-25"}
    if context is not None:
        headers["Memory-Context"] = context
    return httpx2.post(
        f"{stack.info['api_url']}/w/{workspace}/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        },
        headers=headers,
        verify=TLS,
    )


def joined(
    stack: Any, admin_api: httpx2.Client, slug: str, who: tuple[str, str, str], grants: list[str]
) -> None:
    """Invited by an admin, accepted by the invitee (``who``: handle, sub, token) with its
    own token, over HTTP: new to the service, it names its handle."""
    handle, sub, token = who
    invited = admin_api.post("/invitations", json={"subject": sub, "grants": grants})
    assert invited.status_code == 201, invited.text
    with admin(stack, token, slug) as own:
        accepted = own.post(f"/invitations/{invited.json()['id']}/accept", json={"handle": handle})
    assert accepted.status_code == 200, accepted.text


def test_a_pending_invitee_has_no_access_and_identities_are_invited_alike(stack) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:8]
    slug, other = f"inv-{tag}", f"inv-other-{tag}"
    kim_sub, kim = person(stack, f"kim-{tag}")
    ola_sub, ola = person(stack, f"ola-{tag}")
    with psycopg.connect(stack.info["database_url"], autocommit=True) as owner:
        operators.create_workspace(
            owner, slug, admin_subject=kim_sub, admin_handle="kim", memory_enabled=True
        )
        operators.create_workspace(
            owner, other, admin_subject=ola_sub, admin_handle="ola", memory_enabled=True
        )
    api = admin(stack, kim, slug)
    with admin(stack, ola, other) as theirs:
        key = theirs.post("/agent-keys", json={"name": "bot", "scopes": ["memory/read"]})
    assert key.status_code == 201, key.text
    # Before: adding a person of another workspace by subject made her a member without
    # her consent, and the answers told people (422), services (201) and unknown (404)
    # apart. Now every one of them is an invitation, answered alike.
    answers = {}
    for kind, subject in {
        "a person of another workspace": ola_sub,
        "another workspace's key": key.json()["client_id"],
        "nobody": f"nobody-{tag}",
    }.items():
        direct = api.put(f"/members/{subject}", json={"grants": ["read"]})
        invited = api.post("/invitations", json={"subject": subject, "grants": ["read"]})
        assert direct.status_code == 404 and invited.status_code == 201, (kind, invited.text)
        body = invited.json()
        answers[kind] = (
            direct.json(),
            sorted(body),
            {
                k: v
                for k, v in body.items()
                if k not in ("id", "subject", "created_at", "expires_at", "accept")
            },
        )
    assert len({repr(a) for a in answers.values()}) == 1, answers
    # Pending: ola reaches nothing in kim's workspace, on either route.
    assert mcp_status(stack, ola, slug) == 404
    with admin(stack, ola, slug) as as_ola:
        assert as_ola.get("/members").status_code == 404
        pending = {i["subject"]: i for i in api.get("/invitations").json()["invitations"]}
        # kim cannot accept it for her, and ola can: then, and only then, she is in.
        assert api.post(pending[ola_sub]["accept"].split("/admin")[1], json={}).status_code == 404
        accepted = as_ola.post(pending[ola_sub]["accept"].split("/admin")[1], json={})
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["handle"] == "ola" and accepted.json()["grants"] == ["read"]
    assert mcp_status(stack, ola, slug) == 200
    # Someone new to the service names the handle it will show everywhere.
    new_sub, new_token = person(stack, f"nia-{tag}")
    joined(stack, api, slug, ("nia", new_sub, new_token), ["read"])
    assert mcp_status(stack, new_token, slug) == 200
    stack.wait_published()
    trail = [e["operation"] for e in api.get("/audit", params={"limit": 3}).json()["events"]]
    assert trail == ["member.add", "invitation.create", "member.add"]


def test_an_admin_cannot_read_a_private_channel_or_dm_it_is_not_in(stack) -> None:  # type: ignore[no-untyped-def]
    """The finding, end to end: kim administers the workspace; lee and max share a
    private channel and a DM. kim can neither add herself, nor unregister them, nor hear
    them; she may delete them wholesale and still reads nothing."""
    tag = uuid.uuid4().hex[:8]
    slug = f"hush-{tag}"
    kim_sub, kim = person(stack, f"kim-{tag}")
    lee_sub, lee = person(stack, f"lee-{tag}")
    max_sub, mx = person(stack, f"max-{tag}")
    with psycopg.connect(stack.info["database_url"], autocommit=True) as owner:
        made = operators.create_workspace(
            owner, slug, admin_subject=kim_sub, admin_handle="kim", memory_enabled=True
        )
        # Members as the operator makes them (this test is about contexts, not joining).
        for sub, handle, grants in (
            (lee_sub, "lee", ["read", "write:personal", "write:shared", "delete", "admin"]),
            (max_sub, "max", ["read", "write:personal", "write:shared"]),
        ):
            principal = operators.ensure_principal(owner, "person", sub, handle)
            operators.set_membership(owner, uuid.UUID(made.id), principal, grants)
    api = admin(stack, kim, slug)
    with admin(stack, lee, slug) as lees:
        for key in ("channel:hush", "dm:lee-max"):
            made = lees.put(f"/contexts/{key}", json={"members": [lee_sub, max_sub]})
            assert made.status_code == 200, made.text
    secret = f"SECRET-{tag}"
    for context in ("channel:hush", "channel:hush/thread:t", "dm:lee-max"):
        wrote = mcp_call(
            stack,
            mx,
            slug,
            "memory_write",
            context,
            uri=f"memory://workspace/notes/{context.replace(':', '-').replace('/', '-')}.md",
            content=secret,
            expected_revision=0,
        )
        assert wrote.status_code == 200 and not wrote.json()["result"]["isError"], wrote.text

    # kim, an admin outside them: every way in is refused, with one answer.
    refusals = [
        api.put("/contexts/channel:hush", json={"members": [lee_sub, max_sub, kim_sub]}),
        api.put("/contexts/channel:hush", json={"members": [kim_sub]}),
        api.put("/contexts/dm:lee-max", json={"members": [lee_sub, max_sub, kim_sub]}),
        api.delete("/contexts/channel:hush"),
        api.delete("/contexts/dm:lee-max"),
    ]
    assert {(r.status_code, r.text) for r in refusals} == {(403, refusals[0].text)}
    assert refusals[0].json()["problems"][0]["rule"] == "private_context_members"
    # lee, who is in them, cannot unregister them while they hold records, nor change
    # the DM's participants.
    with admin(stack, lee, slug) as lees:
        kept = lees.delete("/contexts/channel:hush")
        fixed = lees.put("/contexts/dm:lee-max", json={"members": [lee_sub, max_sub, kim_sub]})
    assert kept.status_code == 409 and kept.json()["problems"][0]["rule"] == (
        "private_context_holds_records"
    )
    assert fixed.status_code == 409 and fixed.json()["problems"][0]["rule"] == (
        "dm_participants_fixed"
    )
    listed = {c["context"]: c["members"] for c in api.get("/contexts").json()["contexts"]}
    assert listed == {"channel:hush": None, "dm:lee-max": None}
    for context in ("channel:hush", "channel:hush/thread:t", "dm:lee-max"):
        heard = mcp_call(stack, kim, slug, "memory_search", context, query=secret)
        assert heard.status_code == 403 and heard.json() == {"error": "context_unavailable"}
    found = mcp_call(stack, kim, slug, "memory_list")
    assert found.status_code == 200 and not found.json()["result"]["isError"]
    assert secret not in found.text and "hush" not in found.text

    # Deleted wholesale by kim: nothing comes back to her, and nothing stays readable.
    deleted = api.delete("/contexts/channel:hush/records")
    assert deleted.json() == {"deleted": "channel:hush", "records": 2, "revisions_purged": 2}
    assert secret not in deleted.text
    assert mcp_call(stack, mx, slug, "memory_list", "channel:hush").status_code == 403
    with psycopg.connect(stack.info["database_url"]) as owner:
        left = owner.execute(
            "SELECT count(*) FROM memory.revisions AS r JOIN memory.workspaces AS w "
            "ON w.id = r.workspace_id WHERE w.slug = %s AND r.body = %s "
            "AND split_part(r.context_key, '/', 1) = 'channel:hush'",
            (slug, secret),
        ).fetchone()
    assert left == (0,)
    # It is nobody's and empty now: kim may take it; it tells her nothing of before.
    taken = api.put("/contexts/channel:hush", json={"members": [kim_sub]})
    assert taken.status_code == 200
    listing = mcp_call(stack, kim, slug, "memory_list", "channel:hush")
    assert listing.status_code == 200 and secret not in listing.text
    # The DM is untouched by all of it: max still reads its record.
    dm = mcp_call(stack, mx, slug, "memory_search", "dm:lee-max", query=secret)
    assert dm.status_code == 200 and "dm-lee-max" in dm.text
