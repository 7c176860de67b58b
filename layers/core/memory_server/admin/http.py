"""The admin API: ``/w/{workspace}/admin/…`` on the same HTTP API as the MCP endpoint.

Thin: authenticate (``ADMIN_GATE`` of :mod:`memory_server.gateway.authenticate`, the MCP
route's authentication with
the ``memory/admin`` scope), require the ``admin`` grant (token scope ∩ membership), match
a route of ``ROUTES``, validate the input with its model, call the action in
:mod:`.actions`, answer with its response model. ``ROUTES`` is also what
:mod:`.openapi` describes, so the document and the dispatcher cannot disagree.

Answers: 401/403 challenges as on the MCP route (with ``scope="memory/admin"``);
404 with an empty body for a workspace that does not exist or where the caller is
not a member (the same answer, so the URL is no oracle); 403 ``permission_denied``
for a member without the admin grant (a member already knows the workspace
exists); 422 naming the field and rule for bad input. The memory feature being
off does not close the admin API: turning it on is an admin's job.

One route is the invitee's, not an admin's (``Route.invitee``): accepting an
invitation, by a token that passes every check but membership (it is not a member
yet); anything it may not accept is the same empty 404.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from pydantic import BaseModel

from memory_server.admin import actions
from memory_server.admin import models as m
from memory_server.admin.errors import invalid_field
from memory_server.admin.identity import AgentClients
from memory_server.data.pool import Database
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import AdminError, ServiceError, http_answer
from memory_server.gateway.authenticate import ADMIN_GATE, Authenticator
from memory_server.gateway.events import empty_response, json_response, request_body
from memory_server.operations.audit_events import Publisher

_SUBJECT = re.compile(m.SUBJECT_PATTERN)
Params = dict[str, str]


@dataclass(frozen=True)
class Route:
    method: str
    template: str  # below /w/{workspace}/admin
    operation_id: str
    summary: str
    response: type[BaseModel]
    request: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    status: int = 200
    changes: bool = False  # publish the request's audit rows afterwards
    invitee: bool = False  # the invitee's own (not yet a member), not an admin's

    @property
    def pattern(self) -> re.Pattern[str]:
        # {context} may hold '/' (a thread key, refused with a clear 422); others not.
        regex = re.sub(
            r"\{(\w+)\}",
            lambda p: f"(?P<{p[1]}>.+)" if p[1] == "context" else f"(?P<{p[1]}>[^/]+)",
            self.template,
        )
        return re.compile(f"^{regex}$")


ROUTES: tuple[Route, ...] = (
    Route("GET", "/memory", "getMemory", "Is the memory feature on?", m.MemoryFeature),
    Route(
        "PUT",
        "/memory",
        "setMemory",
        "Turn the memory feature on or off",
        m.MemoryFeature,
        m.MemoryFeatureIn,
        changes=True,
    ),
    Route("GET", "/members", "listMembers", "List members and their grants", m.MemberList),
    Route(
        "PUT",
        "/members/{subject}",
        "putMember",
        "Add a member or change its grants (201 when added)",
        m.Member,
        m.MemberIn,
        changes=True,
    ),
    Route(
        "DELETE",
        "/members/{subject}",
        "removeMember",
        "Remove a member",
        m.MemberRemoved,
        changes=True,
    ),
    Route("GET", "/agent-keys", "listAgentKeys", "List live agent keys", m.AgentKeyList),
    Route(
        "POST",
        "/agent-keys",
        "createAgentKey",
        "Create an agent key (the secret is in this response only)",
        m.AgentKeyCreated,
        m.AgentKeyIn,
        status=201,
        changes=True,
    ),
    Route(
        "DELETE",
        "/agent-keys/{client_id}",
        "revokeAgentKey",
        "Revoke an agent key: its app client and membership go",
        m.AgentKeyRevoked,
        changes=True,
    ),
    Route(
        "GET",
        "/contexts",
        "listContexts",
        "Registered private channels and DMs, and contexts holding records",
        m.ContextList,
    ),
    Route(
        "PUT",
        "/contexts/{context}",
        "putContext",
        "Register a private channel or DM with exactly these members",
        m.RegisteredContext,
        m.ContextIn,
        changes=True,
    ),
    # Before removeContext: {context} may hold '/', so this path matches that one too.
    Route(
        "DELETE",
        "/contexts/{context}/records",
        "deleteContext",
        "Delete a private channel or DM wholesale (its records purged), in it or not",
        m.ContextDeleted,
        changes=True,
    ),
    Route(
        "DELETE",
        "/contexts/{context}",
        "removeContext",
        "Unregister a private channel or DM (its members only; none while it holds records)",
        m.ContextRemoved,
        changes=True,
    ),
    Route(
        "GET",
        "/invitations",
        "listInvitations",
        "Pending invitations",
        m.InvitationList,
    ),
    Route(
        "POST",
        "/invitations",
        "createInvitation",
        "Invite an identity: it joins when it accepts with its own token",
        m.Invitation,
        m.InvitationIn,
        status=201,
        changes=True,
    ),
    Route(
        "DELETE",
        "/invitations/{invitation_id}",
        "revokeInvitation",
        "Withdraw a pending invitation",
        m.InvitationRevoked,
        changes=True,
    ),
    Route(
        "POST",
        "/invitations/{invitation_id}/accept",
        "acceptInvitation",
        "Accept an invitation, as the invitee (its own token; not yet a member)",
        m.Member,
        m.AcceptIn,
        changes=True,
        invitee=True,
    ),
    Route(
        "GET",
        "/audit",
        "listAudit",
        "The workspace's audit trail, newest first, paged",
        m.AuditPage,
        query=m.AuditQuery,
    ),
)


def _json(status: int, body: Any, headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    # no-store: answers hold grants, and a key's secret once.
    return json_response(status, body, {"cache-control": "no-store", **(headers or {})})


def _subject(params: Params, name: str) -> str:
    value = params[name]
    if not _SUBJECT.fullmatch(value):
        raise invalid_field(name, "string_pattern_mismatch", "not a valid subject or client id")
    return value


def _uuid(params: Params, name: str) -> uuid.UUID:
    try:
        return uuid.UUID(params[name])
    except ValueError:
        raise invalid_field(name, "uuid_parsing", "not an invitation id (a UUID)") from None


@dataclass
class AdminApi:
    db: Database
    auth: Authenticator
    publisher: Publisher
    directory: AgentClients | None = None
    _handlers: dict[str, Callable[[Caller, Params, Any], tuple[BaseModel, int]]] = field(init=False)

    def __post_init__(self) -> None:
        db = self.db
        self._handlers = {
            "getMemory": lambda c, p, b: (actions.get_memory(db, c), 200),
            "setMemory": lambda c, p, b: (actions.set_memory(db, c, b), 200),
            "listMembers": lambda c, p, b: (actions.list_members(db, c), 200),
            "putMember": self._put_member,
            "removeMember": lambda c, p, b: (
                actions.remove_member(db, c, _subject(p, "subject")),
                200,
            ),
            "listAgentKeys": lambda c, p, b: (actions.list_agent_keys(db, c), 200),
            "createAgentKey": lambda c, p, b: (
                actions.create_agent_key(db, c, self.directory, b),
                201,
            ),
            "revokeAgentKey": lambda c, p, b: (
                actions.revoke_agent_key(db, c, self.directory, _subject(p, "client_id")),
                200,
            ),
            "listContexts": lambda c, p, b: (actions.list_contexts(db, c), 200),
            "putContext": lambda c, p, b: (actions.put_context(db, c, p["context"], b), 200),
            "deleteContext": lambda c, p, b: (actions.delete_context(db, c, p["context"]), 200),
            "removeContext": lambda c, p, b: (actions.remove_context(db, c, p["context"]), 200),
            "listInvitations": lambda c, p, b: (actions.list_invitations(db, c), 200),
            "createInvitation": lambda c, p, b: (actions.invite(db, c, b), 201),
            "revokeInvitation": lambda c, p, b: (
                actions.revoke_invitation(db, c, _uuid(p, "invitation_id")),
                200,
            ),
            "listAudit": lambda c, p, b: (actions.audit_page(db, c, b), 200),
        }
        admin_routes = {route.operation_id for route in ROUTES if not route.invitee}
        assert set(self._handlers) == admin_routes

    def _put_member(self, caller: Caller, params: Params, body: Any) -> tuple[BaseModel, int]:
        member, added = actions.put_member(self.db, caller, _subject(params, "subject"), body)
        return member, 201 if added else 200

    def serve(
        self, event: Mapping[str, Any], workspace: str, rest: str, method: str, deadline: Deadline
    ) -> dict[str, Any]:
        for route in ROUTES:
            found = route.pattern.fullmatch(rest) if route.invitee else None
            if found and route.method == method:
                return self._accept(event, workspace, route, found.groupdict(), deadline)
        caller = self.auth.authenticate(event, workspace, ADMIN_GATE, deadline)
        if "admin" not in caller.grants:
            # A member already knows the workspace exists: say what is missing.
            raise AdminError(
                403, "permission_denied", "this needs the admin grant in this workspace"
            )
        return self._dispatch(event, caller, rest, method)

    def _accept(
        self,
        event: Mapping[str, Any],
        workspace: str,
        route: Route,
        params: Params,
        deadline: Deadline,
    ) -> dict[str, Any]:
        """The invitee accepts: every check of the admin route but membership, then the
        membership the invitation holds; the accepted member's audit row is published
        as the (now) member's."""
        identity = self.auth.identify(event, workspace, ADMIN_GATE)
        request_id = event.get("requestContext", {}).get("requestId")
        try:
            invitation_id = _uuid(params, "invitation_id")
            body = m.parse_json(m.AcceptIn, request_body(event))
            member = actions.accept_invitation(
                self.db, identity, workspace, invitation_id, body, request_id
            )
        except AdminError as error:
            status, error_body, headers = http_answer(error)
            return _json(status, error_body, headers)
        # Raised past here: the empty 404 (nothing to accept) and 503s, as the edge
        # answers them for any route before a member is known.
        self.publisher.after_commit(self.auth.authenticate(event, workspace, ADMIN_GATE, deadline))
        return _json(route.status, member.model_dump(mode="json"))

    def _dispatch(
        self, event: Mapping[str, Any], caller: Caller, rest: str, method: str
    ) -> dict[str, Any]:
        allowed: list[str] = []
        for route in ROUTES:
            found = route.pattern.fullmatch(rest)
            if found is None:
                continue
            if route.method != method:
                allowed.append(route.method)
                continue
            return self._run(event, caller, route, found.groupdict())
        if allowed:
            return empty_response(405, {"allow": ", ".join(allowed)})
        return _json(404, {"error": "not_found", "message": "no such admin route"})

    def _run(
        self, event: Mapping[str, Any], caller: Caller, route: Route, params: Params
    ) -> dict[str, Any]:
        try:
            body: Any = None
            if route.request is not None:
                body = m.parse_json(route.request, request_body(event))
            elif route.query is not None:
                raw_query = str(event.get("rawQueryString") or "")
                body = m.parse_query(route.query, dict(parse_qsl(raw_query)))
            result, status = self._handlers[route.operation_id](caller, params, body)
        except ServiceError as error:
            # Bad input, a missing object, or the database timed out or went away:
            # retryable (503) is never a partial answer.
            status, error_body, headers = http_answer(error)
            return _json(status, error_body, headers)
        if route.changes:
            self.publisher.after_commit(caller)
        return _json(status, result.model_dump(mode="json"))
