"""Against the local stack: the management function, reached as the MCP function reaches
it (``LambdaDirectory`` over the Lambda invoke contract), is no confused deputy (issue
23, item 5). It makes only what an agent key may be, records for which workspace and by
whom, and deletes only a client it made for the workspace asking: another workspace's
key, the people's client and a registered client answer as an unknown client does.

The admin API checks the same things first against the database (a key of another
workspace is a 404 there, ``tests/admin/test_admin_rules.py``), so over HTTP the
defect does not show: these calls are what a caller that skipped those checks (a bug,
or a compromised MCP function) could send."""

from __future__ import annotations

import uuid
from typing import Any

import httpx2
import psycopg
import pytest
from botocore.exceptions import ClientError
from memory_server.admin import operators
from memory_server.domain.errors import AdminError
from memory_server.signin.registry import SigninTable

from tests.builders import settle_audit
from tests.stack_clients import admin, person
from tests.tls import TLS


def exists(stack: Any, client_id: str) -> bool:
    try:
        stack.aws.describe_client(client_id)
    except ClientError:
        return False
    return True


def test_the_management_function_acts_only_on_keys_it_made_for_the_workspace(
    stack: Any,
) -> None:
    tag = uuid.uuid4().hex[:8]
    one, two = f"own-a-{tag}", f"own-b-{tag}"
    sub, token = person(stack, f"olga-{tag}")
    with psycopg.connect(stack.info["database_url"], autocommit=True) as owner:
        for slug in (one, two):
            operators.create_workspace(
                owner, slug, admin_subject=sub, admin_handle="olga", memory_enabled=True
            )
        (olga,) = owner.execute(
            "SELECT id FROM memory.principals WHERE subject = %s", (sub,)
        ).fetchone() or (None,)
    keys = {}
    for slug in (one, two):
        with admin(stack, token, slug) as api:
            made = api.post("/agent-keys", json={"name": "bot", "scopes": ["memory/read"]})
        assert made.status_code == 201, made.text
        keys[slug] = made.json()["client_id"]
    # What the admin API asked for: the workspace and the admin travel with the key's
    # own name; the management function names the client and records both.
    function, event = stack.lambdas.calls[-1]
    assert (function, event) == (
        "ManagementFunction",
        {
            "action": "create_agent_client",
            "workspace": two,
            "name": "bot",
            "scopes": ["memory/read"],
            "created_by": str(olga),
        },
    )
    assert stack.aws.describe_client(keys[two])["ClientName"] == f"{two}.bot"
    recorded = SigninTable(
        stack.aws.client("dynamodb"), stack.aws.provisioned.signin_table
    ).agent_client(keys[two])
    assert recorded is not None and (recorded.workspace, recorded.created_by) == (two, str(olga))

    registered = httpx2.post(
        f"{stack.info['api_url']}/register",
        json={"redirect_uris": ["http://127.0.0.1:47998/cb"], "client_name": "ownership"},
        timeout=30,
        verify=TLS,
    )
    assert registered.status_code == 201, registered.text
    people = stack.aws.provisioned.people_client_id
    directory = stack.app.service.admin.directory  # the MCP function's LambdaDirectory
    for workspace, client_id in (
        (one, keys[two]),  # another workspace's key
        (two, keys[one]),
        (one, people),  # the people's client
        (one, registered.json()["client_id"]),  # a registered MCP client
        (one, "no-such-client"),
    ):
        assert directory.delete_agent_client(workspace, client_id) is False, client_id
    for client_id in (keys[one], keys[two], people, registered.json()["client_id"]):
        assert exists(stack, client_id), client_id

    # Nothing an agent key may not be: refused (the admin API would answer 503).
    calls = len(stack.lambdas.calls)
    for bad in (
        (one, "bot2", ["openid"]),
        (one, "bot2", ["aws.cognito.signin.user.admin"]),
        (one, "../people", ["memory/read"]),
        ("Not-A-Slug", "bot2", ["memory/read"]),
    ):
        with pytest.raises(AdminError) as refused:
            directory.create_agent_client(*bad, str(olga))
        assert refused.value.status == 503
    assert len(stack.lambdas.calls) == calls + 4
    with admin(stack, token, one) as api:
        assert [k["name"] for k in api.get("/agent-keys").json()["agent_keys"]] == ["bot"]
        # Its own key, revoked through the admin API, is deleted.
        revoked = api.delete(f"/agent-keys/{keys[one]}")
    assert revoked.json() == {"revoked": keys[one], "client_deleted": True}
    assert not exists(stack, keys[one]) and exists(stack, keys[two])
    settle_audit(stack)  # the revocation's event is published after the response
