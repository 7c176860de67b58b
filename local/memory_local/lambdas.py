"""A stand-in for ``lambda:InvokeFunction`` between local functions.

In AWS the MCP function's admin API invokes the management function through the
Lambda API (``LambdaDirectory``). Locally both handlers live in this process; this
client gives ``LambdaDirectory`` the same contract: the payload goes through JSON
both ways, and a handler that raises comes back as ``FunctionError: Unhandled`` with
Lambda's error document, never as a Python exception.
"""

from __future__ import annotations

import io
import json
import traceback
from collections.abc import Callable, Mapping
from typing import Any

Handler = Callable[[dict[str, Any], Any], Any]


class LocalLambda:
    def __init__(self, functions: Mapping[str, Handler]) -> None:
        self.functions = dict(functions)
        self.calls: list[tuple[str, dict[str, Any]]] = []  # (function, event), for tests

    def invoke(self, *, FunctionName: str, Payload: bytes | str = b"{}") -> dict[str, Any]:
        handler = self.functions.get(FunctionName)
        if handler is None:
            raise LookupError(f"Function not found: {FunctionName}")
        event = json.loads(Payload)
        self.calls.append((FunctionName, event))
        try:
            result = json.dumps(handler(event, None))
        except Exception as exc:
            document = {
                "errorMessage": str(exc),
                "errorType": type(exc).__name__,
                "stackTrace": traceback.format_exc().splitlines(),
            }
            return {
                "StatusCode": 200,
                "FunctionError": "Unhandled",
                "Payload": io.BytesIO(json.dumps(document).encode()),
            }
        return {"StatusCode": 200, "Payload": io.BytesIO(result.encode())}
