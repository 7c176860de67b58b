"""End to end: memory that stays current (docs/contract.md §5, "Memory that stays
current") through the official MCP Python SDK client over HTTP, in both protocol
generations: corrections in place, expiry from every view and the sweeper's purge,
reads as of a time, the briefing and its byte budget, the prompt, the instructions
and memory_scopes."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import mcp_types as t
import pytest
from mcp.shared.exceptions import MCPError
from memory_server.domain.limits import INSTRUCTIONS_MAX_BYTES

from tests.e2e.conftest import call, connect, create, empty_acme, run, workspace_url
from tests.proof.harness import mcp_client

MODES = {"2026-07-28": "auto", "2025-11-25": "legacy"}
DM = "dm:alice-release-bot"
PURGE_WITHIN_S = 15.0  # make dev's promise (docs/contract.md)


def at(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def soon(seconds: float) -> str:
    return at(datetime.now(UTC) + timedelta(seconds=seconds))


def key() -> str:
    return f"k-{uuid.uuid4().hex}"


async def until(check: Any, timeout_s: float = 20.0) -> Any:
    """Poll ``check`` (an async callable) until it returns something truthy."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = await check()
        if found:
            return found
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("generation", list(MODES))
def test_a_correction_replaces_the_old_fact_in_place_once(stack, generation: str) -> None:  # type: ignore[no-untyped-def]
    uri = f"memory://me/memories/profile-{uuid.uuid4().hex[:8]}.md"

    async def scenario() -> None:
        async with connect(stack, "alice", mode=MODES[generation]) as alice:
            assert alice.protocol_version == generation
            await call(
                alice, "memory_remember", uri=uri, fact="My name is Alice", idempotency_key=key()
            )
            await call(
                alice, "memory_remember", uri=uri, fact="Works on billing", idempotency_key=key()
            )
            correction = {
                "uri": uri,
                "fact": "My name is Bob",
                "supersedes": "- My name is Alice",  # compared as facts are
                "idempotency_key": key(),
            }
            fixed = await call(alice, "memory_remember", **correction)
            assert (fixed["superseded"], fixed["merged"], fixed["replayed"]) == (True, True, False)
            assert fixed["revision"] == 3
            read = await call(alice, "memory_read", uri=uri, history=True)
            assert read["content"] == "- My name is Bob\n- Works on billing\n"
            assert [h["operation"] for h in read["history"]] == ["supersede", "merge", "merge"]
            again = await call(alice, "memory_remember", **correction)
            assert again == {**fixed, "replayed": True}
            assert (await call(alice, "memory_read", uri=uri))["revision"] == 3
            reused = await call(alice, "memory_remember", **{**correction, "fact": "Carol"})
            assert reused["error"]["code"] == "idempotency_key_reused"
            nowhere = await call(
                alice,
                "memory_remember",
                uri=uri,
                fact="Lives in Lisbon",
                supersedes="Lives in Porto",
                idempotency_key=key(),
            )
            assert (nowhere["superseded"], nowhere["merged"], nowhere["revision"]) == (
                False,
                True,
                4,
            )
            # A remember's expires_at: absent leaves the record's, null removes it (the
            # same through the DynamoDB layer as in the database).
            lapse = soon(3600)
            await call(
                alice,
                "memory_remember",
                uri=uri,
                fact="In Lisbon",
                expires_at=lapse,
                idempotency_key=key(),
            )
            assert (await call(alice, "memory_read", uri=uri))["expires_at"] == lapse
            await call(alice, "memory_remember", uri=uri, fact="Likes tea", idempotency_key=key())
            assert (await call(alice, "memory_read", uri=uri))["expires_at"] == lapse
            await call(
                alice,
                "memory_remember",
                uri=uri,
                fact="Likes jazz",
                expires_at=None,
                idempotency_key=key(),
            )
            assert (await call(alice, "memory_read", uri=uri))["expires_at"] is None

    run(scenario())


