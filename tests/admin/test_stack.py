"""Against the local stack over HTTP: agent keys through the gateway (the deployed
Lambda authorizer's code), the management function and the emulated pool
(``memoryctl`` end to end is in ``tests/cli/``)."""

from __future__ import annotations

import uuid

import httpx2
import psycopg
from memory_server.admin import operators

from tests.stack_clients import admin, client_token, mcp_status, mcp_tools, person

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
        f"{api.base_url}/members", headers={"Authorization": f"Bearer {reader_only}"}
    )
    assert (refused.status_code, refused.json()) == (403, {"message": "Forbidden"})
    assert "www-authenticate" not in refused.headers
    assert httpx2.get(f"{api.base_url}/members").status_code == 401
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
            f"{api.base_url}/members", headers={"Authorization": f"Bearer {tokens['writer']}"}
        ).status_code
        == 403
    )

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
