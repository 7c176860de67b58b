"""The local stack (``make dev``'s DevStack, shared by the session: ``dev_stack`` in
tests/conftest.py) on the test database server, and the official MCP Python SDK
client talking to it over real HTTP."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import httpx2
import jwt
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from memory_local import demo
from memory_local.dev import DevStack
from memory_server.admin import operators

from tests.builders import SharedStack, using_stack
from tests.tls import TLS

T = TypeVar("T")


@pytest.fixture(scope="package")
def stack(dev_stack: SharedStack) -> Iterator[DevStack]:
    with using_stack(dev_stack) as dev:
        yield dev


@pytest.fixture(scope="package")
def owner_db(stack: DevStack) -> Iterator[psycopg.Connection]:
    with psycopg.connect(stack.info["database_url"], autocommit=True) as conn:
        yield conn


def token_subject(token: str) -> str:
    """The ``sub`` claim of an access token (read, not verified)."""
    return str(jwt.decode(token, options={"verify_signature": False})["sub"])


def empty_acme(stack: DevStack, owner: psycopg.Connection) -> str:
    """A new workspace with acme's members, grants and registered contexts (the demo's,
    the same tokens reach it) and not one record: for a test whose assertions cover
    everything a view shows (the briefing's order, its byte budget), which records
    other tests leave in acme on the shared stack would otherwise change. Its slug."""
    slug = f"acme-{uuid.uuid4().hex[:10]}"
    workspace = operators.ensure_workspace(owner, slug, memory_enabled=True)
    members = {
        **{name: ("person", acme["acme"]) for name, acme in demo.PEOPLE.items() if "acme" in acme},
        **{
            name: ("service", acme["acme"])
            for name, (_, acme) in demo.SERVICES.items()
            if "acme" in acme
        },
    }
    ids = {}
    for name, (kind, grants) in members.items():
        subject = token_subject(stack.info["tokens"][name])
        ids[name] = operators.ensure_principal(owner, kind, subject, name)  # type: ignore[arg-type]
        operators.set_membership(owner, workspace, ids[name], grants)
    for key, names in demo.CONTEXTS["acme"].items():
        operators.register_context(owner, workspace, key, [ids[n] for n in names])
    return slug


def workspace_url(stack: DevStack, workspace: str) -> str:
    """The MCP endpoint of a demo workspace or of one a test made."""
    known: dict[str, str] = stack.info["workspaces"]
    return known.get(workspace) or f"{stack.info['api_url']}/w/{workspace}/mcp"


def run(coro: Awaitable[T]) -> T:
    return asyncio.run(coro)  # type: ignore[arg-type]


@asynccontextmanager
async def connect(
    stack: DevStack,
    who: str,
    *,
    workspace: str = "acme",
    mode: str = "auto",
    context: str | None = None,
):  # type: ignore[no-untyped-def]
    headers = {"Authorization": f"Bearer {stack.info['tokens'][who]}"}
    if context is not None:
        headers["Memory-Context"] = context
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30), verify=TLS)
    async with (
        http,
        Client(
            streamable_http_client(workspace_url(stack, workspace), http_client=http),
            mode=mode,
            cache=None,
        ) as client,
    ):  # type: ignore[arg-type]
        yield client


async def call(client: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool call's structured result; tool errors come back as {"error": {...}}."""
    result = await client.call_tool(tool, arguments)
    structured = result.structured_content
    assert structured is not None
    return dict(structured)


async def create(client: Any, uri: str, content: str) -> dict[str, Any]:
    """``memory_write`` of a new record (expected revision 0): its structured result."""
    return await call(client, "memory_write", uri=uri, content=content, expected_revision=0)


Call = Callable[..., Awaitable[dict[str, Any]]]
