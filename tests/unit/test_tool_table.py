"""The tool table without a database: definitions, visibility, the call path, and the
exact wire sizer the budgets are measured with."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import RpcError, ToolError
from memory_server.operations.store import Store
from memory_server.protocol.dispatcher import Request
from memory_server.protocol.tools import (
    TOOLS,
    CallContext,
    Tool,
    ToolTable,
    WireSizer,
    tool_definition,
    tool_result,
)

from tests.unit.fakes import alice_caller

MODERN = "2026-07-28"


def table(observed: list[tuple[str, str | None]] | None = None) -> ToolTable:
    # No database: any operation that reached it would fail loudly.
    store = Store(db=None, cursor_secret=b"s" * 32)  # type: ignore[arg-type]

    def observe(name: str, ms: float, code: str | None) -> None:
        assert ms >= 0
        if observed is not None:
            observed.append((name, code))

    return ToolTable(store, observer=observe)


def call(tools: ToolTable, name: str, arguments: Any, who: Caller) -> tuple[dict[str, Any], bool]:
    request = Request(
        1, "tools/call", {"name": name, "arguments": arguments}, "2025-06-18", False, {}
    )
    context = CallContext(who, Deadline())
    return tools.call_tool(request, context), context.changed


def test_every_definition_is_closed_and_annotated() -> None:
    for name, spec in TOOLS.items():
        definition = tool_definition(name)
        assert definition["inputSchema"]["additionalProperties"] is False
        assert definition["outputSchema"]["type"] == "object"
        annotations = definition["annotations"]
        assert annotations["readOnlyHint"] is spec.read_only
        assert annotations["destructiveHint"] is spec.destructive
    assert tool_definition("memory_delete")["annotations"]["destructiveHint"] is True


@pytest.mark.parametrize(
    ("grants", "visible"),
    [
        (
            {"read"},
            {"memory_list", "memory_read", "memory_search", "memory_brief", "memory_scopes"},
        ),
        ({"write:personal"}, {"memory_write", "memory_remember", "memory_move", "memory_scopes"}),
        ({"delete"}, {"memory_scopes"}),  # delete needs a write grant too; scopes any grant
        (
            {"delete", "write:shared"},
            {"memory_write", "memory_remember", "memory_move", "memory_delete", "memory_scopes"},
        ),
    ],
)
def test_tools_list_follows_grants(grants: set[str], visible: set[str]) -> None:
    request = Request(1, "tools/list", {}, MODERN, True, {})
    listed = table().list_tools(request, CallContext(alice_caller(*grants), Deadline()))
    assert {tool["name"] for tool in listed["tools"]} == visible
    assert listed["cacheScope"] == "private"


def test_unknown_tool_and_malformed_params_are_protocol_errors() -> None:
    tools = table()
    with pytest.raises(RpcError) as unknown:
        call(tools, "memory_nope", {}, alice_caller("read"))
    assert unknown.value.rpc_code == -32602
    request = Request(1, "tools/call", {"name": 5}, "2025-06-18", False, {})
    with pytest.raises(RpcError):
        tools.call_tool(request, CallContext(alice_caller("read"), Deadline()))


def test_invalid_arguments_are_a_tool_error_naming_the_rule_and_are_observed() -> None:
    observed: list[tuple[str, str | None]] = []
    result, changed = call(
        table(observed), "memory_search", {"query": "x", "limit": 9}, alice_caller("read")
    )
    assert result["isError"] is True and changed is False
    error = result["structuredContent"]["error"]
    assert error["code"] == "invalid_argument" and "limit" in error["message"]
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert observed == [("memory_search", "invalid_argument")]


def test_a_successful_change_marks_the_request_changed_and_a_read_does_not() -> None:
    observed: list[tuple[str, str | None]] = []
    tools = table(observed)
    seen: list[Any] = []

    def fake_write(who: Caller, args: Any, deadline: Deadline) -> dict[str, Any]:
        seen.append(args)
        return {"uri": args.uri, "id": "i", "revision": 1, "context": "workspace"}

    def fake_read(who: Caller, args: Any, deadline: Deadline) -> dict[str, Any]:
        return {"uri": args.uri, "content": "c"}

    tools.rows["memory_write"] = Tool(TOOLS["memory_write"], fake_write)
    tools.rows["memory_read"] = Tool(TOOLS["memory_read"], fake_read)
    who = alice_caller("read", "write:shared")
    uri = "memory://workspace/notes/a.md"
    result, changed = call(
        tools, "memory_write", {"uri": uri, "content": "x", "expected_revision": 0}, who
    )
    assert changed is True and result["structuredContent"]["revision"] == 1
    assert seen[0].expected_revision == 0  # validated into the tool's model
    result, changed = call(tools, "memory_read", {"uri": uri}, who)
    assert changed is False
    assert result["structuredContent"]["trust"] == "recorded-data"  # recalled: labelled
    assert observed == [("memory_write", None), ("memory_read", None)]


def test_a_failed_change_does_not_mark_the_request_changed() -> None:
    tools = table()

    def conflict(who: Caller, args: Any, deadline: Deadline) -> dict[str, Any]:
        raise ToolError("revision_conflict", "stale", current_revision=3)

    tools.rows["memory_delete"] = Tool(TOOLS["memory_delete"], conflict)
    result, changed = call(
        tools,
        "memory_delete",
        {"uri": "memory://workspace/notes/a.md", "expected_revision": 1},
        alice_caller("delete", "write:shared"),
    )
    assert changed is False
    assert result["structuredContent"]["error"] == {
        "code": "revision_conflict",
        "message": "stale",
        "current_revision": 3,
    }


def test_remember_is_bound_to_the_guard_given_at_start_up() -> None:
    store = Store(db=None, cursor_secret=b"s" * 32)  # type: ignore[arg-type]
    calls: list[str] = []

    def guarded(who: Caller, args: Any, deadline: Deadline) -> dict[str, Any]:
        calls.append(args.idempotency_key)
        return {"uri": args.uri, "id": "i", "revision": 1, "merged": True, "replayed": False}

    tools = ToolTable(store, remember=guarded)
    arguments = {"uri": "memory://me/memories/a.md", "fact": "f", "idempotency_key": "key-0001"}
    result = tools.run("memory_remember", alice_caller("write:personal"), arguments, Deadline())
    assert result["merged"] is True and calls == ["key-0001"]


fragments = st.dictionaries(
    st.sampled_from(["uri", "title", "excerpt"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80),
    min_size=1,
)


@pytest.mark.parametrize("modern", [True, False])
@given(
    items=st.lists(fragments, max_size=6), request_id=st.one_of(st.integers(), st.text(max_size=20))
)
def test_wire_sizer_parts_add_up_to_the_exact_response(
    modern: bool, items: list[dict[str, str]], request_id: Any
) -> None:
    """What the budgets sum (empty result + each item + commas) is exactly the size of
    the response the request sends, in both generations."""
    try:
        json.dumps(request_id, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return  # a lone surrogate id: the budget falls back to whole measurement
    request = Request(request_id, "tools/call", {}, MODERN if modern else "2025-06-18", modern, {})
    sizer = WireSizer(request)
    empty = {"hits": [], "truncated": False, "trust": "recorded-data"}
    parts = sizer.size(empty) + sum(sizer.fragment(i) for i in items) + 2 * max(len(items) - 1, 0)
    whole = len(request.encode_result(tool_result({**empty, "hits": items})))
    assert parts == whole


@given(title=st.text(max_size=60), excerpt=st.text(max_size=700))
def test_wire_sizer_text_is_what_an_excerpt_adds(title: str, excerpt: str) -> None:
    """A hit's size is its summary with an empty excerpt plus what the excerpt's
    characters add (how fit_search sizes excerpts cut to another length)."""
    try:
        (title + excerpt).encode("utf-8")
    except UnicodeEncodeError:
        return  # a lone surrogate: the budget falls back to whole measurement
    sizer = WireSizer(Request(1, "tools/call", {}, MODERN, True, {}))
    hit = {"uri": "memory://workspace/notes/a.md", "title": title}
    bare = sizer.fragment({**hit, "excerpt": ""})
    assert bare + sizer.text(excerpt) == sizer.fragment({**hit, "excerpt": excerpt})
