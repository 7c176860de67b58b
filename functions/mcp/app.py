"""Lambda entry point for the MCP endpoint (API Gateway HTTP API, payload v2).

Thin by design: Powertools logging, metrics and tracing around ``McpService``,
which is built once per container (cold start) and reused by warm invocations.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from memory_server.runtime import build_service

logger = Logger(service="memory-server")
tracer = Tracer(service="memory-server")


def _observe(tool: str, elapsed_ms: float, error_code: str | None) -> None:
    """Per-tool latency and errors as CloudWatch embedded metrics (one line each)."""
    with single_metric(
        name="ToolLatency", unit=MetricUnit.Milliseconds, value=elapsed_ms, namespace="MemoryServer"
    ) as metric:
        metric.add_dimension(name="tool", value=tool)
    if error_code is not None:
        with single_metric(
            name="ToolErrors", unit=MetricUnit.Count, value=1, namespace="MemoryServer"
        ) as metric:
            metric.add_dimension(name="tool", value=tool)
            metric.add_dimension(name="code", value=error_code)


service = build_service(observer=_observe)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)  # responses hold memory content
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    claims = (
        ((event.get("requestContext") or {}).get("authorizer") or {})
        .get("jwt", {})
        .get("claims", {})
    )
    logger.append_keys(
        workspace=(event.get("pathParameters") or {}).get("workspace"),
        principal=claims.get("sub"),
        api_request_id=(event.get("requestContext") or {}).get("requestId"),
    )
    response = service.handle(event, context)
    logger.info("handled", extra={"status": response["statusCode"]})
    return response
