"""Endpoint benchmark: handler overhead over the store call, and cold start.

Run as ``python -m bench.endpoint_bench`` (see docs/endpoint.md). Starts its own
small embedded PostgreSQL under ``.tmp/endpoint-bench`` unless ``DATABASE_URL`` is
set, seeds one workspace, then:

- **warm overhead**: the same ``memory_read``, ``memory_search`` and ``memory_list``
  calls, and ``prompts/list``, ``prompts/get`` and ``completion/complete``, timed
  through the whole Lambda handler (API Gateway v2 event in, response out: auth
  context, caller resolution, JSON-RPC, validation, formatting) and as the bare
  domain operation; the difference per call is what the endpoint adds;
- **cold start**: a fresh interpreter imports ``functions/mcp/app.py`` (building the
  service) and answers its first request; timed end to end, several runs.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from memory_local.postgres import admin_server
from memory_server.admin import operators
from memory_server.data.pool import Database
from memory_server.data.provision import Passwords, Provisioned, provision
from memory_server.domain.arguments import ListArgs, ReadArgs, SearchArgs, WriteArgs
from memory_server.domain.contexts import parse_context
from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES
from memory_server.domain.limits import PROMPTS_PAGE_ITEMS
from memory_server.edge.service import McpService, Settings
from memory_server.operations import memory_list, memory_read, memory_search, memory_write
from memory_server.operations.membership import resolve_caller
from memory_server.operations.path_completion import complete_paths
from memory_server.operations.skills import skill_page, skill_prompt
from memory_server.operations.store import Store
from memory_server.signin.authorizer import authorizer_context

from .timing import cold_starts, durations_ms, percentiles, save_results

ROOT = Path(__file__).resolve().parents[1]
SKILLS = 30  # skills served as prompts (prompts/list pages them within the budget)
SCOPES = [GRANT_SCOPES[g] for g in ALL_GRANTS]
# The cold start's first request (bench.timing.cold_starts): a Lambda context too.
COLD_START_REQUEST = """
event = json.loads(sys.argv[2])
class Ctx:
    function_name = "McpFunction"; memory_limit_in_mb = 512; aws_request_id = "cold"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:McpFunction"
    def get_remaining_time_in_millis(self): return 10000
