"""The rules of workspace administration, once for both ways to administer a workspace:
the admin API (``actions.py``: a workspace's admins, in their request transaction)
and the operator path (``operators.py``: the owner role, above every workspace).

Each change is decided by a pure function (``*_change``): from what the workspace
holds and what is asked, what changes and the audit row that says so, or ``None``
when nothing would change (nothing is written then, not even an audit row). The
functions named after the change write it and its audit row on either path's
connection (:data:`memory_server.data.admin.On`). What differs between the paths is
who acts (:func:`by_admin`, :func:`by_operator`) and what each checks first (the
admin API: who may join, and the last-admin rule after a change; the operator path:
the principal's kind and binding).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memory_server.admin.errors import invalid_field
from memory_server.data import admin as data
from memory_server.data.admin import Actor, ContextRow, Event, MemberIdRow, On
from memory_server.domain.caller import Caller
from memory_server.domain.contexts import ListeningContext
from memory_server.domain.errors import AdminError

OPERATOR = uuid.UUID(int=0)  # the actor of operator changes in audit rows


def by_admin(caller: Caller) -> Actor:
    """An admin's change through the API: the admin, under the request's id."""
    return Actor(caller.principal_id, "admin-api", caller.request_id)


def by_operator() -> Actor:
    """An operator's change: the nil principal, under a request id of its own."""
    return Actor(OPERATOR, "operator", f"operator-{uuid.uuid4()}")


# -- the memory feature ------------------------------------------------------------


def memory_change(enabled: bool, wanted: bool) -> Event | None:
    """Turning the memory feature on or off; ``None`` when it already is."""
    if enabled == wanted:
        return None
    return Event("memory.enable" if wanted else "memory.disable", "memory", {"enabled": wanted})


def set_memory(on: On, workspace_id: uuid.UUID, actor: Actor, enabled: bool, wanted: bool) -> bool:
    """Turn the memory feature (now ``enabled``) on or off and audit it; ``False``
    when it already was."""
    event = memory_change(enabled, wanted)
    if event is None:
        return False
    data.set_memory(on, workspace_id, wanted)
    data.record_event(on, workspace_id, actor, event)
    return True


# -- members ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Membership:
    """What a member holds in a workspace."""

    grants: Sequence[str]  # sorted
    personal_namespace: bool


@dataclass(frozen=True, slots=True)
class MemberChange:
    """A member added or changed: who, what it holds now, and the audit row."""

    principal_id: uuid.UUID
    membership: Membership
    event: Event


def membership_change(
    principal_id: uuid.UUID,
    kind: Literal["person", "service"],
    previous: Membership | None,
    grants: list[str],
    personal_namespace: bool | None,
) -> MemberChange | None:
    """Make ``principal_id`` a member with ``grants`` (sorted; they replace the old
    ones); ``previous`` is its membership, ``None`` when it is not a member.

    People always have a personal namespace (asking for none is a 422); a service
    has one when asked, keeps its own when not asked, and has none when it joins
    without asking. ``None``: the member already holds exactly this.
    """
    if kind == "person":
        if personal_namespace is False:
            raise invalid_field(
                "personal_namespace", "people_have_one", "people always have a personal namespace"
            )
        personal = True
    elif personal_namespace is not None:
        personal = personal_namespace
    else:
        personal = previous.personal_namespace if previous is not None else False
    wanted = Membership(grants, personal)
    if previous == wanted:
        return None
    details: dict[str, Any] = {
        "principal_id": str(principal_id),
        "grants": grants,
        "personal_namespace": personal,
    }
    if previous is not None:
        details["previous_grants"] = list(previous.grants)
        details["previous_personal_namespace"] = previous.personal_namespace
    operation = "member.change" if previous is not None else "member.add"
    return MemberChange(principal_id, wanted, Event(operation, f"members/{principal_id}", details))


