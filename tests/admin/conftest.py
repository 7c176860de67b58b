"""The admin API in process (the real service over the test database), and helpers."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from memory_local.dev import DevStack
from memory_server.admin.openapi import build_openapi
from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES
from memory_server.edge.service import McpService, Settings

from tests.builders import SharedStack, using_stack
from tests.endpoint.conftest import api_event

ALL_SCOPES = [GRANT_SCOPES[g] for g in ALL_GRANTS]
NO_ADMIN_SCOPES = [s for s in ALL_SCOPES if s != "memory/admin"]
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class FakeDirectory:
    """The user pool seams, in memory (the admin API's ``AgentClients``, the operators'
    ``Directory``): what was created and deleted."""

    clients: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    signed_out: list[str] = field(default_factory=list)

    def create_agent_client(
        self, workspace: str, name: str, scopes: Sequence[str], created_by: str
    ) -> tuple[str, str]:
        client_id = uuid.uuid4().hex[:26]
        self.clients[client_id] = (f"{workspace}.{name}", list(scopes))
        return client_id, "secret-" + client_id

    def delete_agent_client(self, workspace: str, client_id: str) -> bool:
        # As the management function: only a key made for this workspace.
        made = self.clients.get(client_id)
        if made is None or not made[0].startswith(f"{workspace}."):
            return False
        return self.delete_app_client(client_id)

    def delete_app_client(self, client_id: str) -> bool:
        self.deleted.append(client_id)
        return self.clients.pop(client_id, None) is not None

    def sign_out_and_disable(self, subject: str) -> dict[str, bool]:
        self.signed_out.append(subject)
        return {"found": True, "signed_out": True, "disabled": True}


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: Any

    @property
    def raw(self) -> str:
        return json.dumps(self.body) if self.body is not None else ""


def admin_event(
    workspace: str,
    method: str,
    path: str,
    *,
    sub: str | None,
    scopes: Sequence[str] = ALL_SCOPES,
    body: Any = None,
    query: str = "",
    client_id: str = "test-client",
) -> dict[str, Any]:
    return api_event(
        "ANY /w/{workspace}/admin/{proxy+}",
        f"/w/{workspace}/admin{path}",
        {"workspace": workspace, "proxy": path.lstrip("/")},
        sub=sub,
        scopes=scopes,
        method=method,
        query=query,
        body=body,
        client_id=client_id,
    )


def call(
    service: McpService,
    workspace: str,
    method: str,
    path: str,
    who: Any,
    *,
    scopes: Sequence[str] = ALL_SCOPES,
    body: Any = None,
    query: str = "",
    as_service: bool = False,
) -> Response:
    """The admin route as ``who`` (a token with ``scopes``; a service's client-credentials
    token when ``as_service``: its client id is its subject)."""
    subject = None if who is None else who.subject
    event = admin_event(
        workspace,
        method,
        path,
        sub=subject,
        scopes=scopes,
        body=body,
        query=query,
        client_id=subject if as_service and subject else "test-client",
    )
    result = service.invoke(event)
    text = result["body"]
    return Response(result["statusCode"], result["headers"], json.loads(text) if text else None)


def create_agent_key(
    service: McpService,
    workspace: str,
    who: Any,
    name: str,
    key_scopes: Sequence[str],
    *,
    scopes: Sequence[str] = ALL_SCOPES,
) -> Response:
    """``POST /agent-keys``: ``who`` (a token with ``scopes``) asks for an agent key
    ``name`` with ``key_scopes``."""
    return call(
        service,
        workspace,
        "POST",
        "/agent-keys",
        who,
        scopes=scopes,
        body={"name": name, "scopes": list(key_scopes)},
    )


@pytest.fixture(scope="session")
def directory() -> FakeDirectory:
    return FakeDirectory()


@pytest.fixture(scope="session")
def admin_service(database, directory) -> McpService:  # type: ignore[no-untyped-def]
    settings = Settings(database_url="unused", cursor_secret=b"c" * 32)
    service = McpService(settings, database)
    service.admin.directory = directory
    return service


@pytest.fixture(scope="session")
def openapi() -> dict[str, Any]:
    return build_openapi()


def assert_schema(openapi: dict[str, Any], name: str, instance: Any) -> None:
    """``instance`` against ``#/components/schemas/{name}`` of the OpenAPI document."""
    schema = {"$ref": f"#/components/schemas/{name}", "components": openapi["components"]}
    jsonschema.validate(instance, schema, cls=jsonschema.Draft202012Validator)


def response_schema(openapi: dict[str, Any], method: str, template: str, status: int) -> str:
    operation = openapi["paths"][f"/w/{{workspace}}/admin{template}"][method.lower()]
    ref = operation["responses"][str(status)]["content"]["application/json"]["schema"]["$ref"]
    return str(ref.rsplit("/", 1)[-1])


# -- the local stack (make dev's DevStack on the test server, shared by the session) --


@pytest.fixture(scope="package")
def stack(dev_stack: SharedStack) -> Iterator[DevStack]:
    with using_stack(dev_stack) as dev:
        yield dev
