"""Byte budgets, UTF-8-safe cuts, grant intersection and signed cursors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_server.budget import (
    fit_search_hits,
    jsonrpc_tool_result_size,
    largest_fitting,
    utf8_prefix,
    utf8_window,
)
from memory_server.cursors import CURSOR_TTL_S, decode_cursor, encode_cursor
from memory_server.errors import ToolError
from memory_server.grants import effective_grants


@given(st.text(), st.integers(min_value=0, max_value=300))
def test_utf8_prefix_is_a_valid_prefix_within_budget(text: str, limit: int) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return
    cut, truncated = utf8_prefix(text, limit)
    assert text.startswith(cut) and len(cut.encode()) <= limit
    assert truncated == (cut != text)
    if truncated:  # maximal: the next character would not have fitted
        assert len(text[: len(cut) + 1].encode()) > limit


@given(st.text(min_size=1), st.integers(min_value=4, max_value=50))
def test_windows_reassemble_the_text(text: str, size: int) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return
    pieces, offset = [], 0
    while offset is not None:
        chunk, offset = utf8_window(text, offset, size)
        assert len(chunk.encode()) <= size
        pieces.append(chunk)
    assert "".join(pieces) == text


def test_fit_search_hits_shrinks_then_drops() -> None:
    hits = [{"uri": f"memory://workspace/notes/{i}.md", "title": "t" * 200} for i in range(8)]
    excerpts = ["🙂" * 200] * 8
    result = fit_search_hits(
        hits, excerpts, lambda h, t: {"hits": h, "truncated": t}, jsonrpc_tool_result_size
    )
    assert jsonrpc_tool_result_size(result) <= 8192 and result["truncated"] is True
    assert all(len(h["excerpt"].encode()) <= 500 for h in result["hits"])
    small = fit_search_hits(
        hits[:1], ["short"], lambda h, t: {"hits": h, "truncated": t}, jsonrpc_tool_result_size
    )
    assert small["truncated"] is False and small["hits"][0]["excerpt"] == "short"


def test_shrinking_eight_full_excerpts_serializes_a_few_times() -> None:
    """The usual truncation (8 hits with 500-byte excerpts) finds its common cap in a
    handful of serializations, and the cap is the largest that fits."""
    hits = [
        {"uri": f"memory://workspace/notes/{i}.md", "title": "deployment notes"} for i in range(8)
    ]
    excerpts = ['the deployment pipeline "quoted" ünïcödé ' * 20] * 8
    sized: list[int] = []

    def sizer(result: dict) -> int:  # type: ignore[type-arg]
        size = jsonrpc_tool_result_size(result)
        sized.append(size)
        return size

    make = lambda h, t: {"hits": h, "truncated": t}  # noqa: E731
    result = fit_search_hits(hits, excerpts, make, sizer)
    assert result["truncated"] is True and len(result["hits"]) == 8
    assert jsonrpc_tool_result_size(result) <= 8192
    assert len(sized) <= 6, sized
    cap = max(len(h["excerpt"].encode()) for h in result["hits"])
    longer = [
        {**h, "excerpt": excerpts[0].encode()[: cap + 4].decode(errors="ignore")}
        for h in result["hits"]
    ]
    assert jsonrpc_tool_result_size(make(longer, True)) > 8192


def test_effective_grants_are_the_intersection() -> None:
    assert effective_grants(["memory/read"], ["read", "write:shared"]) == {"read"}
    assert effective_grants(["memory/read", "memory/write.shared", "memory/admin"], ["read"]) == {
        "read"
    }
    assert effective_grants(["openid", "memory/delete"], ["delete", "admin"]) == {"delete"}


def test_cursors_are_bound_signed_and_expire() -> None:
    secret = b"s" * 32
    binding = {"principal": "a", "workspace": "w", "context": "workspace", "grants": ["read"]}
    cursor = encode_cursor(secret, binding, ["notes", "a.md"], now=1000)
    assert decode_cursor(secret, cursor, binding, now=1001) == ["notes", "a.md"]
    for other in (
        {**binding, "principal": "b"},
        {**binding, "context": "dm:x"},
        {**binding, "grants": ["read", "delete"]},
        {**binding, "workspace": "w2"},
    ):
        with pytest.raises(ToolError, match="issued for another"):
            decode_cursor(secret, cursor, other, now=1001)
    with pytest.raises(ToolError, match="expired"):
        decode_cursor(secret, cursor, binding, now=1000 + CURSOR_TTL_S + 1)
    tampered = cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")
    for bad in (tampered, "garbage", "", "a.b.c", None, 5):
        with pytest.raises(ToolError, match="not valid"):
            decode_cursor(secret, bad, binding, now=1001)
    with pytest.raises(ToolError):
        decode_cursor(b"k" * 32, cursor, binding, now=1001)


@given(
    steps=st.lists(st.integers(min_value=0, max_value=300), min_size=1, max_size=60),
    start=st.integers(min_value=0, max_value=5000),
    limit=st.integers(min_value=0, max_value=12000),
)
def test_largest_fitting_is_the_largest_that_fits(steps: list[int], start: int, limit: int) -> None:
    """Against brute force, for any size that grows with n (plateaus and jumps included)."""
    sizes = [start + sum(steps[: i + 1]) for i in range(len(steps))]
    calls: list[int] = []

    def size_of(n: int) -> int:
        calls.append(n)
        return sizes[n]

    fitting = [n for n, size in enumerate(sizes) if size <= limit]
    assert largest_fitting(0, len(sizes) - 1, size_of, limit) == (max(fitting) if fitting else None)
    assert len(calls) <= len(sizes) + 2
