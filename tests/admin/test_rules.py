"""The admin rules both paths share (``admin/rules.py``), without a database: what a
change decides and the audit row it writes, the same for an admin and the operator."""

from __future__ import annotations

import uuid

import pytest
from memory_server.admin import rules
from memory_server.admin.rules import Membership
from memory_server.data.admin import ContextRow, Event
from memory_server.domain.errors import AdminError

PID = uuid.UUID(int=7)


def test_people_always_have_a_personal_namespace() -> None:
    added = rules.membership_change(PID, "person", None, ["read"], None)
    assert added is not None and added.membership == Membership(["read"], True)
    assert added.event == Event(
        "member.add",
        f"members/{PID}",
        {"principal_id": str(PID), "grants": ["read"], "personal_namespace": True},
    )
    with pytest.raises(AdminError) as refused:
        rules.membership_change(PID, "person", None, ["read"], False)
    assert refused.value.status == 422
    assert refused.value.problems[0]["rule"] == "people_have_one"


def test_a_service_keeps_its_namespace_unless_asked() -> None:
    joined = rules.membership_change(PID, "service", None, ["read"], None)
    assert joined is not None and joined.membership.personal_namespace is False
    had = Membership(["read"], True)
    assert rules.membership_change(PID, "service", had, ["read"], None) is None  # no-op
    changed = rules.membership_change(PID, "service", had, ["admin", "read"], None)
    assert changed is not None and changed.event.operation == "member.change"
    assert changed.event.details == {
        "principal_id": str(PID),
        "grants": ["admin", "read"],
        "personal_namespace": True,
        "previous_grants": ["read"],
        "previous_personal_namespace": True,
    }
    dropped = rules.membership_change(PID, "service", had, ["read"], False)
    assert dropped is not None and dropped.membership == Membership(["read"], False)


def test_a_context_is_registered_once_with_the_same_members() -> None:
    a, b = uuid.UUID(int=2), uuid.UUID(int=1)
    registered: ContextRow = {
        "context_key": "dm:ab",
        "kind": "dm",
        "private": True,
        "members": ["alice", "bob"],
        "member_ids": [b, a],
    }
    assert rules.context_change("dm:ab", registered, [a, b]) is None
    assert rules.context_change("dm:ab", {**registered, "private": False}, [a, b]) is not None
    event = rules.context_change("dm:ab", registered, [a])
    assert event == Event(
        "context.register", "contexts/dm:ab", {"context": "dm:ab", "members": [str(a)]}
    )
    new = rules.context_change("dm:ab", None, [a, b])
    assert new is not None and new.details["members"] == sorted([str(a), str(b)])


def test_the_memory_feature_and_agent_key_events() -> None:
    assert rules.memory_change(True, True) is None
    assert rules.memory_change(True, False) == Event("memory.disable", "memory", {"enabled": False})
    assert rules.agent_key_revoked("c1", PID).details == {
        "client_id": "c1",
        "principal_id": str(PID),
    }
    assert rules.agent_key_revoked("c1", PID, reason="gone").details["reason"] == "gone"


def test_the_actor_says_who_changed_it() -> None:
    first, second = rules.by_operator(), rules.by_operator()
    assert first.principal_id == rules.OPERATOR and first.source == "operator"
    assert first.request_id != second.request_id  # each operator change its own
