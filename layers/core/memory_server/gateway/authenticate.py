"""Authentication at the edge: identity from the verified token, membership and
grants from the server, the listening context from the host's header.

One :func:`Authenticator.authenticate` serves the MCP and admin routes alike; each
route states what it requires as a :class:`Gate`, and both share the origin check
(:mod:`.origins`). The order of the checks is part
of the contract: a request without a valid token gets 401 whatever else is wrong,
and nothing about a workspace is said before the caller proved who it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memory_server.data.pool import Database
from memory_server.domain.caller import Caller
from memory_server.domain.contexts import parse_context
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import (
    EdgeError,
    ToolError,
    edge_unavailable,
    insufficient_scope,
    no_such_workspace,
    unauthenticated,
)
from memory_server.domain.grants import SCOPE_GRANTS
from memory_server.domain.limits import TOKEN_LEEWAY_S
from memory_server.gateway.events import (
    SLUG,
    TokenIdentity,
    request_headers,
    resource_url,
    token_identity,
)
from memory_server.gateway.origins import OriginPolicy
from memory_server.operations.membership import resolve_caller


@dataclass(frozen=True, slots=True)
class Gate:
    """What a route requires before its handler runs."""

    scope: str | None  # a token scope the route needs; None: any memory scope
    challenge_scope: str  # the scope a 401 challenge asks for
    methods: tuple[str, ...] | None  # HTTP methods served (None: the route decides)
    listening: bool  # the request names a listening context (Memory-Context)
    memory_required: bool  # a workspace whose memory feature is off answers 404


MCP_GATE = Gate(None, "memory/read", ("POST",), listening=True, memory_required=True)
ADMIN_GATE = Gate("memory/admin", "memory/admin", None, listening=False, memory_required=False)


@dataclass(frozen=True, slots=True)
class Authenticator:
    db: Database
    public_base_url: str | None = None  # how clients name this service (RFC 8707 resources)
    # Origin (and, locally, Host) validation against DNS rebinding, for every route.
    origins: OriginPolicy = field(default_factory=OriginPolicy)
    clock: Callable[[], float] = time.time  # wall clock, as a token's exp is

    def authenticate(
        self, event: Mapping[str, Any], workspace: str, gate: Gate, deadline: Deadline
    ) -> Caller:
        """The caller of this request, or an ``EdgeError`` saying why not."""
        identity = self.identify(event, workspace, gate)
        raw_context = None
        if gate.listening:
            raw_context = request_headers(event).get("memory-context")
            if raw_context is None:
                raw_context = (event.get("queryStringParameters") or {}).get("context")
        try:
            context = parse_context(raw_context)
        except ToolError as error:
            raise EdgeError(
                400,
                "invalid_context",
                body={"error": "invalid_context", "message": error.message},
            ) from None
        try:
            membership = resolve_caller(
                self.db,
                workspace=workspace,
                subject=identity.subject,
                scopes=identity.scopes,
                context=context,
                request_id=event.get("requestContext", {}).get("requestId"),
                deadline=deadline,
            )
        except ToolError:  # the database timed out or went away before any handler ran
            raise edge_unavailable() from None
        if membership is None or (gate.memory_required and not membership.memory_enabled):
            raise no_such_workspace()
        return membership.caller

    def identify(self, event: Mapping[str, Any], workspace: str, gate: Gate) -> TokenIdentity:
        """Who the verified token says is calling, after every check that needs no
        membership (token, resource binding, scope, origin, method, workspace name):
        all that an invitee, not yet a member, passes before accepting."""
        identity = token_identity(event)
        if identity is None:
            raise unauthenticated(gate.challenge_scope)
        # API Gateway reuses the authorizer's decision for a token for minutes, past
        # the token's expiry: with the same clock-skew allowance the authorizer gives,
        # an expired token stops here.
        if identity.expires_at + TOKEN_LEEWAY_S <= self.clock():
            raise unauthenticated(gate.challenge_scope)
        # A token bound to resources (RFC 8707: Cognito puts the requested resource in
        # ``aud``) is good only at those. The authorizer checks it too, but its cached
        # decision is reused across workspaces, so the check that counts is this one.
        if identity.audiences and (
            resource_url(event, workspace, self.public_base_url) not in identity.audiences
        ):
            raise unauthenticated(gate.challenge_scope)
        scopes = identity.scopes
        if gate.scope is None:
            allowed = any(scope in SCOPE_GRANTS for scope in scopes)
        else:
            allowed = gate.scope in scopes
        if not allowed:
            raise insufficient_scope(gate.scope or gate.challenge_scope)
        self.origins.check(event)
        method = event.get("requestContext", {}).get("http", {}).get("method", "GET")
        if gate.methods is not None and method not in gate.methods:
            raise EdgeError(405, "method_not_allowed", headers={"allow": ", ".join(gate.methods)})
        if not SLUG.fullmatch(workspace):
            raise no_such_workspace()
        return identity
