"""Tool argument models: ranges, defaults, no unknown arguments, errors naming the rule."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_server.domain.arguments import (
    BriefArgs,
    DeleteArgs,
    ListArgs,
    MoveArgs,
    ReadArgs,
    RememberArgs,
    ScopesArgs,
    SearchArgs,
    WriteArgs,
    _Args,
    integer_ranges,
    parse_args,
)
from memory_server.domain.errors import ToolError
from pydantic import Field

URI = "memory://workspace/notes/a.md"
KEY = "key-0001"

# The smallest valid arguments of each tool.
MINIMAL: dict[type[_Args], dict[str, Any]] = {
    ListArgs: {},
    ReadArgs: {"uri": URI},
    SearchArgs: {"query": "deploy"},
    WriteArgs: {"uri": URI, "content": "", "expected_revision": 0},
    DeleteArgs: {"uri": URI, "expected_revision": 1},
    RememberArgs: {"uri": URI, "fact": "f", "idempotency_key": KEY},
    MoveArgs: {"uri": URI, "new_uri": "memory://workspace/notes/b.md", "expected_revision": 1},
}


def rejected(model: type[_Args], raw: Any) -> str:
    with pytest.raises(ToolError) as caught:
        parse_args(model, raw)
    assert caught.value.code == "invalid_argument"
    return caught.value.message


def test_defaults() -> None:
    assert parse_args(ListArgs, {}) == ListArgs(prefix=None, limit=20, cursor=None)
    read = parse_args(ReadArgs, {"uri": URI})
    assert (read.offset, read.max_bytes, read.history) == (0, 16384, False)
    search = parse_args(SearchArgs, {"query": "q"})
    assert (search.namespace, search.kinds, search.limit) == ("all", ["memories", "notes"], 8)
    write = parse_args(WriteArgs, MINIMAL[WriteArgs])
    assert (write.source, write.context) == (None, None)
    remember = parse_args(RememberArgs, MINIMAL[RememberArgs])
    assert (remember.source, remember.context) == (None, None)


def test_search_kinds_default_is_a_fresh_list_without_skills() -> None:
    first, second = parse_args(SearchArgs, {"query": "a"}), parse_args(SearchArgs, {"query": "b"})
    assert "skills" not in first.kinds
    first.kinds.append("skills")
    assert second.kinds == ["memories", "notes"]


@pytest.mark.parametrize("model", list(MINIMAL))
def test_unknown_arguments_are_rejected_by_name(model: type[_Args]) -> None:
    message = rejected(model, {**MINIMAL[model], "surprise": 1})
    assert message == "surprise: Extra inputs are not permitted"


@pytest.mark.parametrize("model", list(MINIMAL))
def test_schema_forbids_additional_properties(model: type[_Args]) -> None:
    schema = model.model_json_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(model.model_fields)


@pytest.mark.parametrize("model", [m for m in MINIMAL if MINIMAL[m]])
def test_every_required_argument_is_named_when_missing(model: type[_Args]) -> None:
    for name in MINIMAL[model]:
        if model.model_fields[name].is_required():
            raw = {k: v for k, v in MINIMAL[model].items() if k != name}
            assert rejected(model, raw) == f"{name}: Field required"


@pytest.mark.parametrize("raw", [None, [], "{}", 3, [("uri", URI)]])
def test_arguments_must_be_an_object(raw: Any) -> None:
    assert rejected(ReadArgs, raw) == "arguments must be a JSON object"


def test_models_are_frozen() -> None:
    args = parse_args(ListArgs, {})
    with pytest.raises(ValueError, match="frozen"):
        args.limit = 5


# Every integer argument of every tool, and its inclusive range: product limits
# (memory_server.domain.limits) or the SQL integer a revision is stored as.
INTEGERS = [
    (ListArgs, "limit", 1, 50),
    (ReadArgs, "offset", 0, 65536),
    (ReadArgs, "max_bytes", 1, 65536),
    (SearchArgs, "limit", 1, 8),
    (WriteArgs, "expected_revision", 0, 2**31 - 1),
    (DeleteArgs, "expected_revision", 1, 2**31 - 1),
    (MoveArgs, "expected_revision", 1, 2**31 - 1),
    (BriefArgs, "max_bytes", 1024, 16384),
]
MODELS = [*MINIMAL, BriefArgs, ScopesArgs]
MINIMAL_OF = {**MINIMAL, BriefArgs: {}, ScopesArgs: {}}


def test_every_integer_argument_is_listed_with_its_range() -> None:
    assert {(m, n): (lo, hi) for m, n, lo, hi in INTEGERS} == {
        (m, n): bounds for m in MODELS for n, bounds in integer_ranges(m).items()
    }


@pytest.mark.parametrize(("model", "name", "low", "high"), INTEGERS)
def test_integer_ranges_are_inclusive(model: type[_Args], name: str, low: int, high: int) -> None:
    for value in (low, high):
        assert getattr(parse_args(model, {**MINIMAL_OF[model], name: value}), name) == value
    wanted = f"{name}: Input should be an integer from {low} to {high}"
    for value in (low - 1, high + 1, -1, 2**31, 2**63, 2**63 - 1, 2**64, -(2**63), 10**30):
        if not low <= value <= high:
            assert rejected(model, {**MINIMAL_OF[model], name: value}) == wanted


@pytest.mark.parametrize(("model", "name", "low", "high"), INTEGERS)
def test_the_published_schema_carries_each_range(
    model: type[_Args], name: str, low: int, high: int
) -> None:
    schema = model.model_json_schema()["properties"][name]
    assert (schema["type"], schema["minimum"], schema["maximum"]) == ("integer", low, high)


@pytest.mark.parametrize(("model", "name", "low", "high"), INTEGERS)
@given(value=st.integers())
def test_any_integer_is_taken_exactly_when_in_range(
    model: type[_Args], name: str, low: int, high: int, value: int
) -> None:
    """Over all integers (hypothesis reaches far past 2**64): in range, the value
    itself; outside, invalid_argument naming the argument and its range."""
    raw = {**MINIMAL_OF[model], name: value}
    if low <= value <= high:
        assert getattr(parse_args(model, raw), name) == value
    else:
        assert rejected(model, raw) == f"{name}: Input should be an integer from {low} to {high}"


def test_an_integer_argument_without_both_bounds_is_refused_at_definition() -> None:
    with pytest.raises(TypeError, match="ge= and le="):

        class Unbounded(_Args):
            count: int = Field(0, ge=0)


@pytest.mark.parametrize("value", ["5", 5.0, True, None, [5]])
def test_integers_are_strict(value: Any) -> None:
    """No coercion: "5", 5.0 and true are not the integer 5."""
    assert rejected(ListArgs, {"limit": value}) == "limit: Input should be an integer from 1 to 50"


@pytest.mark.parametrize("value", [1, "true", "yes", None])
def test_history_is_a_strict_boolean(value: Any) -> None:
    assert rejected(ReadArgs, {"uri": URI, "history": value}) == (
        "history: Input should be a valid boolean"
    )


@pytest.mark.parametrize(
    ("model", "name", "low", "high"),
    [
        (ReadArgs, "uri", 1, 1024),
        (ListArgs, "prefix", 1, 1024),
        (MoveArgs, "new_uri", 1, 1024),
        (SearchArgs, "query", 1, 512),
        (RememberArgs, "fact", 1, 4096),
        (WriteArgs, "source", 1, 256),
        (RememberArgs, "source", 1, 256),
    ],
)
def test_string_lengths(model: type[_Args], name: str, low: int, high: int) -> None:
    """Lengths count characters here; the byte rules are the operations' (see records)."""
    for value in ("x" * low, "é" * high):
        assert getattr(parse_args(model, {**MINIMAL[model], name: value}), name) == value
    short = rejected(model, {**MINIMAL[model], name: "x" * (low - 1)})
    assert short == f"{name}: String should have at least {low} character"
    long = rejected(model, {**MINIMAL[model], name: "x" * (high + 1)})
    assert long == f"{name}: String should have at most {high} characters"