@pytest.mark.parametrize("generation", list(MODES))
def test_an_expired_record_leaves_every_view_at_its_time(stack, owner_db, generation: str) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:8]
    word = f"zorblax{tag}"
    folder = f"exp-{tag}"
    uri = f"memory://workspace/notes/{folder}/plan.md"
    skill_uri = f"memory://workspace/skills/{folder}/SKILL.md"
    shared = t.ResourceTemplateReference(uri="memory://workspace/{kind}/{+path}")

    async def views(client: Any, record_id: str) -> dict[str, Any]:
        """What each view shows of the record and the skill."""
        listed = await call(client, "memory_list", prefix=f"memory://workspace/notes/{folder}/")
        brief = await call(client, "memory_brief", max_bytes=16384)
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        completed = await client.complete(shared, {"name": "path", "value": f"{folder}/"})
        return {
            "list": [i["id"] for i in listed["items"]],
            "read": await call(client, "memory_read", uri=f"memory://record/{record_id}"),
            "search": [h["id"] for h in (await call(client, "memory_search", query=word))["hits"]],
            "brief": [p["id"] for p in brief["pinned"]] + [r["id"] for r in brief["recent"]],
            "skill in brief": any(s["name"] == folder for s in brief["skills"]),
            "prompt": folder in prompts,
            "completion": list(completed.completion.values),
        }

    async def scenario() -> None:
        async with connect(stack, "alice", mode=MODES[generation]) as alice:
            expires = soon(4)
            made = await call(
                alice,
                "memory_write",
                uri=uri,
                content=f"# Plan\nThe {word} offsite is this week.\n",
                expected_revision=0,
                expires_at=expires,
                pinned=True,
            )
            await call(
                alice,
                "memory_write",
                uri=skill_uri,
                content=f"---\nname: {folder}\ndescription: gone soon\n---\nSteps.\n",
                expected_revision=0,
                expires_at=expires,
            )
            read = await call(alice, "memory_read", uri=uri)
            assert (read["expires_at"], read["pinned"]) == (expires, True)
            seen = await views(alice, made["id"])
            assert seen["list"] == [made["id"]] and seen["search"] == [made["id"]]
            assert made["id"] in seen["brief"] and seen["skill in brief"] and seen["prompt"]
            assert seen["completion"] == [f"{folder}/SKILL.md", f"{folder}/plan.md"]

            async def gone() -> bool:
                answer = await call(alice, "memory_read", uri=uri)
                return answer.get("error", {}).get("code") == "not_found"

            await until(gone)
            expired_at = time.monotonic()
            never = await call(alice, "memory_read", uri=f"memory://record/{uuid.uuid4()}")
            after = await views(alice, made["id"])
            assert after["read"] == never  # like a record that never existed
            assert after["list"] == after["search"] == after["completion"] == []
            assert made["id"] not in after["brief"]
            assert not after["skill in brief"] and not after["prompt"]
            as_of = await call(alice, "memory_read", uri=uri, as_of=soon(-2))
            assert as_of == never
            for resource in (
                f"memory://record/{made['id']}",
                f"memory://record/{made['id']}/revisions/1",
            ):
                with pytest.raises(MCPError) as caught:
                    await alice.read_resource(resource)
                assert caught.value.error.message == "Resource not found"
            with pytest.raises(MCPError) as caught:
                await alice.get_prompt(folder)
            assert caught.value.error.message == "Prompt not found"

            # Its path is free at once; the record made there is a new one.
            again = await create(alice, uri, "# Plan\nA new plan.\n")
            assert again["revision"] == 1 and again["id"] != made["id"]

        # Both are purged like deletes: the one at the reused path at once, the skill
        # by the sweeper within its interval.
        def purged(record_id: str) -> bool:
            return owner_db.execute(
                "SELECT NOT EXISTS (SELECT 1 FROM memory.memories WHERE id = %s)", (record_id,)
            ).fetchone()[0]

        skill_id = owner_db.execute(
            "SELECT memory_id FROM memory.revisions WHERE path = %s AND operation = 'create' "
            "ORDER BY created_at DESC LIMIT 1",
            (f"{folder}/SKILL.md",),
        ).fetchone()[0]
        while not purged(str(skill_id)):
            assert time.monotonic() - expired_at < PURGE_WITHIN_S, "the sweeper did not purge it"
            time.sleep(0.2)
        for record_id in (made["id"], str(skill_id)):
            history = owner_db.execute(
                "SELECT operation, body IS NULL AND title IS NULL, writer_id::text "
                "FROM memory.revisions WHERE memory_id = %s ORDER BY revision",
                (record_id,),
            ).fetchall()
            assert history == [
                ("create", True, history[0][2]),
                ("expire", True, "00000000-0000-0000-0000-000000000000"),
            ]
            events = owner_db.execute(
                "SELECT operation, revision FROM memory.audit_outbox WHERE memory_id = %s "
                "ORDER BY id",
                (record_id,),
            ).fetchall()
            assert events == [("create", 1), ("expire", 2)]

    run(scenario())


