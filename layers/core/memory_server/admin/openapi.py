"""The admin API's OpenAPI 3.1 description, generated from ``ROUTES`` and the models.

``docs/admin-openapi.json`` is this function's output; a test regenerates it and
fails when the two differ, and validates live responses against its schemas.
Regenerate with ``python -m memory_server.admin.openapi > docs/admin-openapi.json``.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from pydantic import BaseModel

from memory_server.admin import models as m
from memory_server.admin.http import ROUTES, Route
from memory_server.gateway.authenticate import ADMIN_GATE
from memory_server.gateway.events import SLUG_PATTERN

ADMIN_SCOPE = ADMIN_GATE.challenge_scope

BASE = "/w/{workspace}/admin"
_UUID_PATTERN = "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
_PATH_PARAMETERS = {
    "subject": ("A person's Cognito sub or a service's app client id", m.SUBJECT_PATTERN),
    "client_id": ("The agent key's app client id", m.SUBJECT_PATTERN),
    "context": ("A context key: channel:{id} or dm:{id}, percent-encoded as a path segment", None),
    "invitation_id": ("The invitation's id", _UUID_PATTERN),
}


_FORBIDDEN = (
    f"The token lacks {ADMIN_SCOPE} (the gateway's authorizer), or the member lacks the "
    "admin grant, or a private context's rule refuses it (permission_denied, the rule in "
    "problems: private_context_members)"
)
_FORBIDDEN_INVITEE = f"The token lacks {ADMIN_SCOPE} (the gateway's authorizer)"
_NOT_FOUND = (
    "No such workspace or not a member: an empty body, the same for both. "
    "Otherwise no such member, key, context, invitation or route (ErrorBody)."
)
_NOT_FOUND_INVITEE = (
    "Nothing this token may accept (no such workspace, no invitation with this id for "
    "this identity, expired, an identity that may not join): an empty body, alike"
)


def build_openapi() -> dict[str, Any]:
    schemas: dict[str, Any] = {}

    def ref(model: type[BaseModel], mode: str) -> dict[str, str]:
        schema = model.model_json_schema(
            ref_template="#/components/schemas/{model}",
            mode="validation" if mode == "validation" else "serialization",
        )
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
        return {"$ref": f"#/components/schemas/{model.__name__}"}

    error = ref(m.ErrorBody, "serialization")
    gateway = {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    }
    schemas["GatewayMessage"] = gateway

    def json_content(schema: dict[str, Any]) -> dict[str, Any]:
        return {"application/json": {"schema": schema}}

    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        operation: dict[str, Any] = {
            "operationId": route.operation_id,
            "summary": route.summary,
            "security": [{"bearer": []}],
            "parameters": _parameters(route),
            "responses": {
                str(route.status): {
                    "description": "Success",
                    "content": json_content(ref(route.response, "serialization")),
                },
                "401": {
                    "description": "No valid token (from the gateway's authorizer)",
                    "content": json_content({"$ref": "#/components/schemas/GatewayMessage"}),
                },
                "403": {
                    "description": _FORBIDDEN_INVITEE if route.invitee else _FORBIDDEN,
                    "content": json_content(
                        {"anyOf": [{"$ref": "#/components/schemas/GatewayMessage"}, error]}
                    ),
                },
                "404": {
                    "description": _NOT_FOUND_INVITEE if route.invitee else _NOT_FOUND,
                    "content": json_content(error),
                },
                "422": {
                    "description": "Invalid input: each problem names its field and rule",
                    "content": json_content(error),
                },
                "503": {"description": "Retry later", "content": json_content(error)},
            },
        }
        if route.operation_id == "putMember":  # 200 when changed, 201 when added
            operation["responses"]["201"] = {
                "description": "Added",
                "content": json_content(ref(route.response, "serialization")),
            }
        if route.changes and not route.invitee:
            operation["responses"]["409"] = {
                "description": (
                    "Conflicts with the workspace's state, the rule named in problems "
                    "(for example the last admin, a DM's fixed participants, a private "
                    "context that holds records)"
                ),
                "content": json_content(error),
            }
        if route.request is not None:
            operation["requestBody"] = {
                "required": True,
                "content": json_content(ref(route.request, "validation")),
            }
        paths.setdefault(BASE + route.template, {})[route.method.lower()] = operation

    return {
        "openapi": "3.1.0",
        "info": {
            "title": "memory-server admin API",
            "version": "1.0.0",
            "description": (
                "Workspace administration on the same HTTP API as the MCP endpoint. Every "
                f"route needs an access token with the {ADMIN_SCOPE} scope and the admin "
                "grant in the workspace, but acceptInvitation: the invitee's own token, "
                "before it is a member. See docs/admin.md."
            ),
        },
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "JWT",
                    "description": f"A Cognito access token carrying {ADMIN_SCOPE}",
                }
            },
        },
    }


def _parameters(route: Route) -> list[dict[str, Any]]:
    parameters: list[dict[str, Any]] = [
        {
            "name": "workspace",
            "in": "path",
            "required": True,
            "schema": {"type": "string", "pattern": SLUG_PATTERN},
        }
    ]
    for name in re.findall(r"\{(\w+)\}", route.template):
        description, pattern = _PATH_PARAMETERS[name]
        schema: dict[str, Any] = {"type": "string"}
        if pattern:
            schema["pattern"] = pattern
        parameters.append(
            {
                "name": name,
                "in": "path",
                "required": True,
                "description": description,
                "schema": schema,
            }
        )
    if route.query is not None:
        query_schema = route.query.model_json_schema()
        for name, schema in query_schema["properties"].items():
            parameters.append({"name": name, "in": "query", "required": False, "schema": schema})
    return parameters


def main() -> None:
    sys.stdout.write(json.dumps(build_openapi(), indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