@pytest.mark.parametrize(
    ("model", "name", "high"),
    [
        (ListArgs, "cursor", 2048),
        (WriteArgs, "content", 65536),
        (WriteArgs, "context", 512),
        (RememberArgs, "context", 512),
    ],
)
def test_strings_that_may_be_empty(model: type[_Args], name: str, high: int) -> None:
    assert getattr(parse_args(model, {**MINIMAL[model], name: ""}), name) == ""
    assert getattr(parse_args(model, {**MINIMAL[model], name: "x" * high}), name) == "x" * high
    long = rejected(model, {**MINIMAL[model], name: "x" * (high + 1)})
    assert long == f"{name}: String should have at most {high} characters"


def test_content_limit_counts_characters_not_bytes() -> None:
    """65536 two-byte characters pass the model; ``check_content`` then refuses them as
    too large (tests/unit/test_records.py), so the byte limit has one owner."""
    write = parse_args(WriteArgs, {**MINIMAL[WriteArgs], "content": "é" * 65536})
    assert len(write.content.encode()) == 131072


@pytest.mark.parametrize("value", [0, b"bytes", ["a"]])
def test_strings_are_strict(value: Any) -> None:
    assert rejected(SearchArgs, {"query": value}) == "query: Input should be a valid string"


def test_search_enumerations() -> None:
    for namespace in ("personal", "workspace", "all"):
        assert parse_args(SearchArgs, {"query": "q", "namespace": namespace}).namespace == namespace
    message = rejected(SearchArgs, {"query": "q", "namespace": "me"})
    assert message == "namespace: Input should be 'personal', 'workspace' or 'all'"
    kinds = ["skills", "notes", "memories"]
    assert parse_args(SearchArgs, {"query": "q", "kinds": kinds}).kinds == kinds
    message = rejected(SearchArgs, {"query": "q", "kinds": ["notes", "files"]})
    assert message == "kinds.1: Input should be 'memories', 'skills' or 'notes'"
    message = rejected(SearchArgs, {"query": "q", "kinds": []})
    assert message.startswith("kinds: List should have at least 1 item")
    message = rejected(SearchArgs, {"query": "q", "kinds": ["notes"] * 4})
    assert message.startswith("kinds: List should have at most 3 items")
    assert rejected(SearchArgs, {"query": "q", "kinds": "notes"}) == (
        "kinds: Input should be a valid list"
    )


