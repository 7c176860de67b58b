"""Skills as prompts and completions, in process: the view, paging within the byte
budget, cache hints, arguments, and answers that say nothing outside the view."""

from __future__ import annotations

import json
from typing import Any

from memory_server.domain.deadline import Deadline
from memory_server.domain.limits import COMPLETION_MAX_VALUES, RESPONSE_MAX_BYTES
from memory_server.protocol import completions, prompts
from memory_server.protocol.dispatcher import Request
from memory_server.protocol.tools import CallContext

from tests.endpoint.test_service import legacy_call, modern_call


def skill(
    folder: str, description: str = "Do the thing", extra: str = "", body: str = "Go.\n"
) -> str:
    return f"---\nname: {folder}\ndescription: {description}\n{extra}---\n{body}"


def write(ws, who, uri: str, content: str, context: str = "workspace") -> None:  # type: ignore[no-untyped-def]
    ws.agent(who, context).write(uri=uri, content=content, expected_revision=0)


def names(body: dict[str, Any]) -> list[str]:
    """The skills listed (the briefing, which leads a first page, left out)."""
    return [p["name"] for p in body["result"]["prompts"] if p["name"] != "memory-briefing"]


def listed(service, ws, who, context: str | None = None, cursor: str | None = None):  # type: ignore[no-untyped-def]
    params = {} if cursor is None else {"cursor": cursor}
    return modern_call(service, ws, who, "prompts/list", params, context=context)


