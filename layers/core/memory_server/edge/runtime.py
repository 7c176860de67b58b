"""Assemble the service from the environment (the Lambda template sets these)."""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Mapping

import psycopg

from memory_server.data import migrate
from memory_server.data.pool import Database
from memory_server.domain.embedding import Embedder, EmbedderError, require_space
from memory_server.edge import aws_config
from memory_server.edge.service import McpService, Settings
from memory_server.operations import after_response
from memory_server.protocol.tools import Observer

logger = logging.getLogger(__name__)

# Environment variables the template sets; tests check the template against this.
ENVIRONMENT = (
    "DATABASE_URL",
    "PUBLIC_BASE_URL",
    "IDEMPOTENCY_TABLE",
    "AUDIT_BUS_NAME",
    "MANAGEMENT_FUNCTION",
    "SIGNIN_TABLE",
    "ALLOWED_ORIGINS",
    # Read by functions/mcp/app.py: "true" unless the function's tracing is Active,
    # so the X-Ray SDK is imported only when traces are recorded.
    "POWERTOOLS_TRACE_DISABLED",
    # Hybrid recall (embedder_from_env): "off", "bedrock" (with EMBEDDING_DIMENSIONS),
    # or "python:<module>:<factory>" (make dev's local model).
    "EMBEDDER",
    "EMBEDDING_DIMENSIONS",
)


def register_snapshot_hooks(db: Database) -> bool:
    """SnapStart: close the pool before the snapshot, open a new one after a restore.

    The hooks come from ``snapshot_restore_py``, which the Lambda Python runtime
    provides (not installed elsewhere: then nothing is registered). Returns whether
    they were registered.
    """
    try:
        hooks = importlib.import_module("snapshot_restore_py")
    except ImportError:
        return False
    hooks.register_before_snapshot(db.suspend)
    hooks.register_after_restore(db.resume)
    return True


def require_schema(db: Database) -> None:
    """Refuse to start on a database whose schema is not this release's
    (``migrate.SchemaVersionError``, naming the way out). A database that cannot be
    reached now is not refused: its requests answer ``unavailable`` until it can, and
    the next start checks again."""
    try:
        found = db.schema_version()
    except psycopg.OperationalError as error:
        logger.warning("schema version not checked: the database is unreachable (%s)", error)
        return
    migrate.require_version(found)


def require_embeddings(db: Database, embedder: Embedder | None) -> None:
    """Refuse to start (``EmbeddingSpaceMismatch``, naming the re-embed command) when
    the stored vectors are of another model or dimension than ``embedder``'s. Without
    an embedder search uses words alone and stored vectors are not read. An
    unreachable database is not refused (as in :func:`require_schema`)."""
    if embedder is None:
        return
    try:
        stored = db.embedding_spaces()
    except psycopg.OperationalError as error:
        logger.warning("embedding spaces not checked: the database is unreachable (%s)", error)
        return
    require_space(embedder, stored)


def embedder_from_env(env: Mapping[str, str]) -> Embedder | None:
    """The embedder ``EMBEDDER`` names, built now, so that a missing or corrupt model
    stops the start (``EmbedderError``) rather than the first search."""
    spec = env.get("EMBEDDER", "off").strip() or "off"
    if spec == "off":
        return None
    if spec == "bedrock":
        from memory_server.data.bedrock_embedder import BedrockEmbedder

        return BedrockEmbedder(dimensions=int(env.get("EMBEDDING_DIMENSIONS", "512")))
    if spec.startswith("python:") and spec.count(":") == 2:
        _, module, factory = spec.split(":")
        built: Embedder = getattr(importlib.import_module(module), factory)()
        return built
    raise EmbedderError(f"EMBEDDER must be off, bedrock or python:<module>:<factory>, not {spec!r}")


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
    register_snapshot_hooks(db)
    require_schema(db)
    events_client = dynamodb_client = None
    if settings.audit_bus or settings.idempotency_table or settings.signin_table:
        import boto3  # only when AWS services are configured

        events_client = aws_config.events_client() if settings.audit_bus else None
        dynamodb = settings.idempotency_table or settings.signin_table
        dynamodb_client = boto3.client("dynamodb") if dynamodb else None
    # In Lambda an internal extension publishes after the response (it must register
    # now, during init); elsewhere a worker thread does.
    later = after_response.for_environment(env.get("AWS_LAMBDA_RUNTIME_API"))
    embedder = embedder_from_env(env)
    require_embeddings(db, embedder)
    return McpService(
        settings,
        db,
        events_client,
        dynamodb_client,
        observer,
        after_response=later,
        embedder=embedder,
    )