@given(st.from_regex(r"[A-Za-z0-9_.:-]{8,128}", fullmatch=True))
def test_idempotency_keys_of_the_allowed_charset_pass(key: str) -> None:
    assert parse_args(RememberArgs, {**MINIMAL[RememberArgs], "idempotency_key": key})


@pytest.mark.parametrize(
    "key",
    [
        "short7!",
        "1234567",
        "x" * 129,
        "has space",
        "slash/in/key",
        "ünïcödé-key",
        "tab\tin-key",
        "newline-at-end\n",
        "",
    ],
)
def test_idempotency_keys_outside_the_charset_are_rejected(key: str) -> None:
    message = rejected(RememberArgs, {**MINIMAL[RememberArgs], "idempotency_key": key})
    assert message == "idempotency_key: String should match pattern '^[A-Za-z0-9_.:-]{8,128}$'"


def test_idempotency_key_bounds_are_inclusive() -> None:
    for key in ("a" * 8, "Z" * 128, "a.b:c_d-", "0" * 8):
        args = parse_args(RememberArgs, {**MINIMAL[RememberArgs], "idempotency_key": key})
        assert args.idempotency_key == key


def test_at_most_five_problems_are_reported_in_order() -> None:
    raw = {"limit": 0, "cursor": 7, **{f"extra{i}": i for i in range(6)}}
    problems = rejected(ListArgs, raw).split("; ")
    assert len(problems) == 5
    assert problems[0] == "limit: Input should be an integer from 1 to 50"
    assert problems[1] == "cursor: Input should be a valid string"
    assert problems[2:] == [f"extra{i}: Extra inputs are not permitted" for i in range(3)]


def test_errors_never_echo_the_input() -> None:
    secret = "do-not-echo-" + "z" * 600
    message = rejected(SearchArgs, {"query": secret})
    assert secret not in message and "z" * 20 not in message
