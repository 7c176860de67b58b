"""The handler's side of sign-in: the protected-resource metadata it serves, and the
RFC 8707 binding it checks on every request (the authorizer's cached decision is
keyed on the token and route, not the workspace, so this check is the one that holds).
"""

from __future__ import annotations

import json
import time
from typing import Any

from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES, MCP_SCOPES
from memory_server.domain.limits import TOKEN_LEEWAY_S

from tests.endpoint.conftest import event, metadata_event

ALL = [GRANT_SCOPES[g] for g in ALL_GRANTS]
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def bound(workspace: str, sub: str, audience: str, path: str | None = None) -> dict[str, Any]:
    request = event(
        workspace,
        sub=sub,
        scopes=ALL,
        body=TOOLS_LIST,
        headers={"mcp-protocol-version": "2025-11-25"},
        path=path,
    )
    request["requestContext"]["authorizer"]["lambda"]["aud"] = audience
    return request


def test_metadata_names_the_product_and_only_mcp_scopes(service, world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    response = service.invoke(metadata_event(ws.slug))
    doc = json.loads(response["body"])
    assert doc == {
        "resource": f"https://api.example.com/w/{ws.slug}/mcp",
        # The authorization server is the service's own origin: its RFC 8414 metadata
        # and registration endpoint are there (served by the management function).
        "authorization_servers": ["https://api.example.com"],
        "scopes_supported": list(MCP_SCOPES),
        "bearer_methods_supported": ["header"],
        "resource_name": "memory-server",
    }
    assert "memory/admin" not in doc["scopes_supported"]


def test_a_token_bound_to_another_workspace_is_refused_by_the_handler(service, world) -> None:  # type: ignore[no-untyped-def]
    acme, globex = world.workspace(), world.workspace()
    alice = acme.person("alice")
    globex.add(alice)
    own = f"https://api.example.com/w/{acme.slug}/mcp"
    assert service.invoke(bound(acme.slug, alice.subject, own))["statusCode"] == 200
    # Bound to acme, presented at globex (where alice is a member too): 401 with the
    # challenge that sends the client to globex's metadata for a token of its own.
    refused = service.invoke(bound(globex.slug, alice.subject, own))
    assert refused["statusCode"] == 401
    challenge = refused["headers"]["www-authenticate"]
    assert (
        f'resource_metadata="https://api.example.com/.well-known/oauth-protected-resource/w/'
        f'{globex.slug}/mcp"' in challenge
    )
    # Several audiences: good wherever one of them is this workspace's resource.
    both = f"https://elsewhere.example/mcp {own}"
    assert service.invoke(bound(acme.slug, alice.subject, both))["statusCode"] == 200
    other_origin = f"https://evil.example/w/{acme.slug}/mcp"
    assert service.invoke(bound(acme.slug, alice.subject, other_origin))["statusCode"] == 401


def test_the_admin_api_takes_its_workspaces_mcp_resource(service, world) -> None:  # type: ignore[no-untyped-def]
    acme, globex = world.workspace(), world.workspace()
    alice = acme.person("alice")
    globex.add(alice)
    own = f"https://api.example.com/w/{acme.slug}/mcp"
    members = bound(acme.slug, alice.subject, own, path=f"/w/{acme.slug}/admin/members")
    members["requestContext"]["http"]["method"] = "GET"
    assert service.invoke(members)["statusCode"] == 200
    elsewhere = bound(globex.slug, alice.subject, own, path=f"/w/{globex.slug}/admin/members")
    elsewhere["requestContext"]["http"]["method"] = "GET"
    assert service.invoke(elsewhere)["statusCode"] == 401


def test_an_expired_token_is_refused_whatever_the_authorizer_cached(service, world) -> None:  # type: ignore[no-untyped-def]
    """API Gateway hands the handler a cached allow for up to 300 s, maybe past the
    token's ``exp``: the handler refuses it then, with the authorizer's clock-skew
    allowance, on the MCP route and the admin API alike."""
    acme = world.workspace()
    alice = acme.person("alice")

    def with_exp(exp: object, path: str | None = None) -> dict[str, Any]:
        request = event(
            acme.slug,
            sub=alice.subject,
            scopes=ALL,
            body=TOOLS_LIST,
            headers={"mcp-protocol-version": "2025-11-25"},
            path=path,
        )
        verified = request["requestContext"]["authorizer"]["lambda"]
        if exp is None:
            del verified["exp"]
        else:
            verified["exp"] = str(exp)
        if path is not None:
            request["requestContext"]["http"]["method"] = "GET"
        return request

    now = int(time.time())
    assert service.invoke(with_exp(now + 60))["statusCode"] == 200
    assert service.invoke(with_exp(now - TOKEN_LEEWAY_S + 5))["statusCode"] == 200  # skew
    fresh_refusal = service.invoke(event(acme.slug, sub=None, scopes=[], body=TOOLS_LIST))
    for exp in (now - TOKEN_LEEWAY_S - 1, now - 3600, None, "soon"):
        refused = service.invoke(with_exp(exp))
        assert refused["statusCode"] == 401, exp
        # The answer any token the handler cannot use gets: the same challenge.
        assert (
            refused["headers"]["www-authenticate"] == (fresh_refusal["headers"]["www-authenticate"])
        )
        assert refused["body"] == fresh_refusal["body"]
    admin = f"/w/{acme.slug}/admin/members"
    assert service.invoke(with_exp(now + 60, admin))["statusCode"] == 200
    assert service.invoke(with_exp(now - 3600, admin))["statusCode"] == 401