@pytest.mark.parametrize("generation", list(MODES))
def test_as_of_reads_what_the_record_said_then(stack, generation: str) -> None:  # type: ignore[no-untyped-def]
    uri = f"memory://workspace/notes/asof-{uuid.uuid4().hex[:8]}.md"

    async def scenario() -> None:
        async with connect(stack, "alice", mode=MODES[generation]) as alice:
            before = soon(-1)
            made = await create(alice, uri, "first")
            await asyncio.sleep(0.05)  # revisions a clock tick apart
            between = soon(0)
            await asyncio.sleep(0.05)
            await call(alice, "memory_write", uri=uri, content="second", expected_revision=1)
            after = soon(1)
            old = await call(alice, "memory_read", uri=uri, as_of=between)
            assert (old["content"], old["revision"], old["as_of"]) == ("first", 1, between)
            assert old["updated_by"] == "alice" and old["trust"] == "recorded-data"
            assert (await call(alice, "memory_read", uri=uri, as_of=after))["content"] == "second"
            by_id = await call(
                alice, "memory_read", uri=f"memory://record/{made['id']}", as_of=between
            )
            assert by_id["content"] == "first"
            missing = await call(alice, "memory_read", uri=uri, as_of=before)
            assert missing["error"]["code"] == "not_found"
            revision = await call(
                alice, "memory_read", uri=f"memory://record/{made['id']}/revisions/1", as_of=after
            )
            assert revision["error"]["code"] == "invalid_argument"
            await call(alice, "memory_delete", uri=uri, expected_revision=2)
            deleted = await call(
                alice, "memory_read", uri=f"memory://record/{made['id']}", as_of=between
            )
            assert deleted["error"]["code"] == "not_found"

    run(scenario())


def _message(body: bytes) -> bytes:
    """The JSON-RPC message of a response body (plain JSON, or one SSE event)."""
    if body.lstrip().startswith(b"{"):
        return body
    data = [line[5:].strip() for line in body.split(b"\n") if line.startswith(b"data:")]
    return data[-1]


@pytest.mark.parametrize("generation", list(MODES))
def test_the_brief_orders_its_view_and_keeps_to_its_byte_budget(
    stack, owner_db, generation: str
) -> None:  # type: ignore[no-untyped-def]
    """In a workspace of its own (acme's members and contexts): the briefing shows every
    pinned record in view, in order, within its budget, so any other test's pinned
    record in the same workspace would change what it must show. (In acme, pins the
    isolation proof left took part of the default 4,096 bytes, and the workspace's
    pin, ranked last, was dropped.)"""
    tag = uuid.uuid4().hex[:8]
    made: dict[str, str] = {}
    ws = empty_acme(stack, owner_db)
    url = workspace_url(stack, ws)

    async def scenario() -> None:
        responses: list[tuple[int, bytes]] = []
        async with connect(stack, "alice", workspace=ws, mode=MODES[generation]) as alice:
            since = soon(-0.5)
            for name, uri in (
                ("shared", f"memory://workspace/memories/brief-{tag}/shared.md"),
                ("personal", f"memory://me/memories/brief-{tag}/mine.md"),
            ):
                body = f"# {name}\n" + f"{name} pinned fact 日本. " * 300
                written = await call(
                    alice, "memory_write", uri=uri, content=body, expected_revision=0, pinned=True
                )
                made[name] = written["id"]
            for i in range(3):
                made[f"note{i}"] = (
                    await create(
                        alice, f"memory://workspace/notes/brief-{tag}/n{i}.md", f"note {i}"
                    )
                )["id"]
        async with connect(stack, "alice", workspace=ws, mode=MODES[generation], context=DM) as dm:
            made["dm"] = (
                await call(
                    dm,
                    "memory_write",
                    uri=f"memory://workspace/memories/brief-{tag}/dm.md",
                    content="# DM\nTold in the DM only.",
                    expected_revision=0,
                    pinned=True,
                )
            )["id"]
            in_dm = await call(dm, "memory_brief", since=since)
            ids = [p["id"] for p in in_dm["pinned"]]
            # Personal first, then the nearest context, then the workspace.
            assert [i for i in ids if i in made.values()] == [
                made["personal"],
                made["dm"],
                made["shared"],
            ]
        async with mcp_client(
            stack, "alice", url=url, mode=MODES[generation], responses=responses
        ) as alice:
            whole = await call(alice, "memory_brief", max_bytes=16384, since=since)
            assert whole["trust"] == "recorded-data"
            mine = [p["id"] for p in whole["pinned"] if p["id"] in made.values()]
            assert mine == [made["personal"], made["shared"]]  # never the DM's from here
            recent = [r["id"] for r in whole["recent"] if r["id"] in made.values()]
            assert recent == [made["note2"], made["note1"], made["note0"]]  # newest first
            assert all(r["updated_by"] == "alice" for r in whole["recent"])
            for limit in (1024, 2048, 4096, 16384):
                responses.clear()
                brief = await call(alice, "memory_brief", max_bytes=limit, since=since)
                sent = len(_message(responses[-1][1]))
                assert sent <= limit, (limit, sent)
                if limit < 16384:
                    assert brief["truncated"] is True and sent > limit * 0.8, (limit, sent)
                cut = [p for p in brief["pinned"] if p["truncated"]]
                assert all(p["content"] for p in brief["pinned"]) and cut
        async with connect(stack, "bob", workspace=ws, mode=MODES[generation]) as bob:
            theirs = await call(bob, "memory_brief", max_bytes=16384, since=since)
            seen = {p["id"] for p in theirs["pinned"]} | {r["id"] for r in theirs["recent"]}
            assert made["personal"] not in seen and made["dm"] not in seen
            assert made["shared"] in seen
        async with connect(stack, "alice", workspace=ws, mode=MODES[generation]) as alice:
            for name in ("shared", "personal", "note0", "note1", "note2"):  # leave no pins
                current = await call(alice, "memory_read", uri=f"memory://record/{made[name]}")
                await call(
                    alice,
                    "memory_delete",
                    uri=f"memory://record/{made[name]}",
                    expected_revision=current["revision"],
                )

    run(scenario())


