"""Caller resolution: who a verified token's subject is in a workspace, in one statement
(``memory.resolve_caller``), before any request transaction exists."""

from __future__ import annotations

import uuid
from typing import Literal, TypedDict

from memory_server.data.pool import Database
from memory_server.data.statements import first
from memory_server.domain.deadline import Deadline


class CallerRow(TypedDict):
    workspace_id: uuid.UUID
    memory_enabled: bool
    principal_id: uuid.UUID
    principal_kind: Literal["person", "service"]
    handle: str
    grants: list[str]
    personal_namespace: bool
    context_allowed: bool


def resolve(
    db: Database, deadline: Deadline, *, workspace: str, subject: str, gate_key: str | None
) -> CallerRow | None:
    """The live principal ``subject`` names as a member of ``workspace`` (``None``: no
    such member, or no such workspace: the two read alike), its grants, and whether
    the registered context ``gate_key`` lets it listen."""
    params = {"workspace": workspace, "subject": subject, "gate_key": gate_key}
    with db.unscoped(deadline) as tx:
        found = tx.query("resolve_caller", params, first)
    row: CallerRow | None = found.get()
    return row
