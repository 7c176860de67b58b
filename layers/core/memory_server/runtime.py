"""Assemble the service from the environment (the Lambda template sets these)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from . import aws_config
from .db import Database
from .protocol.tools import Observer
from .service import McpService, Settings

# Environment variables the template sets; tests check the template against this.
ENVIRONMENT = (
    "DATABASE_URL",
    "PUBLIC_BASE_URL",
    "IDEMPOTENCY_TABLE",
    "AUDIT_BUS_NAME",
    "MANAGEMENT_FUNCTION",
    "SIGNIN_TABLE",
    "ALLOWED_ORIGINS",
)


def build_service(
    env: Mapping[str, str] = os.environ, *, observer: Observer | None = None
) -> McpService:
    # The cursor key from Secrets Manager (CURSOR_SECRET_ARN), else CURSOR_SECRET.
    settings = Settings.from_env({**env, "CURSOR_SECRET": aws_config.cursor_secret(env)})
    db = Database(
        aws_config.database_conninfo(env),  # a token per connection with DB_IAM_AUTH
        min_size=1,
        max_size=int(env.get("DB_POOL_SIZE", "1")),
    )
    events_client = dynamodb_client = None
    if settings.audit_bus or settings.idempotency_table or settings.signin_table:
        import boto3  # only when AWS services are configured

        events_client = boto3.client("events") if settings.audit_bus else None
        dynamodb = settings.idempotency_table or settings.signin_table
        dynamodb_client = boto3.client("dynamodb") if dynamodb else None
    return McpService(settings, db, events_client, dynamodb_client, observer)
