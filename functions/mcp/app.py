"""Lambda entry point for the MCP endpoint (API Gateway HTTP API, payload v2).

Thin by design: Powertools logging, metrics and tracing around ``McpService``,
which is built once per container (cold start) and reused by warm invocations.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from memory_server.edge import logs
from memory_server.edge.runtime import build_service

logger = logs.function_logger("memory-server")
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def _traced(handler: Handler) -> Handler:
    """X-Ray tracing via Powertools Tracer, unless tracing is disabled.

    The Tracer imports the X-Ray SDK and botocore: about 0.37 s of cold start
    (measured). With tracing disabled that import is skipped entirely.
    """
    if os.environ.get("POWERTOOLS_TRACE_DISABLED", "").lower() in ("1", "true"):
        return handler
    from aws_lambda_powertools import Tracer

    tracer = Tracer(service="memory-server")
    # Responses hold memory content: never captured into traces.
    traced: Handler = tracer.capture_lambda_handler(handler, capture_response=False)
    return traced


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


# single_metric prints its line even with POWERTOOLS_METRICS_DISABLED (make dev sets
# it): a disabled metric is not observed at all.
_metrics_on = os.environ.get("POWERTOOLS_METRICS_DISABLED", "").lower() not in ("1", "true")
service = build_service(observer=_observe if _metrics_on else None)
logs.route_to(logger)  # memory_server.* and the pool's loggers: JSON, the request's keys


@_traced
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    verified = ((event.get("requestContext") or {}).get("authorizer") or {}).get("lambda", {})
    logger.append_keys(
        workspace=(event.get("pathParameters") or {}).get("workspace"),
        principal=verified.get("sub"),
        api_request_id=(event.get("requestContext") or {}).get("requestId"),
    )
    response = service.invoke(event, context)
    logger.info("handled", extra={"status": response["statusCode"]})
    return response
