"""End to end: the official MCP Python SDK client over HTTP against the local stack,
in both protocol generations, as the demo principals of docs/contract.md §8."""

from __future__ import annotations

import json
import uuid

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from tests.builders import ALL_TOOLS
from tests.e2e.conftest import call, connect, create, run
from tests.tls import TLS

MODES = {"2026-07-28": "auto", "2025-11-25": "legacy"}


@pytest.mark.parametrize("expected_version", list(MODES))
def test_every_tool_and_resource_in_both_generations(stack, expected_version: str) -> None:  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        async with connect(stack, "alice", mode=MODES[expected_version]) as client:
            assert client.protocol_version == expected_version
            tools = {t.name for t in (await client.list_tools()).tools}
            assert tools == ALL_TOOLS
            base = f"memory://workspace/notes/e2e-{uuid.uuid4().hex[:8]}"
            made = await create(
                client, f"{base}.md", "# Kickoff\nThe e2e kickoff is on Monday 日本 🙂"
            )
            assert made["revision"] == 1
            read = await call(client, "memory_read", uri=f"{base}.md", history=True)
            assert read["content"].endswith("🙂") and read["trust"] == "recorded-data"
            listed = await call(client, "memory_list", prefix="memory://workspace/notes/", limit=50)
            assert made["id"] in {i["id"] for i in listed["items"]}
            found = await call(client, "memory_search", query="kickoff monday")
            assert made["id"] in {h["id"] for h in found["hits"]}
            remembered = await call(
                client,
                "memory_remember",
                uri=f"{base}-facts.md",
                fact="Kickoff moved to Tuesday",
                idempotency_key=f"k-{uuid.uuid4().hex}",
            )
            assert remembered["merged"] is True and remembered["replayed"] is False
            moved = await call(
                client,
                "memory_move",
                uri=f"{base}.md",
                new_uri=f"{base}-moved.md",
                expected_revision=1,
            )
            assert moved["revision"] == 2 and moved["id"] == made["id"]
            templates = await client.list_resource_templates()
            assert len(templates.resource_templates) == 4
            assert (await client.list_resources()).resources == []
            current = await client.read_resource(f"memory://record/{made['id']}")
            assert "kickoff" in current.contents[0].text
            first = await client.read_resource(f"memory://record/{made['id']}/revisions/1")
            assert first.contents[0].text == read["content"]
            gone = await call(client, "memory_delete", uri=f"{base}-moved.md", expected_revision=2)
            assert gone["deleted_revision"] == 2
            conflict = await client.call_tool(
                "memory_delete", {"uri": f"{base}-facts.md", "expected_revision": 9}
            )
            assert (
                conflict.is_error
                and conflict.structured_content["error"]["code"] == "revision_conflict"
            )

    run(scenario())


def test_personal_memory_is_invisible_to_bob(stack) -> None:  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        async with connect(stack, "alice") as alice:
            secret = await create(
                alice,
                f"memory://me/memories/s-{uuid.uuid4().hex[:6]}.md",
                "alice's private capybara plan",
            )
            own_page = await call(alice, "memory_list", limit=1)
        async with connect(stack, "bob", mode="legacy") as bob:
            found = await call(bob, "memory_search", query="capybara")
            assert found["hits"] == [] and found["truncated"] is False
            listed = await call(bob, "memory_list", limit=50)
            assert secret["id"] not in json.dumps(listed)
            for uri in (secret["uri"], f"memory://record/{secret['id']}"):
                denied = await call(bob, "memory_read", uri=uri)
                assert denied["error"]["code"] == "not_found"
            never = await call(bob, "memory_read", uri=f"memory://record/{uuid.uuid4()}")
            assert never["error"] == denied["error"]
            errors = []
            for rid in (secret["id"], str(uuid.uuid4())):
                with pytest.raises(MCPError) as caught:
                    await bob.read_resource(f"memory://record/{rid}")
                errors.append((caught.value.error.code, caught.value.error.message))
            assert errors[0] == errors[1] == (-32602, "Resource not found")
            if own_page["next_cursor"]:
                replay = await call(bob, "memory_list", limit=1, cursor=own_page["next_cursor"])
                assert replay["error"]["code"] == "invalid_argument"

    run(scenario())


