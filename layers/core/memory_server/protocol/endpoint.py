"""The MCP route: ``POST /w/{workspace}/mcp`` after the edge matched it.

Authenticate (``MCP_GATE`` of :mod:`memory_server.gateway.authenticate`), hand the body to
the dispatcher, and, when
a tool changed something, run the post-commit hook once the change has committed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memory_server.domain.deadline import Deadline
from memory_server.gateway.authenticate import MCP_GATE, Authenticator
from memory_server.gateway.events import request_body, request_headers
from memory_server.operations.audit_events import Publisher
from memory_server.protocol.dispatcher import Dispatcher
from memory_server.protocol.tools import CallContext


@dataclass(frozen=True, slots=True)
class McpRoute:
    auth: Authenticator
    dispatcher: Dispatcher
    publisher: Publisher

    def serve(self, event: Mapping[str, Any], workspace: str, deadline: Deadline) -> dict[str, Any]:
        caller = self.auth.authenticate(event, workspace, MCP_GATE, deadline)
        call = CallContext(caller, deadline)
        status, out_headers, body = self.dispatcher.dispatch(
            request_headers(event), request_body(event), call
        )
        if call.changed:
            self.publisher.after_commit(caller)
        return {"statusCode": status, "headers": out_headers, "body": body.decode("utf-8")}