def test_prompts_are_the_skills_in_the_callers_view(service, world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice, bob = ws.person("alice"), ws.person("bob", ("read", "write:personal"))
    eng = "channel:eng"
    # The channel's own copy first: once the workspace's exists, a create conflicts.
    write(ws, alice, "memory://workspace/skills/deploy/SKILL.md", skill("deploy", "Eng's way"), eng)
    write(ws, alice, "memory://workspace/skills/deploy/SKILL.md", skill("deploy", "Ship it"))
    write(ws, alice, "memory://workspace/skills/deploy/notes.md", "not a prompt")
    write(ws, alice, "memory://workspace/skills/tools/lint/SKILL.md", skill("lint"))  # nested
    write(ws, alice, "memory://workspace/notes/x/SKILL.md", "# a note, not a skill")
    write(ws, alice, "memory://me/skills/mine/SKILL.md", skill("mine", "Alice's own"))
    write(ws, alice, "memory://workspace/skills/ops/SKILL.md", skill("ops"), eng)
    ws.register("dm:a-b", alice)
    write(ws, alice, "memory://workspace/skills/secret/SKILL.md", skill("secret"), "dm:a-b")

    status, body = listed(service, ws, alice)
    assert status == 200 and names(body) == ["deploy", "me/mine"]
    result = body["result"]
    assert result["prompts"][0]["name"] == "memory-briefing"
    assert result["prompts"][1] == {"name": "deploy", "description": "Ship it"}
    assert (result["ttlMs"], result["cacheScope"]) == (60_000, "private")
    assert result["_meta"]["trust"] == "recorded-data" and "nextCursor" not in result
    _, in_eng = listed(service, ws, alice, context=eng)
    assert names(in_eng) == ["deploy", "me/mine", "ops"]
    assert in_eng["result"]["prompts"][1]["description"] == "Eng's way"  # nearest context
    _, for_bob = listed(service, ws, bob)
    assert names(for_bob) == ["deploy"]

    status, legacy = legacy_call(service, ws, alice, "prompts/list", {})
    assert status == 200 and names(legacy) == ["deploy", "me/mine"]
    assert "ttlMs" not in legacy["result"] and "cacheScope" not in legacy["result"]

    status, got = modern_call(service, ws, alice, "prompts/get", {"name": "ops"}, context=eng)
    assert status == 200 and got["result"]["messages"][0]["content"]["text"] == "Go.\n"
    # Outside the view, not yours, never existed, not a skill name: one answer.
    answers = []
    for who, name, context in [
        (alice, "ops", None),  # in another context
        (alice, "secret", eng),  # in a DM alice is not listening from
        (bob, "me/mine", None),  # alice's personal skill, asked for by bob
        (alice, "never", None),
        (alice, "tools/lint", None),  # nested: not a prompt
        (alice, "../deploy", None),
    ]:
        status, refused = modern_call(
            service, ws, who, "prompts/get", {"name": name}, context=context
        )
        error = refused["error"]
        answers.append((status, error["code"], error["message"], error["data"] == {"name": name}))
    assert set(answers) == {(400, -32602, "Prompt not found", True)}, answers
    _, legacy_missing = legacy_call(service, ws, bob, "prompts/get", {"name": "me/mine"})
    assert legacy_missing["error"]["message"] == "Prompt not found"


def test_prompt_get_serves_the_body_as_recorded_data_with_declared_arguments(  # type: ignore[no-untyped-def]
    service, world
) -> None:
    ws = world.workspace()
    alice = ws.person("alice")
    content = skill(
        "release", "Draft the notes", "arguments: version, audience\n", "# Release\nSteps.\n"
    )
    write(ws, alice, "memory://workspace/skills/release/SKILL.md", content)
    _, body = listed(service, ws, alice)
    assert body["result"]["prompts"][1:] == [
        {
            "name": "release",
            "description": "Draft the notes",
            "arguments": [
                {"name": "version", "required": False},
                {"name": "audience", "required": False},
            ],
        }
    ]
    status, got = modern_call(
        service, ws, alice, "prompts/get", {"name": "release", "arguments": {"version": "2.0"}}
    )
    assert status == 200
    result = got["result"]
    assert result["description"] == "Draft the notes"
    assert result["messages"] == [
        {
            "role": "user",
            "content": {
                "type": "text",
                "text": "# Release\nSteps.\n",
                "_meta": {"trust": "recorded-data"},
            },
        },
        {"role": "user", "content": {"type": "text", "text": "Arguments:\nversion: 2.0"}},
    ]
    assert result["_meta"]["trust"] == "recorded-data"
    assert result["_meta"]["uri"] == "memory://workspace/skills/release/SKILL.md"
    status, bad = modern_call(
        service, ws, alice, "prompts/get", {"name": "release", "arguments": {"other": "x"}}
    )
    assert (status, bad["error"]["code"], bad["error"]["data"]) == (
        400,
        -32602,
        {"argument": "other"},
    )
    status, bad = modern_call(
        service, ws, alice, "prompts/get", {"name": "release", "arguments": {"version": "x" * 5000}}
    )
    assert (status, bad["error"]["code"]) == (400, -32602)


def test_prompts_page_within_the_byte_budget(service, world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice, bob = ws.person("alice"), ws.person("bob")
    folders = [f"s{i:02d}" for i in range(60)]
    for folder in folders:
        write(ws, alice, f"memory://workspace/skills/{folder}/SKILL.md", skill(folder, "é" * 600))
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        status, body = listed(service, ws, alice, cursor=cursor)
        assert status == 200
        size = len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())
        assert size <= RESPONSE_MAX_BYTES
        result = body["result"]
        descriptions = [prompt["description"] for prompt in result["prompts"]]
        assert all(len(d.encode()) <= 1024 for d in descriptions)
        seen += names(body)
        pages += 1
        cursor = result.get("nextCursor")
        if cursor is None:
            break
        assert size > RESPONSE_MAX_BYTES - 1300  # a page is cut only when the next would not fit
    assert seen == folders and pages > 2
    _, first = listed(service, ws, alice)
    cursor = first["result"]["nextCursor"]
    for who, context in ((bob, None), (alice, "channel:eng")):
        status, refused = listed(service, ws, who, context=context, cursor=cursor)
        assert (status, refused["error"]["code"]) == (400, -32602)
    status, refused = listed(service, ws, alice, cursor="not-a-cursor")
    assert (status, refused["error"]["code"]) == (400, -32602)


def complete(service, ws, who, ref, name: str, value: str, context=None, resolved=None):  # type: ignore[no-untyped-def]
    params: dict[str, Any] = {"ref": ref, "argument": {"name": name, "value": value}}
    if resolved is not None:
        params["context"] = {"arguments": resolved}
    status, body = modern_call(service, ws, who, "completion/complete", params, context=context)
    assert status == 200, body
    return body["result"]["completion"]


SHARED = {"type": "ref/resource", "uri": "memory://workspace/{kind}/{+path}"}
PERSONAL = {"type": "ref/resource", "uri": "memory://me/{kind}/{+path}"}
PROMPT = {"type": "ref/prompt", "name": "anything"}


def test_completion_offers_only_paths_and_names_in_view(service, world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice, bob = ws.person("alice"), ws.person("bob")
    write(ws, alice, "memory://workspace/notes/plan/q1.md", "q1")
    write(ws, alice, "memory://workspace/memories/plan/q2.md", "q2")
    ws.register("dm:alice-bob", alice)
    write(ws, alice, "memory://workspace/notes/plan/q3.md", "dm only", "dm:alice-bob")
    write(ws, alice, "memory://me/notes/plan/private.md", "mine")
    write(ws, alice, "memory://workspace/skills/planning/SKILL.md", skill("planning"))
    write(ws, alice, "memory://me/skills/plan-mine/SKILL.md", skill("plan-mine"))

    assert complete(service, ws, alice, SHARED, "path", "plan/") == {
        "values": ["plan/q1.md", "plan/q2.md"],
        "hasMore": False,
    }
    assert complete(service, ws, alice, SHARED, "path", "plan/", resolved={"kind": "memories"})[
        "values"
    ] == ["plan/q2.md"]
    assert complete(service, ws, alice, SHARED, "path", "plan/", context="dm:alice-bob")[
        "values"
    ] == ["plan/q1.md", "plan/q2.md", "plan/q3.md"]
    assert complete(service, ws, alice, PERSONAL, "path", "pl")["values"] == [
        "plan-mine/SKILL.md",  # every kind when none is given, in path order
        "plan/private.md",
    ]
    assert complete(service, ws, bob, PERSONAL, "path", "")["values"] == []
    assert complete(service, ws, bob, SHARED, "path", "plan/q")["values"] == [
        "plan/q1.md",
        "plan/q2.md",
    ]
    for prefix in ("plan/q1.md/", "pl an", "%", "/"):
        assert complete(service, ws, alice, SHARED, "path", prefix)["values"] == []

    assert complete(service, ws, alice, PROMPT, "name", "")["values"] == [
        "memory-briefing",
        "planning",
        "me/plan-mine",
    ]
    assert complete(service, ws, alice, PROMPT, "name", "me/")["values"] == ["me/plan-mine"]
    assert complete(service, ws, alice, PROMPT, "name", "m")["values"] == [
        "memory-briefing",  # the briefing leads, for anyone who may read
        "me/plan-mine",
    ]
    assert complete(service, ws, bob, PROMPT, "name", "")["values"] == [
        "memory-briefing",
        "planning",
    ]
    assert complete(service, ws, bob, PROMPT, "name", "me/")["values"] == []


def test_completion_stops_at_twenty_values(service, world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.person("alice")
    for i in range(25):
        write(ws, alice, f"memory://workspace/notes/n{i:02d}.md", "x")
    found = complete(service, ws, alice, SHARED, "path", "n", resolved={"kind": "notes"})
    assert found["values"] == [f"n{i:02d}.md" for i in range(COMPLETION_MAX_VALUES)]
    assert found["hasMore"] is True
    assert complete(service, ws, alice, SHARED, "path", "n2")["hasMore"] is False


def test_a_deadline_that_ran_out_is_an_error_not_an_empty_answer(world, service) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    caller = ws.caller(ws.person("alice"))
    spent = CallContext(caller, Deadline.after(-1))
    for method, handler, params in [
        ("prompts/list", prompts.list_prompts, {}),
        ("prompts/get", prompts.get_prompt, {"name": "x"}),
        (
            "completion/complete",
            completions.complete,
            {"ref": SHARED, "argument": {"name": "path", "value": ""}},
        ),
    ]:
        request = Request(1, method, params, "2025-11-25", False, {})
        try:
            handler(service.store, request, spent)
        except Exception as error:
            assert getattr(error, "rpc_code", None) == -32603, error
            assert getattr(error, "data", None) == {"code": "timeout"}
        else:
            raise AssertionError(f"{method} answered after its deadline")