@pytest.mark.parametrize("generation", list(MODES))
def test_the_briefing_prompt_and_the_instructions(stack, generation: str) -> None:  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        async with connect(stack, "alice", mode=MODES[generation]) as alice:
            note = await create(
                alice, f"memory://workspace/notes/prompt-{uuid.uuid4().hex[:8]}.md", "fresh"
            )
            listed = await alice.list_prompts()
            assert listed.prompts[0].name == "memory-briefing"
            got = await alice.get_prompt("memory-briefing", {"since": soon(-5)})
            message = got.messages[0]
            assert message.role == "user" and message.content.meta == {"trust": "recorded-data"}
            briefing = json.loads(message.content.text)
            assert note["id"] in {r["id"] for r in briefing["recent"]}
            with pytest.raises(MCPError) as caught:
                await alice.get_prompt("memory-briefing", {"since": "yesterday"})
            assert caught.value.error.code == -32602
            named = await alice.complete(
                t.PromptReference(name="memory-briefing"), {"name": "name", "value": "memory-b"}
            )
            assert named.completion.values[0] == "memory-briefing"
            instructions = alice.instructions
            assert instructions is not None
            assert len(instructions.encode()) <= INSTRUCTIONS_MAX_BYTES
            for needed in ("memory_brief", "memory_search", "memory_remember", "supersedes"):
                assert needed in instructions

    run(scenario())


@pytest.mark.parametrize("generation", list(MODES))
def test_scopes_say_who_asks_and_who_can_hear(stack, generation: str) -> None:  # type: ignore[no-untyped-def]
    async def scopes(who: str, context: str | None) -> dict[str, Any]:
        async with connect(stack, who, mode=MODES[generation], context=context) as client:
            return await call(client, "memory_scopes")

    async def scenario() -> None:
        thread = await scopes("bob", "channel:general/thread:t1")
        assert thread == {
            "workspace": "acme",
            "principal": {"handle": "bob", "kind": "person"},
            "grants": ["read", "write:personal"],
            "context": "channel:general/thread:t1",
            "visible_contexts": ["channel:general/thread:t1", "channel:general", "workspace"],
            "personal_namespace": True,
        }
        service = await scopes("ci-bot", None)
        assert service["principal"] == {"handle": "ci-bot", "kind": "service"}
        assert (service["grants"], service["visible_contexts"]) == (["read"], ["workspace"])
        assert service["personal_namespace"] is False
        readonly = await scopes("alice-readonly", None)
        assert readonly["grants"] == ["read"] and readonly["principal"]["handle"] == "alice"
        leads = await scopes("alice", "channel:leads")
        assert leads["visible_contexts"] == ["channel:leads", "workspace"]
        assert "admin" in leads["grants"]

    run(scenario())
