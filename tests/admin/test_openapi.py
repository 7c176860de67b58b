"""docs/admin-openapi.json is what the code serves: generated from the same routes
and models, valid OpenAPI 3.1, and (elsewhere) every live response validates."""

from __future__ import annotations

import json
from typing import Any

from memory_local.gateway import ADMIN_ROUTE, match_route
from memory_server.admin.http import ROUTES
from memory_server.admin.openapi import build_openapi
from memory_server.signin.authorizer import ROUTE_SCOPES
from openapi_spec_validator import validate

from tests.admin.conftest import ROOT


def test_the_committed_document_is_the_generated_one(openapi: dict[str, Any]) -> None:
    committed = json.loads((ROOT / "docs" / "admin-openapi.json").read_text(encoding="utf-8"))
    assert committed == openapi, (
        "docs/admin-openapi.json is stale: "
        "python -m memory_server.admin.openapi > docs/admin-openapi.json"
    )
    assert openapi == build_openapi()  # deterministic


def test_it_is_valid_openapi_and_lists_exactly_the_served_routes(openapi: dict[str, Any]) -> None:
    validate(openapi)
    documented = {
        (method.upper(), path)
        for path, operations in openapi["paths"].items()
        for method in operations
    }
    served = {(route.method, f"/w/{{workspace}}/admin{route.template}") for route in ROUTES}
    assert documented == served
    for route in ROUTES:
        operation = openapi["paths"][f"/w/{{workspace}}/admin{route.template}"][
            route.method.lower()
        ]
        assert operation["operationId"] == route.operation_id
        assert {"401", "403", "404", "422", str(route.status)} <= set(operation["responses"])
        assert ("requestBody" in operation) == (route.request is not None)


def test_the_gateway_routes_every_admin_path_with_the_admin_scope() -> None:
    for route in ROUTES:
        path = "/w/acme/admin" + route.template.replace("{subject}", "x").replace(
            "{client_id}", "y"
        ).replace("{context}", "dm:z").replace(
            "{invitation_id}", "00000000-0000-0000-0000-000000000001"
        )
        matched = match_route(route.method, path)
        assert matched is not None
        gateway_route, parameters = matched
        assert gateway_route.key == ADMIN_ROUTE and gateway_route.authorized
        assert ROUTE_SCOPES[gateway_route.key] == "memory/admin"
        assert parameters["workspace"] == "acme"
    assert match_route("POST", "/w/acme/mcp")[0].key != ADMIN_ROUTE  # type: ignore[index]


def test_the_invitees_route_and_the_rules_of_private_contexts_are_described(
    openapi: dict[str, Any],
) -> None:
    base = "/w/{workspace}/admin"
    accept = openapi["paths"][f"{base}/invitations/{{invitation_id}}/accept"]["post"]
    assert "409" not in accept["responses"]  # nothing of the workspace's state to clash
    assert "admin grant" not in accept["responses"]["403"]["description"]
    assert "invitation" in accept["responses"]["404"]["description"]
    assert accept["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/Member"
    )
    put_context = openapi["paths"][f"{base}/contexts/{{context}}"]["put"]["responses"]
    assert "private_context_members" in put_context["403"]["description"]
    delete = openapi["paths"][f"{base}/contexts/{{context}}/records"]["delete"]
    assert delete["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ContextDeleted"
    )
    members = openapi["components"]["schemas"]["RegisteredContext"]["properties"]["members"]
    assert {"type": "null"} in members["anyOf"]  # null where the admin is not a member
