"""The admin API's way to the management function: ``LambdaDirectory`` over the
Lambda Invoke contract (here ``LocalLambda``, the same contract in process)."""

from __future__ import annotations

import io
import json
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
    assert directory.create_agent_client("acme.ci", ("memory/read",)) == ("c-1", "s-1")
    assert directory.delete_agent_client("c-1") is True
    assert directory.delete_agent_client("c-2") is False
    assert created[0] == {
        "action": "create_agent_client",
        "name": "acme.ci",
        "scopes": ["memory/read"],
    }
    assert [name for name, _ in functions.calls] == ["Management"] * 3


def test_a_failing_or_missing_function_is_a_retryable_503() -> None:
    def broken(event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise RuntimeError("LimitExceededException")

    failing = LambdaDirectory(LocalLambda({"Management": broken}), "Management")
    with pytest.raises(AdminError) as refused:
        failing.create_agent_client("acme.ci", ["memory/read"])
    assert (refused.value.status, refused.value.code) == (503, "unavailable")
    missing = LambdaDirectory(LocalLambda({}), "Management")
    with pytest.raises(AdminError) as unreachable:
        missing.delete_agent_client("c-1")
    assert unreachable.value.status == 503

    class Garbled:
        def invoke(self, **kwargs: Any) -> dict[str, Any]:
            return {"StatusCode": 200, "Payload": io.BytesIO(b"[1, 2]")}

    with pytest.raises(AdminError):
        LambdaDirectory(Garbled(), "Management").delete_agent_client("c-1")


def test_local_lambda_reports_errors_as_lambda_does() -> None:
    def broken(event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise ValueError("no such action")

    answer = LocalLambda({"F": broken}).invoke(FunctionName="F", Payload=b"{}")
    assert answer["FunctionError"] == "Unhandled"
    document = json.loads(answer["Payload"].read())
    assert (document["errorType"], document["errorMessage"]) == ("ValueError", "no such action")
