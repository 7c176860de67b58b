"""Every sample event in events/ through the real Lambda handler (functions/mcp/app.py)."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from memory_server.admin import operators

ROOT = Path(__file__).resolve().parents[2]
# In the order a session would send them; each expected to succeed unless listed.
SEQUENCE = [
    "initialize",
    "tools_list",
    "memory_write",
    "memory_read",
    "memory_list",
    "memory_search",
    "memory_remember",
    "memory_move",
    "memory_delete",
    "metadata",
    "unauthenticated",
]
EXPECTED_STATUS = {"unauthenticated": 401}


@dataclass
class FakeLambdaContext:
    function_name: str = "McpFunction"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:McpFunction"
    aws_request_id: str = "sample-request"

    def get_remaining_time_in_millis(self) -> int:
        return 10_000


@pytest.fixture(scope="module")
def app(cluster, monkeypatch_module) -> ModuleType:  # type: ignore[no-untyped-def]
    monkeypatch_module.setenv("DATABASE_URL", cluster.runtime_url)
    monkeypatch_module.setenv("CURSOR_SECRET", "x" * 40)
    monkeypatch_module.setenv(
        "AUTH_ISSUER", "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_sample"
    )
    monkeypatch_module.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch_module.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    spec = importlib.util.spec_from_file_location("mcp_app", ROOT / "functions" / "mcp" / "app.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    module.service.db.close()


@pytest.fixture(scope="module")
def monkeypatch_module():  # type: ignore[no-untyped-def]
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_every_sample_event(app, cluster) -> None:  # type: ignore[no-untyped-def]
    import psycopg

    with psycopg.connect(cluster.owner_url, autocommit=True) as owner:
        if owner.execute("SELECT 1 FROM memory.workspaces WHERE slug = 'events-demo'").fetchone():
            pytest.fail("events-demo already seeded: this test must run once per database")
        ws = operators.ensure_workspace(owner, "events-demo", memory_enabled=True)
        alice = operators.ensure_principal(owner, "person", "events-alice-sub", "alice")
        operators.set_membership(
            owner, ws, alice, ["read", "write:personal", "write:shared", "delete"]
        )
    files = {p.stem for p in (ROOT / "events").glob("*.json")}
    assert files == set(SEQUENCE), "every sample event is exercised"
    for name in SEQUENCE:
        event = json.loads((ROOT / "events" / f"{name}.json").read_text())
        response = app.handler(event, FakeLambdaContext())
        assert response["statusCode"] == EXPECTED_STATUS.get(name, 200), (name, response)
        if name.startswith("memory_"):
            result = json.loads(response["body"])["result"]
            assert result["isError"] is False, (name, result)
