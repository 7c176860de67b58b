"""Listening contexts: exact ancestor sets, canonical percent-encoding, no forgery."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_server.domain.contexts import encode_id, gate_key, parse_context, parse_target_context
from memory_server.domain.errors import ToolError

from tests.unit.fakes import refusal_message

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


# -- each rule of an id, by name -----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("channel:%c3%a9", "must be percent-encoded UTF-8"),  # lowercase hex
        ("channel:%C3%A", "must be percent-encoded UTF-8"),  # a cut escape
        ("channel:%C0%AF", "not valid UTF-8 once decoded"),  # an overlong '/'
        ("channel:%ED%A0%80", "not valid UTF-8 once decoded"),  # an encoded surrogate
        ("channel:%7E", "not in canonical percent-encoding"),  # '~' must be bare
        ("channel:%41", "not in canonical percent-encoding"),
        ("dm:%07", "may not contain control or invisible characters"),
        ("channel:a%E2%80%8Bb", "may not contain control or invisible characters"),  # ZWSP
        ("channel:e%CC%81", "must be in Unicode NFC form"),
        ("channel:" + "a" * 129, "longer than 128 bytes"),
        ("channel:" + "%C3%A9" * 65, "longer than 128 bytes"),
        ("channel:a/thread:b/thread:c", "thread id must be percent-encoded"),
        ("channel:a/x", "below a channel"),
        ("dm:", "dm id may not be empty"),
        ("channel:a/thread:", "thread id may not be empty"),
        ("personal", "must be empty, 'workspace'"),
    ],
)
def test_each_rule_is_named(value: str, rule: str) -> None:
    message = refusal_message(parse_context, value)
    assert rule in message, message


def test_id_length_counts_decoded_bytes_inclusively() -> None:
    assert parse_context("channel:" + "a" * 128).channel == "a" * 128
    assert parse_context("dm:" + "%C3%A9" * 64).dm == "é" * 64


def test_absent_and_empty_mean_the_workspace() -> None:
    for value in (None, "", "workspace"):
        parsed = parse_context(value)
        assert (parsed.key, parsed.kind, parsed.ancestors) == (
            "workspace",
            "workspace",
            ("workspace",),
        )
        assert parsed.channel_key is None
    with pytest.raises(ToolError, match="context must be a string"):
        parse_context(5)  # type: ignore[arg-type]


def test_decoded_ids_and_channel_keys() -> None:
    thread = parse_context("channel:caf%C3%A9/thread:1.5")
    assert (thread.kind, thread.channel, thread.thread, thread.dm) == (
        "thread",
        "café",
        "1.5",
        None,
    )
    assert thread.channel_key == "channel:caf%C3%A9"
    dm = parse_context("dm:U%2F1")
    assert (dm.kind, dm.dm, dm.channel, dm.channel_key) == ("dm", "U/1", None, None)
    assert parse_context("channel:a~b").channel == "a~b"


def test_encode_id_leaves_only_unreserved_characters_bare() -> None:
    assert encode_id("a-b._~Z9") == "a-b._~Z9"
    assert encode_id("a/b:c d%") == "a%2Fb%3Ac%20d%25"
    assert encode_id("é") == "%C3%A9"


def test_target_contexts() -> None:
    channel = parse_context("channel:eng")
    assert parse_target_context(None, channel) == "channel:eng"
    assert parse_target_context("", channel) == "workspace"
    workspace = parse_context(None)
    for below in ("channel:eng", "dm:x"):
        with pytest.raises(ToolError, match="listening context or one of its ancestors"):
            parse_target_context(below, workspace)
    with pytest.raises(ToolError, match="listening context or one of its ancestors"):
        parse_target_context("channel:eng/thread:1", channel)  # a child is not an ancestor
    with pytest.raises(ToolError, match="must be empty, 'workspace'"):
        parse_target_context("bogus", channel)


def test_the_registered_context_that_gates_a_listening_context() -> None:
    """One rule, for caller resolution and the import's target check alike."""
    assert gate_key(parse_context(None)) is None
    assert gate_key(parse_context("channel:eng")) == "channel:eng"
    assert gate_key(parse_context("channel:eng/thread:t1")) == "channel:eng"
    assert gate_key(parse_context("dm:alice-bot")) == "dm:alice-bot"
