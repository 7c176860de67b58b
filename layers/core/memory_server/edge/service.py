"""The service assembled once per process: what serves one API Gateway HTTP API event.

Everything is bound here, at start-up: the store, the authenticator, the tool table
(``memory_remember`` behind the idempotency layer when one is configured), the
dispatcher, the post-commit hook, the admin API and the HTTP edge. A request then
walks one way: :mod:`.routing` → :mod:`.authenticate` → route → tool handler → domain → data
access, and back through one formatter.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from memory_server.admin.http import AdminApi
from memory_server.admin.identity import LambdaDirectory
from memory_server.data.pool import Database
from memory_server.domain.embedding import Embedder
from memory_server.edge.routing import Edge
from memory_server.gateway.authenticate import Authenticator
from memory_server.gateway.events import token_identity
from memory_server.gateway.origins import OriginPolicy, parse_list
from memory_server.operations import audit_events as audit
from memory_server.operations import memory_remember
from memory_server.operations.after_response import AfterResponse
from memory_server.operations.idempotency import DynamoDbIdempotency
from memory_server.operations.store import Store
from memory_server.protocol import completions, prompts, resources
from memory_server.protocol.dispatcher import Dispatcher
from memory_server.protocol.endpoint import McpRoute
from memory_server.protocol.instructions import INSTRUCTIONS
from memory_server.protocol.tools import Observer, ToolTable
from memory_server.signin.registry import SigninTable, UsageRecorder


@dataclass(frozen=True)
class Settings:
    database_url: str
    cursor_secret: bytes
    public_base_url: str | None = None
    idempotency_table: str | None = None
    audit_bus: str | None = None
    # The management function that creates and deletes agent keys' app clients (the
    # admin API); optional, and this function itself holds no Cognito permission.
    management_function: str | None = None
    # Where registered clients' last use is recorded (the sweep reads it).
    signin_table: str | None = None
    # Web origins allowed besides the deployment's own ("scheme://host:*": any port).
    allowed_origins: tuple[str, ...] = ()
    # Host names the Host header must name; empty: not checked (set by make dev).
    allowed_hosts: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Settings:
        secret = env.get("CURSOR_SECRET", "")
        if len(secret) < 32:
            raise RuntimeError("CURSOR_SECRET must be set to at least 32 characters")
        return cls(
            database_url=env["DATABASE_URL"],
            cursor_secret=secret.encode(),
            public_base_url=env.get("PUBLIC_BASE_URL") or None,
            idempotency_table=env.get("IDEMPOTENCY_TABLE") or None,
            audit_bus=env.get("AUDIT_BUS_NAME") or None,
            management_function=env.get("MANAGEMENT_FUNCTION") or None,
            signin_table=env.get("SIGNIN_TABLE") or None,
            allowed_origins=parse_list(env.get("ALLOWED_ORIGINS")),
            allowed_hosts=parse_list(env.get("ALLOWED_HOSTS")),
        )


@dataclass
class McpService:
    settings: Settings
    db: Database
    events_client: Any = None
    dynamodb_client: Any = None
    observer: Observer | None = None
    lambda_client: Any = None  # boto3 lambda (agent keys); made from the environment if None
    # Where post-commit work runs once the response has gone (runtime.build_service
    # chooses); the default runs it before the handler returns.
    after_response: AfterResponse = field(default_factory=AfterResponse)
    embedder: Embedder | None = None  # hybrid recall when set (runtime.embedder_from_env)
    edge: Edge = field(init=False)
    # The post-commit hook (audit publishing, embedding); make dev moves its embedding
    # to a process of its own (memory_local.embedding_worker).
    post_commit: audit.Publisher = field(init=False)

    def __post_init__(self) -> None:
        self.store = Store(self.db, self.settings.cursor_secret, embedder=self.embedder)
        sink = (
            audit.EventBridgeSink(self.events_client, self.settings.audit_bus)
            if self.events_client is not None and self.settings.audit_bus
            else None
        )
        publisher = audit.Publisher(self.db, sink, self.after_response, self.embedder)
        self.post_commit = publisher
        origins = OriginPolicy(
            self.settings.allowed_origins,
            self.settings.allowed_hosts,
            self.settings.public_base_url,
        )
        auth = Authenticator(self.db, self.settings.public_base_url, origins)

        self.idempotency = None
        remember = None
        if self.settings.idempotency_table:
            self.idempotency = DynamoDbIdempotency(
                self.settings.idempotency_table, self.dynamodb_client
            )
            remember = self.idempotency.guard(partial(memory_remember, self.store))
        self.tools = ToolTable(self.store, remember=remember, observer=self.observer)
        self.dispatcher = Dispatcher(
            {
                "tools/list": self.tools.list_tools,
                "tools/call": self.tools.call_tool,
                "resources/list": resources.list_resources,
                "resources/templates/list": resources.list_templates,
                "resources/read": partial(resources.read_resource, self.store),
                "prompts/list": partial(prompts.list_prompts, self.store),
                "prompts/get": partial(prompts.get_prompt, self.store),
                "completion/complete": partial(completions.complete, self.store),
            },
            instructions=INSTRUCTIONS,
        )

        directory = None
        if self.settings.management_function:
            if self.lambda_client is None:
                import boto3  # only when agent keys are configured

                self.lambda_client = boto3.client("lambda")
            directory = LambdaDirectory(self.lambda_client, self.settings.management_function)
        self.admin = AdminApi(self.db, auth, publisher, directory)
        self.usage = None
        if self.settings.signin_table:
            if self.dynamodb_client is None:
                import boto3

                self.dynamodb_client = boto3.client("dynamodb")
            self.usage = UsageRecorder(
                SigninTable(self.dynamodb_client, self.settings.signin_table)
            )
        self.edge = Edge(
            McpRoute(auth, self.dispatcher, publisher), self.admin, self.settings.public_base_url
        )

    def invoke(self, event: Mapping[str, Any], lambda_context: Any = None) -> dict[str, Any]:
        if self.idempotency is not None:
            self.idempotency.register(lambda_context)
        with self.after_response.invocation(getattr(lambda_context, "aws_request_id", None)):
            response = self.edge.route(event, lambda_context)
            if self.usage is not None and 200 <= int(response.get("statusCode", 500)) < 300:
                # Only a member's successful call keeps a registered client alive: the
                # MCP and admin routes answer 2xx only after resolving the caller as a
                # member (the metadata route carries no token).
                identity = token_identity(event)
                if identity is not None and identity.client_id:
                    self.usage.seen(identity.client_id)  # at most daily; never raises
            return response