def put_member(
    on: On,
    workspace_id: uuid.UUID,
    actor: Actor,
    principal_id: uuid.UUID,
    kind: Literal["person", "service"],
    *,
    previous: Membership | None,
    grants: list[str],
    personal_namespace: bool | None,
) -> bool:
    """Add or change a member as :func:`membership_change` decides, and audit it;
    ``False`` when it already was so."""
    change = membership_change(principal_id, kind, previous, grants, personal_namespace)
    if change is None:
        return False
    held = change.membership
    data.put_member(on, workspace_id, change.principal_id, held.grants, held.personal_namespace)
    data.record_event(on, workspace_id, actor, change.event)
    return True


def member_removed(principal_id: uuid.UUID, grants: Sequence[str]) -> Event:
    return Event(
        "member.remove",
        f"members/{principal_id}",
        {"principal_id": str(principal_id), "grants": list(grants)},
    )


def not_members(names: Sequence[object]) -> AdminError:
    """The 422 for members of a context who are not members of the workspace."""
    return invalid_field(
        "members", "workspace_members", f"not members of this workspace: {list(names)}"
    )


def member_ids(subjects: Sequence[str], found: list[MemberIdRow]) -> list[uuid.UUID]:
    """The principal ids of members named by subject, in the order given (422 for any
    subject that is no member)."""
    ids = {row["subject"]: uuid.UUID(str(row["id"])) for row in found}
    strangers = [subject for subject in subjects if subject not in ids]
    if strangers:
        raise not_members(strangers)
    return [ids[subject] for subject in subjects]


# -- contexts -------------------------------------------------------------------------


def context_change(
    context_key: str, previous: ContextRow | None, members: Sequence[uuid.UUID]
) -> Event | None:
    """Registering a private channel or a DM with exactly ``members`` (distinct
    principal ids, members of the workspace); ``None`` when it already is, with
    these members."""
    wanted = sorted(str(i) for i in members)
    if (
        previous is not None
        and previous["private"]
        and sorted(map(str, previous["member_ids"])) == wanted
    ):
        return None
    return Event(
        "context.register", f"contexts/{context_key}", {"context": context_key, "members": wanted}
    )


def register_context(
    on: On,
    workspace_id: uuid.UUID,
    actor: Actor,
    context: ListeningContext,
    previous: ContextRow | None,
    members: Sequence[uuid.UUID],
) -> bool:
    """Register ``context`` (a channel or a DM; ``previous``: as it is registered now)
    with exactly ``members`` and audit it; ``False`` when it already was so."""
    event = context_change(context.key, previous, members)
    if event is None:
        return False
    data.put_context(on, workspace_id, context.key, context.kind, members)
    data.record_event(on, workspace_id, actor, event)
    return True


def context_unregistered(context_key: str) -> Event:
    return Event("context.unregister", f"contexts/{context_key}", {"context": context_key})


# -- workspaces, agent keys and erasure -------------------------------------------------


def workspace_created(slug: str, memory_enabled: bool) -> Event:
    return Event("workspace.create", "workspace", {"slug": slug, "memory_enabled": memory_enabled})


def agent_key_created(client_id: str, principal_id: uuid.UUID, scopes: list[str]) -> Event:
    return Event(
        "agent_key.create",
        f"agent-keys/{client_id}",
        {"client_id": client_id, "principal_id": str(principal_id), "scopes": scopes},
    )


def agent_key_revoked(
    client_id: str, principal_id: uuid.UUID, *, reason: str | None = None
) -> Event:
    """A key revoked by an admin, or retired by the operator (with the reason)."""
    details: dict[str, Any] = {"client_id": client_id, "principal_id": str(principal_id)}
    if reason is not None:
        details["reason"] = reason
    return Event("agent_key.revoke", f"agent-keys/{client_id}", details)


def person_erased(pseudonym_id: uuid.UUID) -> Event:
    return Event("person.erase", f"members/{pseudonym_id}", {"principal_id": str(pseudonym_id)})