response = app.handler(event, Ctx())
"""


def event(workspace: str, subject: str, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": "2.0",
        "rawPath": f"/w/{workspace}/mcp",
        "headers": {"content-type": "application/json", "mcp-protocol-version": "2025-11-25"},
        "pathParameters": {"workspace": workspace},
        "requestContext": {
            "http": {"method": "POST"},
            "requestId": str(uuid.uuid4()),
            "domainName": "bench.local",
            "authorizer": {
                "lambda": authorizer_context(
                    subject, "bench-client", SCOPES, expires_at=int(time.time()) + 3600
                )
            },
        },
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def timed(fn: Any, iterations: int) -> list[float]:
    for _ in range(min(50, iterations)):
        fn()
    return durations_ms(fn, iterations)


def bench_workspace(admin_url: str) -> tuple[Provisioned, str, str]:
    """Provisions the server's own database (roles and schema) with one workspace and
    one member holding every grant: the roles' URLs, the workspace's slug and the
    member's subject."""
    roles = provision(admin_url, Passwords.generate(auditor=False))
    slug, subject = f"bench-{uuid.uuid4().hex[:8]}", f"bench-{uuid.uuid4().hex}"
    with psycopg.connect(roles.owner_url, autocommit=True) as owner:
        ws = operators.ensure_workspace(owner, slug, memory_enabled=True)
        pid = operators.ensure_principal(owner, "person", subject, "bench")
        operators.set_membership(owner, ws, pid, ALL_GRANTS)
    return roles, slug, subject


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--cold-runs", type=int, default=7)
    args = parser.parse_args()

    with admin_server(ROOT / ".tmp" / "endpoint-bench") as (admin_url, _):
        roles, slug, subject = bench_workspace(admin_url)
        runtime_url = roles.runtime_url
        db = Database(runtime_url, max_size=2)
        store = Store(db, b"b" * 32)
        membership = resolve_caller(
            db, workspace=slug, subject=subject, scopes=SCOPES, context=parse_context(None)
        )
        assert membership is not None
        caller = membership.caller
        for i in range(200):
            memory_write(
                store,
                caller,
                WriteArgs(
                    uri=f"memory://workspace/notes/n{i}.md",
                    expected_revision=0,
                    content=f"# Note {i}\nThe quarterly planning notes mention budget item {i}.",
                    source=None,
                    context=None,
                ),
            )
        for i in range(SKILLS):
            name = f"skill-{i:02d}"
            memory_write(
                store,
                caller,
                WriteArgs(
                    uri=f"memory://workspace/skills/{name}/SKILL.md",
                    expected_revision=0,
                    content=(
                        f"---\nname: {name}\ndescription: Step by step for task {i}, "
                        "checked against the release checklist\narguments: target\n---\n"
                        + "1. Do the next step and write down what happened.\n"
                        * 40
                    ),
                    source=None,
                    context=None,
                ),
            )
        service = McpService(Settings(runtime_url, b"b" * 32), db)

        read_args = ReadArgs(
            uri="memory://workspace/notes/n7.md", offset=0, max_bytes=16384, history=False
        )
        search_args = SearchArgs(
            query="quarterly budget", namespace="all", kinds=["memories", "notes"], limit=8
        )
        list_args = ListArgs(prefix="memory://workspace/notes/", limit=20, cursor=None)
        template = "memory://workspace/{kind}/{+path}"
        # name: (the bare domain call, the JSON-RPC method and params of the same call)
        cases: dict[str, tuple[Any, str, dict[str, Any]]] = {
            "memory_read": (
                lambda: memory_read(store, caller, read_args),
                "tools/call",
                {"name": "memory_read", "arguments": {"uri": read_args.uri}},
            ),
            "memory_search": (
                lambda: memory_search(store, caller, search_args),
                "tools/call",
                {"name": "memory_search", "arguments": {"query": search_args.query}},
            ),
            "memory_list": (
                lambda: memory_list(store, caller, list_args),
                "tools/call",
                {"name": "memory_list", "arguments": {"prefix": list_args.prefix, "limit": 20}},
            ),
            "prompts/list": (
                lambda: skill_page(store, caller, None, PROMPTS_PAGE_ITEMS),
                "prompts/list",
                {},
            ),
            "prompts/get": (
                lambda: skill_prompt(store, caller, "skill-07"),
                "prompts/get",
                {"name": "skill-07", "arguments": {"target": "staging"}},
            ),
            "completion/complete": (
                lambda: complete_paths(store, caller, "workspace", "notes", "n1"),
                "completion/complete",
                {
                    "ref": {"type": "ref/resource", "uri": template},
                    "argument": {"name": "path", "value": "n1"},
                    "context": {"arguments": {"kind": "notes"}},
                },
            ),
        }
        results: dict[str, Any] = {}
        for name, (bare, method, params) in cases.items():
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}

            def through_handler(body: dict[str, Any] = body) -> None:
                response = service.invoke(event(slug, subject, body))
                assert response["statusCode"] == 200 and '"error"' not in response["body"][:40]

            store_ms = timed(bare, args.iterations)
            handler_ms = timed(through_handler, args.iterations)
            results[name] = {
                "store": percentiles(store_ms),
                "handler": percentiles(handler_ms),
                "overhead": {
                    k: percentiles(handler_ms)[k] - percentiles(store_ms)[k]
                    for k in ("p50", "p95", "p99")
                },
            }
        db.close()

        env = {
            **os.environ,
            "DATABASE_URL": runtime_url,
            "CURSOR_SECRET": "c" * 40,
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
        }
        first = event(
            slug,
            subject,
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": cases["memory_read"][2]},
        )
        results["cold_start"] = cold_starts(
            ROOT / "functions/mcp/app.py",
            first,
            env,
            args.cold_runs,
            module="app",
            request=COLD_START_REQUEST,
            accepted='response["statusCode"] == 200',
        )

    save_results("endpoint", results)


if __name__ == "__main__":
    main()
