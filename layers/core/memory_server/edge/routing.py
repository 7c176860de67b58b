"""The HTTP edge: match a route, start the deadline, answer errors. Nothing else.

Routes of the one HTTP API (payload v2):

- ``GET /.well-known/oauth-protected-resource/w/{workspace}/mcp``: RFC 9728 metadata,
  served for any workspace name (it is not an oracle for which exist);
- ``/w/{workspace}/admin/…``: the admin API (:mod:`memory_server.admin.http`);
- ``/w/{workspace}/mcp``: the MCP endpoint (:mod:`memory_server.protocol.endpoint`).

Each route authenticates through :class:`memory_server.gateway.authenticate.Authenticator`;
whatever ``ServiceError`` escapes a route is answered here with
:func:`memory_server.domain.errors.http_answer`,
401/403 with the ``WWW-Authenticate`` challenge that points at the metadata.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memory_server.admin.http import AdminApi
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import EdgeError, ServiceError, http_answer
from memory_server.domain.grants import MCP_SCOPES
from memory_server.domain.limits import DEADLINE_S, LAMBDA_RESERVE_S, MIN_DEADLINE_S
from memory_server.gateway.events import base_url, empty_response, json_response, resource_url
from memory_server.protocol.endpoint import McpRoute

_MCP_PATH = re.compile(r"^/w/(?P<workspace>[^/]+)/mcp$")
_ADMIN_PATH = re.compile(r"^/w/(?P<workspace>[^/]+)/admin(?P<rest>/.*)?$")
_METADATA_PATH = re.compile(r"^/\.well-known/oauth-protected-resource/w/(?P<workspace>[^/]+)/mcp$")


def deadline_for(lambda_context: Any) -> Deadline:
    """The call's deadline, starting now: resolving the caller counts against it too."""
    remaining = getattr(lambda_context, "get_remaining_time_in_millis", None)
    if remaining is None:
        return Deadline.after(DEADLINE_S)
    # Leave time to answer before Lambda itself gives up.
    budget = float(remaining()) / 1000 - LAMBDA_RESERVE_S
    return Deadline.after(max(MIN_DEADLINE_S, min(DEADLINE_S, budget)))


@dataclass(frozen=True, slots=True)
class Edge:
    mcp: McpRoute
    admin: AdminApi
    public_base_url: str | None = None

    def route(self, event: Mapping[str, Any], lambda_context: Any = None) -> dict[str, Any]:
        path = event.get("rawPath", "")
        method = event.get("requestContext", {}).get("http", {}).get("method", "GET")
        workspace = ""
        try:
            if match := _METADATA_PATH.fullmatch(path):
                if method not in ("GET", "HEAD"):
                    return empty_response(405, {"allow": "GET"})
                return self._metadata(event, match["workspace"])
            if match := _ADMIN_PATH.fullmatch(path):
                workspace = match["workspace"]
                deadline = deadline_for(lambda_context)
                return self.admin.serve(event, workspace, match["rest"] or "/", method, deadline)
            if match := _MCP_PATH.fullmatch(path):
                workspace = match["workspace"]
                return self.mcp.serve(event, workspace, deadline_for(lambda_context))
            return json_response(404, {"message": "Not Found"})
        except ServiceError as error:
            return self._answer(event, workspace, error)

    def _answer(
        self, event: Mapping[str, Any], workspace: str, error: ServiceError
    ) -> dict[str, Any]:
        status, body, headers = http_answer(error)
        if isinstance(error, EdgeError) and error.challenge is not None:
            headers["www-authenticate"] = self._challenge(event, workspace, error)
        if body is None:
            return empty_response(status, headers)
        return json_response(status, body, headers)

    def _challenge(self, event: Mapping[str, Any], workspace: str, error: EdgeError) -> str:
        metadata = self._metadata_url(event, workspace)
        if error.status == 401:
            return f'Bearer resource_metadata="{metadata}", scope="{error.challenge}"'
        return (
            f'Bearer error="insufficient_scope", scope="{error.challenge}", '
            f'resource_metadata="{metadata}"'
        )

    def _metadata_url(self, event: Mapping[str, Any], workspace: str) -> str:
        base = base_url(event, self.public_base_url)
        return f"{base}/.well-known/oauth-protected-resource/w/{workspace}/mcp"

    def _metadata(self, event: Mapping[str, Any], workspace: str) -> dict[str, Any]:
        # The authorization server is the product itself (RFC 8414 metadata and RFC 7591
        # registration at its origin, served by the management function); it sends
        # people to the user pool's sign-in and token endpoints.
        return json_response(
            200,
            {
                "resource": resource_url(event, workspace, self.public_base_url),
                "authorization_servers": [base_url(event, self.public_base_url)],
                "scopes_supported": list(MCP_SCOPES),
                "bearer_methods_supported": ["header"],
                "resource_name": "memory-server",
            },
            {"cache-control": "public, max-age=3600"},
        )