def test_dm_memory_never_reaches_a_channel(stack) -> None:  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        async with connect(stack, "alice", context="dm:alice-release-bot") as dm:
            told = await create(
                dm,
                f"memory://workspace/notes/dm-{uuid.uuid4().hex[:6]}.md",
                "the walrus launch is secret",
            )
            assert told["context"] == "dm:alice-release-bot"
        async with connect(stack, "release-bot", context="dm:alice-release-bot") as bot:
            assert told["id"] in {
                h["id"] for h in (await call(bot, "memory_search", query="walrus"))["hits"]
            }
        for context in ("channel:general", None):
            async with connect(stack, "alice", context=context) as channel:
                assert (await call(channel, "memory_search", query="walrus"))["hits"] == []
                assert (await call(channel, "memory_read", uri=f"memory://record/{told['id']}"))[
                    "error"
                ]["code"] == "not_found"

    run(scenario())


@pytest.mark.parametrize("expected_version", list(MODES))
def test_provenance_says_whether_a_person_or_a_service_wrote(stack, expected_version: str) -> None:  # type: ignore[no-untyped-def]
    """Issue 33: beside each writer's handle, its kind (alice a person, release-bot a
    service identity), in reads, history, revisions and the briefing; the SDK client
    checks every structured result against the tool's output schema."""
    uri = f"memory://workspace/notes/provenance-{uuid.uuid4().hex[:8]}.md"
    mode = MODES[expected_version]

    async def scenario() -> None:
        async with connect(stack, "alice", mode=mode) as alice:
            listed = {t.name: t.output_schema for t in (await alice.list_tools()).tools}
            read_schema = listed["memory_read"]
            assert read_schema is not None
            assert {"created_by_kind", "updated_by_kind"} <= set(read_schema["required"])
            made = await create(alice, uri, "planned by alice")
        async with connect(stack, "release-bot", mode=mode) as bot:
            await call(bot, "memory_write", uri=uri, content="shipped", expected_revision=1)
        async with connect(stack, "alice", mode=mode) as alice:
            read = await call(alice, "memory_read", uri=uri, history=True)
            assert (read["created_by"], read["created_by_kind"]) == ("alice", "person")
            assert (read["updated_by"], read["updated_by_kind"]) == ("release-bot", "service")
            assert [(h["by"], h["by_kind"]) for h in read["history"]] == [
                ("release-bot", "service"),
                ("alice", "person"),
            ]
            first = await call(
                alice, "memory_read", uri=f"memory://record/{made['id']}/revisions/1"
            )
            assert (first["updated_by"], first["updated_by_kind"]) == ("alice", "person")
            brief = await call(alice, "memory_brief", max_bytes=16384)
            recent = [r for r in brief["recent"] if r["id"] == made["id"]]
            assert [(r["updated_by"], r["updated_by_kind"]) for r in recent] == [
                ("release-bot", "service")
            ]

    run(scenario())


