"""Who can see what: owners, workspaces, and listening contexts (docs/contract.md §2, §4)."""

from __future__ import annotations

import pytest
from memory_server.domain.contexts import parse_context
from memory_server.domain.errors import ContextUnavailable, ToolError
from memory_server.operations.membership import resolve_caller


def visible_uris(agent) -> set[str]:  # type: ignore[no-untyped-def]
    return {item["uri"] + "@" + item["context"] for item in agent.list(limit=50)["items"]}


def search_ids(agent, query: str) -> set[str]:  # type: ignore[no-untyped-def]
    return {
        hit["id"]
        for hit in agent.search(query=query, kinds=["memories", "notes", "skills"])["hits"]
    }


def cannot_read(agent, uri: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ToolError) as caught:
        agent.read(uri=uri)
    assert caught.value.code == "not_found"
    assert caught.value.message == "no such record in your view"


def test_personal_records_are_invisible_to_other_members(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice, bob = ws.agent(ws.person("alice")), ws.agent(ws.person("bob"))
    secret = alice.write(
        uri="memory://me/memories/salary.md", content="negotiation zebrafish", expected_revision=0
    )
    bob.write(uri="memory://me/memories/salary.md", content="bob's own", expected_revision=0)
    assert search_ids(alice, "zebrafish") == {secret["id"]}
    assert search_ids(bob, "zebrafish") == set()
    cannot_read(bob, f"memory://record/{secret['id']}")
    cannot_read(bob, f"memory://record/{secret['id']}/revisions/1")
    assert bob.read(uri="memory://me/memories/salary.md")["content"] == "bob's own"
    assert secret["id"] not in {i["id"] for i in bob.list()["items"]}
    with pytest.raises(ToolError) as caught:
        bob.write(uri=f"memory://record/{secret['id']}", content="x", expected_revision=1)
    assert caught.value.code == "not_found"


def test_dm_records_stay_in_the_dm(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice_p, bot_p, carl_p = (
        ws.person("alice"),
        ws.service("release-bot", ("read", "write:shared")),
        ws.person("carl"),
    )
    ws.register("dm:alice-release-bot", alice_p, bot_p)
    ws.register("dm:alice-carl", alice_p, carl_p)
    in_dm = ws.agent(alice_p, "dm:alice-release-bot")
    told = in_dm.write(
        uri="memory://workspace/memories/rollout.md",
        content="launch code quokka",
        expected_revision=0,
    )
    assert told["context"] == "dm:alice-release-bot"
    assert search_ids(ws.agent(bot_p, "dm:alice-release-bot"), "quokka") == {told["id"]}
    for context in ("channel:general", "dm:alice-carl", "workspace", "channel:general/thread:1"):
        alice_elsewhere = ws.agent(alice_p, context)
        assert search_ids(alice_elsewhere, "quokka") == set(), context
        cannot_read(alice_elsewhere, "memory://workspace/memories/rollout.md")
        cannot_read(alice_elsewhere, f"memory://record/{told['id']}")
        assert not any(i["id"] == told["id"] for i in alice_elsewhere.list()["items"])


def test_contexts_inherit_from_ancestors_and_nearest_wins(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.person("alice")
    root = ws.agent(alice)
    thread = ws.agent(alice, "channel:eng/thread:42")
    top = root.write(
        uri="memory://workspace/notes/style.md", content="workspace style", expected_revision=0
    )
    # expected_revision 0 conflicts with what already resolves from the thread…
    with pytest.raises(ToolError) as caught:
        thread.write(
            uri="memory://workspace/notes/style.md", content="thread style", expected_revision=0
        )
    assert caught.value.code == "revision_conflict"
    # …but an explicit write into the thread context's own slot after deleting is fine,
    # and then the thread's record answers from the thread, the workspace's from above.
    root.delete(uri="memory://workspace/notes/style.md", expected_revision=1)
    mine = thread.write(
        uri="memory://workspace/notes/style.md", content="thread style", expected_revision=0
    )
    again = root.write(
        uri="memory://workspace/notes/style.md", content="workspace style 2", expected_revision=0
    )
    assert thread.read(uri="memory://workspace/notes/style.md")["id"] == mine["id"]
    assert root.read(uri="memory://workspace/notes/style.md")["id"] == again["id"]
    channel = ws.agent(alice, "channel:eng")
    assert channel.read(uri="memory://workspace/notes/style.md")["id"] == again["id"]
    assert top["id"] != again["id"]
    # A named ancestor context is where the record lands.
    up = thread.write(
        uri="memory://workspace/notes/up.md",
        content="x",
        expected_revision=0,
        context="channel:eng",
    )
    assert up["context"] == "channel:eng"
    with pytest.raises(ToolError) as caught:
        thread.write(
            uri="memory://workspace/notes/x.md",
            content="x",
            expected_revision=0,
            context="channel:general",
        )
    assert caught.value.code == "invalid_argument"


def test_workspace_names_are_compared_exactly(world) -> None:  # type: ignore[no-untyped-def]
    suffix = world.workspace().slug  # unique per run
    acme, acme2, ac = (
        world.workspace(f"{suffix}-acme"),
        world.workspace(f"{suffix}-acme2"),
        world.workspace(f"{suffix}-ac"),
    )
    writers = {}
    for ws in (acme, acme2, ac):
        agent = ws.agent(ws.person("alice"))
        writers[ws.slug] = agent.write(
            uri="memory://workspace/notes/n.md", content="ocelot", expected_revision=0
        )["id"]
        assert search_ids(agent, "ocelot") == {writers[ws.slug]}
        assert {i["id"] for i in agent.list()["items"]} == {writers[ws.slug]}


def test_ids_with_separators_cannot_cross_contexts(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.person("alice")
    # A channel literally named "a/thread:b" is not the thread b of channel a.
    odd = ws.agent(alice, "channel:a%2Fthread%3Ab")
    real = ws.agent(alice, "channel:a/thread:b")
    made = odd.write(uri="memory://workspace/notes/n.md", content="pangolin", expected_revision=0)
    assert made["context"] == "channel:a%2Fthread%3Ab"
    assert search_ids(real, "pangolin") == set()
    cannot_read(real, f"memory://record/{made['id']}")
    colon = ws.agent(alice, "channel:x%3Ay")
    assert search_ids(colon, "pangolin") == set()
    with pytest.raises(ToolError):
        parse_context("channel:a/thread:b/thread:c")
    with pytest.raises(ToolError):
        parse_context("channel:a:b")


def test_context_gate_answers_one_way(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice, bob = ws.person("alice"), ws.person("bob")
    ws.register("channel:leads", alice)
    ws.register("dm:alice-bob", alice, bob)
    assert ws.caller(alice, "channel:leads/thread:7").context.key == "channel:leads/thread:7"
    for who, context in (
        (bob, "channel:leads"),
        (bob, "channel:leads/thread:7"),
        (alice, "dm:unregistered"),
        (ws.person("carl"), "dm:alice-bob"),
    ):
        with pytest.raises(ContextUnavailable):
            ws.caller(who, context)
    assert ws.caller(bob, "channel:general").context.key == "channel:general"


def test_unknown_and_foreign_workspaces_look_alike(world) -> None:  # type: ignore[no-untyped-def]
    ws, other = world.workspace(), world.workspace()
    alice = ws.person("alice")
    for slug in (other.slug, "no-such-workspace"):
        assert (
            resolve_caller(
                world.store.db,
                workspace=slug,
                subject=alice.subject,
                scopes=[],
                context=parse_context(None),
            )
            is None
        )
    off = world.workspace(enabled=False)
    off.add(alice)
    membership = resolve_caller(
        world.store.db,
        workspace=off.slug,
        subject=alice.subject,
        scopes=[],
        context=parse_context(None),
    )
    assert membership is not None and membership.memory_enabled is False
