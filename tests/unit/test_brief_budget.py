"""The briefing's byte budget (memory_server.protocol.budget.brief_within): whole
when it fits; else contents cut at character boundaries to one common length, then
items dropped from the end; never over the budget."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memory_server.domain.limits import MIN_EXCERPT_BYTES
from memory_server.domain.results import Brief, PinnedRecord
from memory_server.domain.utf8 import utf8_prefix
from memory_server.protocol.budget import brief_within


def size(result: dict[str, Any]) -> int:
    """A stand-in for the wire: the result, once as JSON and once escaped in text."""
    text = json.dumps(result, ensure_ascii=False)
    return len(text.encode()) + len(json.dumps(text, ensure_ascii=False).encode()) + 120


def item(n: int, kind: str = "memories") -> dict[str, Any]:
    return {
        "uri": f"memory://workspace/{kind}/r{n}.md",
        "id": f"00000000-0000-0000-0000-{n:012d}",
        "kind": kind,
        "title": f"Record {n}",
        "context": "workspace",
        "revision": 1,
        "updated_at": "2026-12-03T10:00:00.000Z",
    }


def brief(contents: list[str], recent: int = 5, skills: int = 3, max_bytes: int = 4096) -> Brief:
    return Brief(
        pinned=[PinnedRecord(item(i), text, False) for i, text in enumerate(contents)],
        recent=[{**item(100 + i, "notes"), "updated_by": "alice"} for i in range(recent)],
        skills=[
            {"uri": f"memory://workspace/skills/s{i}/SKILL.md", "name": f"s{i}", "description": "d"}
            for i in range(skills)
        ],
        max_bytes=max_bytes,
    )


def floor_of(whole: Brief) -> list[str]:
    return [p.content for p in whole.pinned]


def test_a_briefing_that_fits_is_sent_whole() -> None:
    whole = brief(["short fact"], max_bytes=16384)
    sent = brief_within(whole, size)
    assert sent["truncated"] is False and sent["pinned"][0]["truncated"] is False
    assert len(sent["recent"]) == 5 and len(sent["skills"]) == 3
    assert sent["trust"] == "recorded-data"


@pytest.mark.parametrize("limit", [1024, 2048, 4096, 16384])
def test_contents_are_cut_first_then_items_dropped_from_the_end(limit: int) -> None:
    big = brief(["é" * 3000, "日本" * 1000], recent=20, skills=20, max_bytes=limit)
    sent = brief_within(big, size)
    assert size(sent) <= limit and sent["truncated"] is True
    contents = [p["content"] for p in sent["pinned"]]
    assert all(p["truncated"] for p in sent["pinned"])
    if len(sent["skills"]) < 20 or len(sent["recent"]) < 20:
        # Items were dropped, from the end (no skill while a recent change is
        # missing), only because the floor of every content would not fit with them.
        assert not sent["skills"] or len(sent["recent"]) == 20
        floor = brief(["é" * 3000, "日本" * 1000], 20, 20, limit)
        every = brief_within(
            brief([utf8_prefix(c, MIN_EXCERPT_BYTES)[0] for c in floor_of(floor)], 20, 20, 10**6),
            size,
        )
        assert size(every) > limit
    else:  # the contents were cut to the largest common length that fits
        longer = brief_within(brief(["é" * 3000, "日本" * 1000], 20, 20, limit + 200), size)
        assert sum(len(p["content"]) for p in longer["pinned"]) > sum(map(len, contents))


def test_the_order_of_dropping_is_skills_then_recent_then_pinned() -> None:
    tiny = brief(["x" * 40] * 6, recent=20, skills=20, max_bytes=1024)
    sent = brief_within(tiny, size)
    assert sent["skills"] == [] and len(sent["pinned"]) >= 1
    assert size(sent) <= 1024


@settings(max_examples=60, deadline=None)
@given(
    contents=st.lists(st.text(min_size=0, max_size=1500), max_size=6),
    recent=st.integers(0, 20),
    skills=st.integers(0, 20),
    limit=st.integers(1024, 16384),
)
def test_never_over_the_budget_and_never_a_broken_character(
    contents: list[str], recent: int, skills: int, limit: int
) -> None:
    sent = brief_within(brief(contents, recent, skills, limit), size)
    assert size(sent) <= limit
    for pinned, original in zip(sent["pinned"], contents, strict=False):
        assert original.startswith(pinned["content"])  # a prefix, whole characters
        assert pinned["truncated"] is (pinned["content"] != original)