def _raw_post(
    stack, who: str, workspace: str, body: dict, context: str | None = None
) -> httpx2.Response:  # type: ignore[no-untyped-def]
    headers = {
        "Authorization": f"Bearer {stack.info['tokens'][who]}",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    if context:
        headers["memory-context"] = context
    return httpx2.post(stack.info["workspaces"][workspace], json=body, headers=headers, verify=TLS)


def test_workspace_and_context_gates(stack) -> None:  # type: ignore[no-untyped-def]
    tools_list = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    carol_on_acme = _raw_post(stack, "carol", "acme", tools_list)
    initech = _raw_post(stack, "alice", "initech", tools_list)
    assert (carol_on_acme.status_code, carol_on_acme.content) == (404, b"")
    assert (initech.status_code, initech.content) == (404, b"")
    assert _raw_post(stack, "carol", "globex", tools_list).status_code == 200
    leads = [
        _raw_post(stack, who, "acme", tools_list, context=ctx)
        for who, ctx in (
            ("bob", "channel:leads"),
            ("bob", "dm:alice-release-bot"),
            ("alice", "dm:nobody"),
        )
    ]
    assert {(r.status_code, r.content) for r in leads} == {
        (403, b'{"error":"context_unavailable"}')
    }
    assert _raw_post(stack, "alice", "acme", tools_list, context="channel:leads").status_code == 200


@pytest.mark.parametrize("who", ["ci-bot", "alice-readonly"])
def test_read_only_keys_cannot_write(stack, owner_db, who: str) -> None:  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        async with connect(stack, "alice") as alice:
            target = await create(
                alice, f"memory://workspace/notes/ro-{uuid.uuid4().hex[:6]}.md", "stable"
            )
        before = owner_db.execute("SELECT count(*), max(revision) FROM memory.revisions").fetchone()
        async with connect(stack, who) as reader:
            names = {t.name for t in (await reader.list_tools()).tools}
            assert names == {
                "memory_list",
                "memory_read",
                "memory_search",
                "memory_brief",
                "memory_scopes",
            }
            attempts = [
                ("memory_write", {"uri": target["uri"], "content": "x", "expected_revision": 1}),
                (
                    "memory_write",
                    {
                        "uri": "memory://workspace/notes/new.md",
                        "content": "x",
                        "expected_revision": 0,
                    },
                ),
                (
                    "memory_remember",
                    {"uri": target["uri"], "fact": "x", "idempotency_key": "ro-key-0001"},
                ),
                (
                    "memory_delete",
                    {"uri": f"memory://record/{target['id']}", "expected_revision": 1},
                ),
                (
                    "memory_move",
                    {
                        "uri": target["uri"],
                        "new_uri": "memory://workspace/notes/moved.md",
                        "expected_revision": 1,
                    },
                ),
            ]
            for tool, arguments in attempts:
                result = await reader.call_tool(tool, arguments)
                assert result.is_error
                assert result.structured_content["error"]["code"] in (
                    "permission_denied",
                    "not_found",
                ), tool
        assert (
            owner_db.execute("SELECT count(*), max(revision) FROM memory.revisions").fetchone()
            == before
        )
        row = owner_db.execute(
            "SELECT body, revision FROM memory.memories WHERE id = %s", (target["id"],)
        ).fetchone()
        assert row == ("stable", 1)

    run(scenario())


def test_retried_remember_replays_and_each_change_has_one_event(stack) -> None:  # type: ignore[no-untyped-def]
    stack.aws.read_audit_events()  # drain what earlier tests produced

    async def scenario() -> tuple[dict, dict, dict]:
        async with connect(stack, "bob") as bob:
            args = {
                "uri": "memory://me/memories/e2e-prefs.md",
                "fact": f"likes {uuid.uuid4().hex[:6]}",
                "idempotency_key": f"retry-{uuid.uuid4().hex}",
            }
            first = await call(bob, "memory_remember", **args)
            again = await call(bob, "memory_remember", **args)  # the response was "lost"
            written = await create(bob, f"memory://me/notes/e2e-{uuid.uuid4().hex[:6]}.md", "x")
            return first, again, written

    first, again, written = run(scenario())
    assert again == {**first, "replayed": True}
    assert stack.wait_published()  # events are published after the responses
    # The sweeper may publish other records' events meanwhile (the demo seed writes
    # without a publisher, so its rows wait for a sweep): count this test's records.
    events = [
        e
        for e in stack.aws.read_audit_events()
        if e["detail"]["record_id"] in (first["id"], written["id"])
    ]
    keys = [(e["detail"]["record_id"], e["detail"]["revision"]) for e in events]
    assert sorted(keys) == sorted([(first["id"], first["revision"]), (written["id"], 1)])
    assert all(e["detail-type"] == "MemoryChanged" for e in events)
