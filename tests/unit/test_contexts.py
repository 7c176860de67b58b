"""Listening contexts: exact ancestor sets, canonical percent-encoding, no forgery."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_server.contexts import encode_id, parse_context, parse_target_context
from memory_server.errors import ToolError

ids = st.text(
    st.characters(blacklist_categories=["Cs", "Cc", "Cf", "Co", "Cn"]), min_size=1, max_size=20
)


@given(ids, ids)
def test_any_ids_round_trip_and_never_forge_separators(channel: str, thread: str) -> None:
    import unicodedata

    channel, thread = unicodedata.normalize("NFC", channel), unicodedata.normalize("NFC", thread)
    if len(channel.encode()) > 128 or len(thread.encode()) > 128:
        return
    key = f"channel:{encode_id(channel)}/thread:{encode_id(thread)}"
    parsed = parse_context(key)
    assert (parsed.kind, parsed.channel, parsed.thread, parsed.key) == (
        "thread",
        channel,
        thread,
        key,
    )
    assert parsed.ancestors == (key, f"channel:{encode_id(channel)}", "workspace")
    # The channel alone is exactly one context whose id is the raw text.
    alone = parse_context(f"channel:{encode_id(channel)}")
    assert alone.ancestors == (alone.key, "workspace") and alone.channel == channel
    dm = parse_context(f"dm:{encode_id(channel)}")
    assert dm.ancestors == (dm.key, "workspace")


@given(st.text(max_size=60))
def test_accepted_contexts_are_canonical(raw: str) -> None:
    try:
        parsed = parse_context(raw)
    except ToolError as exc:
        assert exc.code == "invalid_argument"
        return
    assert parsed.key == raw or (raw in ("", "workspace") and parsed.key == "workspace")
    assert parsed.ancestors[-1] == "workspace"
    for ancestor in parsed.ancestors:
        assert parse_context(ancestor).key == ancestor


@pytest.mark.parametrize(
    "bad",
    [
        "channel:",
        "channel:a b",
        "channel:%2f",
        "channel:%41",
        "channel:a/thread:",
        "dm:",
        "channel:a/dm:b",
        "thread:x",
        "dm:a/thread:b",
        "channel:a:b",
        "Channel:a",
        "channel:%FF",
    ],
)
def test_non_canonical_contexts_are_rejected(bad: str) -> None:
    with pytest.raises(ToolError) as caught:
        parse_context(bad)
    assert caught.value.code == "invalid_argument"


def test_ancestor_sets_are_exact_not_prefixes() -> None:
    assert "channel:gen" not in parse_context("channel:general").ancestors
    assert parse_context("channel:general/thread:1").ancestors == (
        "channel:general/thread:1",
        "channel:general",
        "workspace",
    )
    listening = parse_context("channel:eng/thread:9")
    assert parse_target_context("workspace", listening) == "workspace"
    assert parse_target_context("channel:eng", listening) == "channel:eng"
    assert parse_target_context(None, listening) == "channel:eng/thread:9"
    with pytest.raises(ToolError):
        parse_target_context("channel:en", listening)
