"""Skills as prompts and completions without a database: names, front matter,
arguments, what a typed prefix may be, and the budget fit of protocol results."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_server.domain.addresses import RecordAddress, parse_path
from memory_server.domain.content import check_content, skill_arguments, split_front_matter
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import ToolError
from memory_server.operations.path_completion import could_be_path
from memory_server.operations.skills import prompt_name, skill_address
from memory_server.operations.store import Store
from memory_server.protocol import completions
from memory_server.protocol.budget import fit_leading
from memory_server.protocol.dispatcher import Request
from memory_server.protocol.tools import CallContext

from tests.unit.fakes import alice_caller

SKILL = RecordAddress("workspace", "skills", "deploy/SKILL.md")


def test_prompt_names_round_trip_to_their_skill_file() -> None:
    assert prompt_name("workspace", "release-notes") == "release-notes"
    assert prompt_name("me", "release-notes") == "me/release-notes"
    assert skill_address("release-notes") == RecordAddress(
        "workspace", "skills", "release-notes/SKILL.md"
    )
    assert skill_address("me/ops.v2") == RecordAddress("me", "skills", "ops.v2/SKILL.md")


@pytest.mark.parametrize(
    "name",
    ["", "me/", "a/b", "me/a/b", "..", "me/..", "a b", "x%2Fy", "ümlaut\u0301", "a" * 65, "\x00"],
)
def test_a_name_that_cannot_be_a_skill_is_not_found(name: str) -> None:
    with pytest.raises(ToolError) as caught:
        skill_address(name)
    assert caught.value.code == "not_found"
    assert caught.value.message == "no such record in your view"


def test_front_matter_and_body_split() -> None:
    fields, body = split_front_matter("---\nname: a\ndescription: b\n---\n# A\nstep\n")
    assert fields == {"name": "a", "description": "b"} and body == "# A\nstep\n"
    assert split_front_matter("# no front matter\n") == ({}, "# no front matter\n")
    assert split_front_matter("---\nname: a\n---") == ({"name": "a"}, "")


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ("topic, audience", ["topic", "audience"]),
        ("[topic, 'audience']", ["topic", "audience"]),
        ("", []),
        ("topic, bad name, topic, name, ok_2", ["topic", "ok_2"]),  # lenient read
    ],
)
def test_declared_arguments_are_read_leniently(value: str, names: list[str]) -> None:
    assert skill_arguments({"arguments": value}) == names


@pytest.mark.parametrize(
    "value",
    ["bad name", "topic, topic", "name", ",", "a" * 65, ", ".join(f"a{i}" for i in range(17))],
)
def test_a_skill_declaring_bad_arguments_is_refused_on_write(value: str) -> None:
    content = f"---\nname: deploy\ndescription: Ship\narguments: {value}\n---\n"
    with pytest.raises(ToolError) as caught:
        check_content(SKILL, content)
    assert caught.value.code == "invalid_argument" and "arguments" in caught.value.message


def test_a_skill_declaring_good_arguments_is_accepted() -> None:
    content = "---\nname: deploy\ndescription: Ship\narguments: version, region\n---\nGo.\n"
    assert check_content(SKILL, content) == content
    assert check_content(SKILL, content.replace("version, region", "")) is not None


@pytest.mark.parametrize(
    ("prefix", "possible"),
    [
        ("", True),
        ("projects/al", True),
        ("日本/メモ", True),
        ("a.b_c-d", True),
        ("/abs", False),
        ("a b", False),
        ("a%2F", False),
        ("a\\b", False),
        ("\x00", False),
        ("e\u0301", False),  # not NFC
        ("x" * 257, False),
    ],
)
def test_what_a_typed_path_prefix_may_be(prefix: str, possible: bool) -> None:
    assert could_be_path(prefix) is possible


SEGMENT = st.text(
    st.characters(categories=("L", "Nd")) | st.sampled_from("._-"), min_size=1, max_size=12
)


@given(st.lists(SEGMENT, min_size=1, max_size=4))
def test_a_prefix_of_a_valid_path_is_always_possible(segments: list[str]) -> None:
    try:
        path = parse_path("/".join(segments) + ".md")
    except ToolError:  # a '.' segment, a form that is not NFC, …
        return
    for end in range(len(path) + 1):
        assert could_be_path(path[:end])


def test_fit_leading_sends_as_many_items_as_the_limit_allows() -> None:
    items = ["x" * 100] * 50

    def size(n: int) -> int:
        return len(json.dumps({"values": items[:n]}))

    sent = fit_leading(len(items), size, limit=1000)
    assert size(sent) <= 1000 < size(sent + 1)
    assert fit_leading(0, size) == 0
    assert fit_leading(3, size, limit=10) == 0  # not even one fits
    assert fit_leading(50, size) == 50


def complete(params: dict[str, Any]) -> dict[str, Any]:
    # No database: any completion that reached it would fail loudly.
    store = Store(db=None, cursor_secret=b"s" * 32)  # type: ignore[arg-type]
    request = Request(1, "completion/complete", params, "2025-11-25", False, {})
    return completions.complete(store, request, CallContext(alice_caller("read"), Deadline()))


@pytest.mark.parametrize(
    ("ref", "argument", "values"),
    [
        ({"type": "ref/resource", "uri": "memory://me/{kind}/{+path}"}, ("kind", "s"), ["skills"]),
        ({"type": "ref/resource", "uri": "memory://workspace/{kind}/{+path}"}, ("kind", ""), None),
        ({"type": "ref/resource", "uri": "memory://record/{id}"}, ("id", "0"), []),
        ({"type": "ref/resource", "uri": "memory://me/{kind}/{+path}"}, ("other", ""), []),
        ({"type": "ref/resource", "uri": "test://template/{id}/data"}, ("id", ""), []),
        ({"type": "ref/prompt", "name": "release-notes"}, ("topic", "a"), []),
    ],
)
def test_completions_answered_without_a_query(
    ref: dict[str, str], argument: tuple[str, str], values: list[str] | None
) -> None:
    result = complete({"ref": ref, "argument": {"name": argument[0], "value": argument[1]}})
    expected = ["memories", "skills", "notes"] if values is None else values
    assert result == {"completion": {"values": expected, "hasMore": False}}


def test_a_path_completion_of_an_unknown_kind_is_empty() -> None:
    ref = {"type": "ref/resource", "uri": "memory://me/{kind}/{+path}"}
    result = complete(
        {
            "ref": ref,
            "argument": {"name": "path", "value": ""},
            "context": {"arguments": {"kind": "x"}},
        }
    )
    assert result["completion"]["values"] == []
