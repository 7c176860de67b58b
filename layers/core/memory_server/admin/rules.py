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

Private channels and DMs (:func:`context_change`, :func:`context_unregistration`,
:func:`context_deletion`): only a private context's own members change its member
list or unregister it; an admin outside it gets the one 403 ``permission_denied``
(rule ``private_context_members``) whatever the context holds and whoever is in it,
so the answer says nothing about its members. A DM's participants are fixed when it
is registered (409 ``dm_participants_fixed``). A private context that holds records
is never unregistered (409 ``private_context_holds_records``): a channel would open
to every member. Any admin, in it or not, may delete it wholesale (its records
purged, its members gone, it stays registered and nobody's), and never read it. A
private context nobody is in and that holds nothing is anyone's to register again.
The operator (the owner role, which can read the database anyway) is not bound by
the members rule; the DM rule binds it too. The database enforces the same rules
for the admin API (``infra/schema/70_admin.sql``), so no statement of the runtime
role gets around them.

People, and services of other workspaces, join only by accepting an invitation
(:func:`invitation_created`); an admin adds directly only its workspace's own agent
keys.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memory_server.admin.errors import invalid_field
from memory_server.data import admin as data
from memory_server.data.admin import (
    Actor,
    ContextRow,
    ContextStateRow,
    Event,
    MemberIdRow,
    On,
)
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
    write = data.add_member if previous is None else data.change_member
    write(on, workspace_id, change.principal_id, held.grants, held.personal_namespace)
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


@dataclass(frozen=True, slots=True)
class ContextNow:
    """A context as a change of it needs to know it: as the database answers for an
    admin, who may not read the members or records of a private context it is not in
    (:meth:`for_admin`), or as the operator reads it (:meth:`for_operator`)."""

    registered: bool
    private: bool  # registered as private (a DM always is); else open
    members: frozenset[uuid.UUID] | None  # None: hidden from this admin
    actor_in_it: bool
    has_members: bool
    holds_records: bool  # the context or a thread of it, in any namespace

    @property
    def nobodys(self) -> bool:
        """Private, nobody in it, nothing in it: anyone's to register again."""
        return not self.has_members and not self.holds_records

    @classmethod
    def for_admin(cls, state: ContextStateRow, row: ContextRow | None) -> ContextNow:
        visible = state["caller_in_it"] or not state["has_members"]
        members = frozenset(row["member_ids"]) if row is not None else frozenset()
        return cls(
            registered=state["registered"],
            private=state["private"],
            members=members if visible else None,
            actor_in_it=state["caller_in_it"],
            has_members=state["has_members"],
            holds_records=state["holds_records"],
        )

    @classmethod
    def for_operator(cls, row: ContextRow | None, holds_records: bool) -> ContextNow:
        members = frozenset(row["member_ids"]) if row is not None else frozenset()
        return cls(
            registered=row is not None,
            private=row is not None and row["private"],
            members=members,
            actor_in_it=False,
            has_members=bool(members),
            holds_records=holds_records,
        )


def _refused(status: int, code: str, rule: str, field: str, message: str) -> AdminError:
    return AdminError(status, code, message, [{"field": field, "rule": rule, "message": message}])


def members_only() -> AdminError:
    """The one answer to an admin outside a private context that tries to change it."""
    return _refused(
        403,
        "permission_denied",
        "private_context_members",
        "context",
        "only the members of a private channel or DM change its members or unregister it; "
        "an admin outside it may delete it wholesale (DELETE …/contexts/{context}/records)",
    )


def _dm_fixed(message: str) -> AdminError:
    return _refused(409, "conflict", "dm_participants_fixed", "members", message)


def context_change(
    context: ListeningContext,
    now: ContextNow,
    members: Sequence[uuid.UUID],
    *,
    by_operator: bool = False,
) -> Event | None:
    """Registering a private channel or a DM with exactly ``members`` (distinct
    principal ids, members of the workspace), or changing a private channel's members;
    ``None`` when it already is so. The rules are the module's (private contexts)."""
    wanted = frozenset(members)
    if now.private:
        # First, before anything about its members is compared: an outsider's answer
        # is the same whoever is in it.
        if not by_operator and not now.actor_in_it and not now.nobodys:
            raise members_only()
        if now.members == wanted:
            return None
        if context.kind == "dm" and not now.nobodys:
            raise _dm_fixed(
                "a DM's participants are fixed when it is registered: register another DM"
            )
    elif context.kind == "dm" and now.holds_records:
        raise _dm_fixed(
            "this DM holds records from an earlier registration, whose participants were "
            "fixed then: delete it wholesale (DELETE …/contexts/{context}/records) first"
        )
    return Event(
        "context.register",
        f"contexts/{context.key}",
        {"context": context.key, "members": sorted(str(i) for i in wanted)},
    )


def context_unregistration(context_key: str, now: ContextNow) -> Event:
    """Unregistering a context: a private one only by its members, and never while it
    holds records (a channel would open to every member, a DM's records could be
    given to new participants)."""
    if not now.registered:
        raise AdminError(404, "not_found", "no such registered context in this workspace")
    if now.private:
        if not now.actor_in_it and not now.nobodys:
            raise members_only()
        if now.holds_records:
            raise _refused(
                409,
                "conflict",
                "private_context_holds_records",
                "context",
                "a private channel or DM that holds records is not unregistered (a channel "
                "would open to every member, a DM's records pass to whoever registers it "
                "next): delete its records, or delete it wholesale, first",
            )
    return Event("context.unregister", f"contexts/{context_key}", {"context": context_key})


def context_deletion(context: ListeningContext, now: ContextNow) -> None:
    """Whether a context may be deleted wholesale: a private one or any DM, by any
    admin (in it or not); an open channel's records are the tools' to delete."""
    if not now.private and context.kind != "dm":
        raise AdminError(404, "not_found", "no such private channel or DM in this workspace")


def context_deleted(context_key: str, records: int) -> Event:
    return Event(
        "context.delete", f"contexts/{context_key}", {"context": context_key, "records": records}
    )


# -- invitations ------------------------------------------------------------------------


def already_a_member() -> AdminError:
    return _refused(
        409,
        "conflict",
        "already_a_member",
        "subject",
        "already a member of this workspace: change its grants with PUT …/members/{subject}",
    )


def invitation_created(
    invitation_id: uuid.UUID, grants: Sequence[str], personal_namespace: bool | None
) -> Event:
    """An invitation (its subject is not in the trail: erasure finds no subject there)."""
    return Event(
        "invitation.create",
        f"invitations/{invitation_id}",
        {
            "invitation_id": str(invitation_id),
            "grants": list(grants),
            "personal_namespace": personal_namespace,
        },
    )


def invitation_revoked(invitation_id: uuid.UUID) -> Event:
    return Event(
        "invitation.revoke", f"invitations/{invitation_id}", {"invitation_id": str(invitation_id)}
    )


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
