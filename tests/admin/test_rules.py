"""The admin rules both paths share (``admin/rules.py``), without a database: what a
change decides and the audit row it writes, the same for an admin and the operator."""

from __future__ import annotations

import uuid

import pytest
from memory_server.admin import rules
from memory_server.admin.rules import Membership
from memory_server.data.admin import Event
from memory_server.domain.contexts import parse_context
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


A, B, C = uuid.UUID(int=2), uuid.UUID(int=1), uuid.UUID(int=3)


def _now(
    *,
    private: bool = True,
    members: frozenset[uuid.UUID] | None = frozenset({A, B}),
    actor_in_it: bool = True,
    holds_records: bool = False,
) -> rules.ContextNow:
    return rules.ContextNow(
        registered=private,
        private=private,
        members=members,
        actor_in_it=actor_in_it,
        has_members=members is None or bool(members),
        holds_records=holds_records,
    )


def _rule(refused: pytest.ExceptionInfo[AdminError]) -> tuple[int, str]:
    return refused.value.status, refused.value.problems[0]["rule"]


def test_a_context_is_registered_once_with_the_same_members() -> None:
    dm, channel = parse_context("dm:ab"), parse_context("channel:ab")
    assert rules.context_change(dm, _now(), [A, B]) is None
    assert rules.context_change(dm, _now(private=False, members=frozenset()), [A, B]) is not None
    event = rules.context_change(channel, _now(), [A])
    assert event == Event(
        "context.register", "contexts/channel:ab", {"context": "channel:ab", "members": [str(A)]}
    )
    new = rules.context_change(dm, _now(private=False, members=frozenset()), [A, B])
    assert new is not None and new.details["members"] == sorted([str(A), str(B)])


def test_only_a_private_contexts_members_change_it_and_the_answer_reveals_nothing() -> None:
    channel = parse_context("channel:hush")
    answers = set()
    for members in (frozenset({A, B}), frozenset({B})):
        for holds in (False, True):
            for asked in ([C], [A, B], [A, B, C], []):
                with pytest.raises(AdminError) as refused:
                    rules.context_change(
                        channel,
                        _now(members=None, actor_in_it=False, holds_records=holds),
                        asked,
                    )
                answers.add((refused.value.status, refused.value.message, _rule(refused)))
            with pytest.raises(AdminError) as unregistering:
                rules.context_unregistration(
                    "channel:hush", _now(members=None, actor_in_it=False, holds_records=holds)
                )
            answers.add(
                (unregistering.value.status, unregistering.value.message, _rule(unregistering))
            )
    assert len(answers) == 1 and next(iter(answers))[2] == (403, "private_context_members")
    # Nobody in it and nothing in it: anyone's to register again, or to unregister.
    nobodys = _now(members=frozenset(), actor_in_it=False)
    assert rules.context_change(channel, nobodys, [C]) is not None
    assert rules.context_unregistration("channel:hush", nobodys).operation == "context.unregister"
    # The operator stands above the members rule.
    outsider = _now(actor_in_it=False)
    assert rules.context_change(channel, outsider, [C], by_operator=True) is not None


def test_a_dms_participants_are_fixed_and_records_keep_a_context_registered() -> None:
    dm = parse_context("dm:ab")
    for asked in ([A], [A, B, C]):
        for by_operator in (False, True):
            with pytest.raises(AdminError) as refused:
                rules.context_change(dm, _now(), asked, by_operator=by_operator)
            assert _rule(refused) == (409, "dm_participants_fixed")
    # An unregistered DM holding records of an earlier registration is nobody's.
    with pytest.raises(AdminError) as orphaned:
        rules.context_change(dm, _now(private=False, members=frozenset(), holds_records=True), [C])
    assert _rule(orphaned) == (409, "dm_participants_fixed")
    for key in ("dm:ab", "channel:ab"):
        with pytest.raises(AdminError) as held:
            rules.context_unregistration(key, _now(holds_records=True))
        assert _rule(held) == (409, "private_context_holds_records")
    with pytest.raises(AdminError) as missing:
        rules.context_unregistration("dm:ab", _now(private=False, members=frozenset()))
    assert missing.value.status == 404


def test_any_admin_deletes_a_private_context_or_a_dm_wholesale() -> None:
    outsider = _now(members=None, actor_in_it=False, holds_records=True)
    rules.context_deletion(parse_context("channel:hush"), outsider)
    rules.context_deletion(parse_context("dm:old"), _now(private=False, members=frozenset()))
    with pytest.raises(AdminError) as open_channel:
        rules.context_deletion(parse_context("channel:eng"), _now(private=False))
    assert open_channel.value.status == 404
    assert rules.context_deleted("dm:old", 3).details == {"context": "dm:old", "records": 3}


def test_invitation_events_name_no_subject() -> None:
    event = rules.invitation_created(PID, ["read"], None)
    assert event == Event(
        "invitation.create",
        f"invitations/{PID}",
        {"invitation_id": str(PID), "grants": ["read"], "personal_namespace": None},
    )
    assert rules.invitation_revoked(PID).operation == "invitation.revoke"


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
