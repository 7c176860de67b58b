"""The local stack (``make dev``'s DevStack, shared by the session: ``dev_stack`` in
tests/conftest.py) on the test database server, and the official MCP Python SDK
client talking to it over real HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from memory_local.dev import DevStack

from tests.builders import SharedStack, using_stack

T = TypeVar("T")


@pytest.fixture(scope="package")
def stack(dev_stack: SharedStack) -> Iterator[DevStack]:
    with using_stack(dev_stack) as dev:
        yield dev


@pytest.fixture(scope="package")
def owner_db(stack: DevStack) -> Iterator[psycopg.Connection]:
    with psycopg.connect(stack.info["database_url"], autocommit=True) as conn:
        yield conn


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
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30))
    async with (
        http,
        Client(
            streamable_http_client(stack.info["workspaces"][workspace], http_client=http),
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
