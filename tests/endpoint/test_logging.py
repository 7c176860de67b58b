"""Every log line of the MCP function is Powertools JSON with the request's keys.

The service's modules (``memory_server.*``) and the connection pool (``psycopg.pool``)
log through the standard library; ``functions/mcp/app.py`` routes them through its
Powertools logger (``memory_server.edge.logs``). Here a change's audit publishing fails
after the response (EventBridge unreachable), and the warning it logs must carry the
same request keys the handler's own line does.
"""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from memory_server.domain.grants import ALL_GRANTS, GRANT_SCOPES

from tests.endpoint.conftest import event, tool_call

ROOT = Path(__file__).resolve().parents[2]
SCOPES = [GRANT_SCOPES[g] for g in ALL_GRANTS]


class Context:
    function_name = "McpFunction"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:McpFunction"
    aws_request_id = "lambda-request-7"

    def get_remaining_time_in_millis(self) -> int:
        return 10_000


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def app(cluster: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.setenv("DATABASE_URL", cluster.runtime_url)
    monkeypatch.setenv("CURSOR_SECRET", "x" * 40)
    monkeypatch.setenv("AUTH_ISSUER", "https://cognito-idp.us-east-1.amazonaws.com/pool")
    monkeypatch.setenv("AUDIT_BUS_NAME", "memory-audit")
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed_port()}")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    monkeypatch.delenv("AWS_LAMBDA_RUNTIME_API", raising=False)
    spec = importlib.util.spec_from_file_location("mcp_app_logs", ROOT / "functions/mcp/app.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    module.service.db.close()


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_library_log_lines_are_json_with_the_request_keys(app: ModuleType, world: Any) -> None:
    # Powertools loggers of one service share their standard logger: another copy of
    # the app (the local stack's) may have set it up first, at another level.
    stream = io.StringIO()
    handler = app.logger.registered_handler
    previous_stream, previous_level = handler.setStream(stream), app.logger.log_level
    app.logger.setLevel("INFO")
    try:
        logged, workspace = _run(app, world)
    finally:
        handler.setStream(previous_stream)
        app.logger.setLevel(previous_level)
    _check(logged, workspace)


def _run(app: ModuleType, world: Any) -> tuple[list[dict[str, Any]], str]:
    ws = world.workspace()
    sub = ws.person("alice").subject
    stream = app.logger.registered_handler.stream
    body = tool_call(
        "memory_write", uri="memory://workspace/notes/logged.md", content="x", expected_revision=0
    )
    request = event(ws.slug, sub=sub, scopes=SCOPES, body=body)
    response = app.handler(request, Context())
    assert response["statusCode"] == 200
    assert app.service.after_response.wait_idle(30)  # PutEvents failed, after the response
    logging.getLogger("psycopg.pool").warning("pool line")  # the pool's logger, routed too
    return lines(stream), ws.slug


def _check(logged: list[dict[str, Any]], workspace: str) -> None:
    handled = next(line for line in logged if line["message"] == "handled")
    deferred = next(line for line in logged if line["message"].startswith("audit publish"))
    pool = next(line for line in logged if line["message"] == "pool line")
    for line in (deferred, pool):
        for key in ("workspace", "principal", "api_request_id", "function_request_id"):
            assert line[key] == handled[key], key
    assert handled["workspace"] == workspace
    assert handled["function_request_id"] == "lambda-request-7"
    assert (
        deferred["name"] == "memory_server.operations.audit_events"
        and deferred["level"] == "WARNING"
    )
    assert pool["name"] == "psycopg.pool"
    # The pool's INFO chatter (a line per checkout) stays out.
    assert logging.getLogger("psycopg").level == logging.WARNING
    assert not [
        line
        for line in logged
        if line.get("name", "").startswith("psycopg") and (line["level"] == "INFO")
    ]
