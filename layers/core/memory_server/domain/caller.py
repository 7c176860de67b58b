"""Who is asking, from where, with what grants: resolved by the server, never sent."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from memory_server.domain.addresses import Namespace
from memory_server.domain.contexts import ListeningContext
from memory_server.domain.errors import ToolError, not_found
from memory_server.domain.grants import Grant, write_grant

SHARED_OWNER = uuid.UUID(int=0)  # owner of records shared with the whole workspace
# A principal's kind, as caller resolution and provenance show it: a person, or a
# service identity (an agent key, a bot, a CI job).
PrincipalKind = Literal["person", "service"]
PRINCIPAL_KINDS: tuple[PrincipalKind, ...] = ("person", "service")


@dataclass(frozen=True, slots=True)
class Caller:
    workspace_id: uuid.UUID
    workspace: str
    principal_id: uuid.UUID
    principal_kind: PrincipalKind
    handle: str
    grants: frozenset[Grant]
    context: ListeningContext
    personal_namespace: bool
    request_id: str | None = None

    def owner_for(self, namespace: Namespace) -> uuid.UUID:
        """The owner id an address in ``namespace`` refers to for this caller."""
        if namespace == "workspace":
            return SHARED_OWNER
        if not self.personal_namespace:
            raise not_found()  # a service without an assigned personal namespace
        return self.principal_id

    def visible_owners(self) -> list[uuid.UUID]:
        if self.personal_namespace:
            return [SHARED_OWNER, self.principal_id]
        return [SHARED_OWNER]

    def can_see(self, workspace_id: uuid.UUID, owner_id: uuid.UUID, context_key: str) -> bool:
        """The visibility predicate, in code (mirrors memory.can_see in SQL)."""
        return (
            "read" in self.grants
            and workspace_id == self.workspace_id
            and context_key in self.context.ancestors
            and owner_id in self.visible_owners()
        )

    def require_read(self) -> None:
        if "read" not in self.grants:
            raise ToolError("permission_denied", "this call needs the read grant")

    def require_write(self, namespace: Namespace) -> None:
        grant = write_grant(namespace)
        if grant not in self.grants:
            raise ToolError("permission_denied", f"this call needs the {grant} grant")

    def require_delete(self, namespace: Namespace) -> None:
        self.require_write(namespace)
        if "delete" not in self.grants:
            raise ToolError("permission_denied", "this call needs the delete grant")

    def namespace_of(self, owner_id: uuid.UUID) -> Namespace:
        return "workspace" if owner_id == SHARED_OWNER else "me"
