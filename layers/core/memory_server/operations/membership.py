"""Caller resolution: identity from the verified token, membership and grants from the
server, in one statement before the request's own transaction."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from memory_server.data import callers
from memory_server.data.pool import Database
from memory_server.domain.caller import Caller
from memory_server.domain.contexts import ListeningContext, gate_key
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import ContextUnavailable
from memory_server.domain.grants import effective_grants


@dataclass(frozen=True, slots=True)
class Membership:
    """What the server knows about a caller in a workspace, before the context check."""

    caller: Caller
    memory_enabled: bool


def resolve_caller(
    db: Database,
    *,
    workspace: str,
    subject: str,
    scopes: list[str],
    context: ListeningContext,
    request_id: str | None = None,
    deadline: Deadline | None = None,
) -> Membership | None:
    """``None`` when the subject is not a member (or the workspace does not exist: the
    two are indistinguishable). Raises ``ContextUnavailable`` when the member may not
    listen from ``context`` in a workspace whose memory feature is on. Grants are the
    token's scopes intersected with the membership's."""
    row = callers.resolve(
        db,
        deadline or Deadline(),
        workspace=workspace,
        subject=subject,
        gate_key=gate_key(context),
    )
    if row is None:
        return None
    if row["memory_enabled"] and not row["context_allowed"]:
        raise ContextUnavailable()
    caller = Caller(
        workspace_id=row["workspace_id"],
        workspace=workspace,
        principal_id=row["principal_id"],
        principal_kind=row["principal_kind"],
        handle=row["handle"],
        grants=effective_grants(scopes, row["grants"]),
        context=context,
        personal_namespace=row["personal_namespace"],
        request_id=request_id or str(uuid.uuid4()),
    )
    return Membership(caller, row["memory_enabled"])
