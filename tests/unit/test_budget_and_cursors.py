"""Byte budgets, UTF-8-safe cuts, grant intersection and signed cursors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_server.domain.cursors import CURSOR_TTL_S, decode_cursor, encode_cursor
from memory_server.domain.errors import ToolError
from memory_server.domain.grants import effective_grants
from memory_server.domain.results import Hit, ListPage, SearchResult
from memory_server.domain.utf8 import utf8_prefix, utf8_window
from memory_server.protocol.budget import (
    ConservativeSizer,
    fit_list,
    fit_search,
    jsonrpc_tool_result_size,
    largest_fitting,
)


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


class CountingSizer(ConservativeSizer):
    """The conservative sizer, counting whole-response serializations."""

    def __init__(self) -> None:
        self.whole = 0

    def size(self, structured: dict) -> int:  # type: ignore[type-arg]
        self.whole += 1
        return super().size(structured)


def _found(excerpts: list[str], title: str = "t" * 200) -> SearchResult:
    return SearchResult(
        [
            Hit({"uri": f"memory://workspace/notes/{i}.md", "title": title}, excerpt)
            for i, excerpt in enumerate(excerpts)
        ]
    )


def test_fit_search_shrinks_then_drops() -> None:
    result = fit_search(_found(["🙂" * 200] * 8), ConservativeSizer())
    assert jsonrpc_tool_result_size(result) <= 8192 and result["truncated"] is True
    assert all(len(h["excerpt"].encode()) <= 500 for h in result["hits"])
    assert result["trust"] == "recorded-data"
    small = fit_search(_found(["short"]), ConservativeSizer())
    assert small["truncated"] is False and small["hits"][0]["excerpt"] == "short"


def test_shrinking_eight_full_excerpts_sizes_parts_not_whole_responses() -> None:
    """The usual truncation (8 hits with 500-byte excerpts) is sized from its parts:
    the whole response is serialized a few times (the empty result per probe state
    and the final check), and the common cap is the largest that fits."""
    excerpt = 'the deployment pipeline "quoted" ünïcödé ' * 20
    sizer = CountingSizer()
    result = fit_search(_found([excerpt] * 8, "deployment notes"), sizer)
    assert result["truncated"] is True and len(result["hits"]) == 8
    assert jsonrpc_tool_result_size(result) <= 8192
    cap = max(len(h["excerpt"].encode()) for h in result["hits"])
    longer = {
        **result,
        "hits": [
            {**h, "excerpt": excerpt.encode()[: cap + 4].decode(errors="ignore")}
            for h in result["hits"]
        ],
    }
    assert jsonrpc_tool_result_size(longer) > 8192


@given(
    st.lists(st.text(max_size=700), min_size=1, max_size=8),
    st.text(max_size=60),
)
def test_additive_size_equals_the_whole_serialization(excerpts: list[str], title: str) -> None:
    """Summing the parts gives exactly the bytes of the whole response."""
    try:
        for text in [*excerpts, title]:
            text.encode("utf-8")
    except UnicodeEncodeError:
        return
    sizer = ConservativeSizer()
    hits = [
        {"uri": "memory://workspace/notes/a.md", "title": title, "excerpt": e} for e in excerpts
    ]
    empty = {"hits": [], "truncated": True, "trust": "recorded-data"}
    parts = sizer.size(empty) + sum(sizer.fragment(h) for h in hits) + 2 * (len(hits) - 1)
    assert parts == sizer.size({**empty, "hits": hits})


@given(st.text(max_size=60), st.text(max_size=700))
def test_an_excerpt_adds_what_its_characters_add(title: str, excerpt: str) -> None:
    """fit_search sizes a hit as its summary with an empty excerpt plus the excerpt's
    characters (``Sizer.text``): exactly the hit's own size."""
    try:
        (title + excerpt).encode("utf-8")
    except UnicodeEncodeError:
        return  # a lone surrogate: the budget falls back to whole measurement
    sizer = ConservativeSizer()
    hit = {"uri": "memory://workspace/notes/a.md", "title": title}
    bare = sizer.fragment({**hit, "excerpt": ""})
    assert bare + sizer.text(excerpt) == sizer.fragment({**hit, "excerpt": excerpt})


def test_list_sends_what_fits_and_the_cursor_after_it() -> None:
    items = [{"uri": f"memory://workspace/notes/{'n' * 150}{i}.md"} for i in range(50)]
    page = ListPage(
        items=items,
        positions=[[str(i)] for i in range(50)],
        more=False,
        cursor_for=lambda position: f"after-{position[0]}",
    )
    result = fit_list(page, ConservativeSizer())
    sent = len(result["items"])
    assert 0 < sent < 50 and result["items"] == items[:sent]
    assert result["next_cursor"] == f"after-{sent - 1}"
    assert jsonrpc_tool_result_size(result) <= 8192
    one_more = {**result, "items": items[: sent + 1], "next_cursor": f"after-{sent}"}
    assert jsonrpc_tool_result_size(one_more) > 8192
    whole = fit_list(
        ListPage(items[:3], [["0"], ["1"], ["2"]], False, lambda p: "x"), ConservativeSizer()
    )
    assert whole["next_cursor"] is None and len(whole["items"]) == 3


def test_effective_grants_are_the_intersection() -> None:
    assert effective_grants(["memory/read"], ["read", "write:shared"]) == {"read"}
    assert effective_grants(["memory/read", "memory/write.shared", "memory/admin"], ["read"]) == {
        "read"
    }
    assert effective_grants(["openid", "memory/admin"], ["delete", "admin"]) == {"admin"}
    assert effective_grants(["memory/read", "memory/delete"], ["read", "delete"]) == {
        "read",
        "delete",
    }


def test_writing_needs_reading() -> None:
    """A write or delete grant without read is dropped (the database would refuse the
    row a write returns, and a change names the revision it read)."""
    everything = ["read", "write:personal", "write:shared", "delete", "admin"]
    assert effective_grants(["memory/write.shared"], everything) == set()
    assert effective_grants(["memory/write.personal", "memory/delete"], everything) == set()
    assert effective_grants(["memory/write.shared", "memory/admin"], everything) == {"admin"}
    assert (
        effective_grants(["memory/read", "memory/write.shared"], ["write:shared", "admin"]) == set()
    )  # the membership lacks read


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
