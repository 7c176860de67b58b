"""The admin API's way to the management function: ``LambdaDirectory`` over the
Lambda Invoke contract (here ``LocalLambda``, the same contract in process)."""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

import pytest
from memory_local.lambdas import LocalLambda
from memory_server.admin.identity import LambdaDirectory
from memory_server.domain.errors import AdminError


def test_calls_go_through_json_and_come_back() -> None:
    created: list[dict[str, Any]] = []

    def management(event: dict[str, Any], context: Any) -> dict[str, Any]:
        created.append(event)
        if event["action"] == "create_agent_client":
            return {"client_id": "c-1", "client_secret": "s-1"}
        return {"deleted": event["client_id"] == "c-1"}

    functions = LocalLambda({"Management": management})
    directory = LambdaDirectory(functions, "Management")
    admin = "0b0e5f0c-4c1f-4f4e-9a39-0d6f3b7c2a11"
    assert directory.create_agent_client("acme", "ci", ("memory/read",), admin) == ("c-1", "s-1")
    assert directory.delete_agent_client("acme", "c-1") is True
    assert directory.delete_agent_client("acme", "c-2") is False
    # The workspace travels with every call: the management function acts on its keys only.
    assert created == [
        {
            "action": "create_agent_client",
            "workspace": "acme",
            "name": "ci",
            "scopes": ["memory/read"],
            "created_by": admin,
        },
        {"action": "delete_agent_client", "workspace": "acme", "client_id": "c-1"},
        {"action": "delete_agent_client", "workspace": "acme", "client_id": "c-2"},
    ]
    assert [name for name, _ in functions.calls] == ["Management"] * 3


def test_a_failing_or_missing_function_is_a_retryable_503() -> None:
    def broken(event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise RuntimeError("LimitExceededException")

    failing = LambdaDirectory(LocalLambda({"Management": broken}), "Management")
    with pytest.raises(AdminError) as refused:
        failing.create_agent_client("acme", "ci", ["memory/read"], str(uuid.uuid4()))
    assert (refused.value.status, refused.value.code) == (503, "unavailable")
    missing = LambdaDirectory(LocalLambda({}), "Management")
    with pytest.raises(AdminError) as unreachable:
        missing.delete_agent_client("acme", "c-1")
    assert unreachable.value.status == 503

    class Garbled:
        def invoke(self, **kwargs: Any) -> dict[str, Any]:
            return {"StatusCode": 200, "Payload": io.BytesIO(b"[1, 2]")}

    with pytest.raises(AdminError):
        LambdaDirectory(Garbled(), "Management").delete_agent_client("acme", "c-1")


def test_local_lambda_reports_errors_as_lambda_does() -> None:
    def broken(event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise ValueError("no such action")

    answer = LocalLambda({"F": broken}).invoke(FunctionName="F", Payload=b"{}")
    assert answer["FunctionError"] == "Unhandled"
    document = json.loads(answer["Payload"].read())
    assert (document["errorType"], document["errorMessage"]) == ("ValueError", "no such action")
