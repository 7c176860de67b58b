"""memory_scopes: who is asking and who can hear, as the server resolved them.

Nothing here is read from the arguments: the workspace, the principal and its grants
come from the token and the server's membership, the listening context from the
request; the answer is what every other tool applies.
"""

from __future__ import annotations

from typing import Any

from memory_server.domain.arguments import ScopesArgs
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.operations.store import Store


def memory_scopes(
    store: Store, caller: Caller, args: ScopesArgs, deadline: Deadline | None = None
) -> dict[str, Any]:
    return {
        "workspace": caller.workspace,
        "principal": {"handle": caller.handle, "kind": caller.principal_kind},
        "grants": sorted(caller.grants),
        "context": caller.context.key,
        "visible_contexts": list(caller.context.ancestors),  # nearest first
        "personal_namespace": caller.personal_namespace,
    }
