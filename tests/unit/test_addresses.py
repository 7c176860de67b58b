"""Address parsing: canonical forms round-trip, nothing accepted escapes its namespace."""

from __future__ import annotations

import unicodedata
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memory_server.addresses import (
    IdAddress,
    RecordAddress,
    RevisionAddress,
    parse_address,
    parse_path,
    parse_prefix,
)
from memory_server.errors import ToolError

segment_chars = st.characters(categories=["Lu", "Ll", "Lo", "Nd"]) | st.sampled_from("._-")
segments = st.text(segment_chars, min_size=1, max_size=12).filter(lambda s: s not in (".", ".."))
paths = (
    st.builds(
        lambda folders, stem: "/".join([*folders, f"{stem}.md"]),
        st.lists(segments, max_size=4),
        st.text(st.characters(categories=["Lu", "Ll", "Nd"]), min_size=1, max_size=10),
    )
    .map(lambda p: unicodedata.normalize("NFC", p))
    .filter(lambda p: len(p.encode()) <= 256)
)


@given(st.sampled_from(["me", "workspace"]), st.sampled_from(["memories", "notes"]), paths)
def test_canonical_addresses_round_trip(namespace: str, kind: str, path: str) -> None:
    try:
        parse_path(path)
    except ToolError:
        return  # generated an invalid segment (e.g. a segment that NFC changed); fine
    uri = f"memory://{namespace}/{kind}/{path}"
    address = parse_address(uri)
    assert isinstance(address, RecordAddress)
    assert address.uri == uri
    assert (address.namespace, address.kind, address.path) == (namespace, kind, path)


@settings(max_examples=400)
@given(st.text(max_size=80))
def test_anything_accepted_is_canonical_and_contained(raw: str) -> None:
    for namespace in ("me", "workspace"):
        uri = f"memory://{namespace}/notes/{raw}"
        try:
            address = parse_address(uri)
        except ToolError as exc:
            assert exc.code == "invalid_argument" and exc.message
            continue
        assert isinstance(address, RecordAddress)
        # Accepted means: unchanged, same namespace and kind, no traversal, NFC.
        assert address.uri == uri and address.namespace == namespace and address.kind == "notes"
        parts = address.path.split("/")
        assert all(p not in ("", ".", "..") for p in parts)
        assert unicodedata.normalize("NFC", address.path) == address.path
        assert not any(c in address.path for c in "\\%:?#\x00 ")


@pytest.mark.parametrize(
    ("uri", "rule"),
    [
        ("memory://workspace/notes/a/../b.md", "'..'"),
        ("memory://workspace/notes/./b.md", "'.'"),
        ("memory://workspace/notes//b.md", "empty segment"),
        ("memory://workspace/notes/b.md/", "start or end"),
        ("memory://workspace/notes/a%2e%2e/b.md", "percent"),
        ("memory://workspace/notes/a\\b.md", "backslash"),
        ("memory://workspace/notes/a\u200bb.md", "invisible"),
        ("memory://workspace/notes/a b.md", "space"),
        ("memory://workspace/notes/e\u0301.md", "NFC"),
        ("memory://workspace/notes/" + "a/" * 8 + "b.md", "segments"),
        ("memory://workspace/notes/" + "a" * 65 + ".md", "64"),
        ("memory://workspace/notes/" + "/".join(["é" * 60] * 3) + ".md", "256"),
        ("memory://workspace/notes/README", "extension"),
        ("memory://workspace/skills/SKILL.md", "folder"),
        ("MEMORY://workspace/notes/a.md", "memory://"),
        ("memory://record/NOT-A-UUID", "UUID"),
        ("memory://record/" + str(uuid.uuid4()).upper(), "UUID"),
        ("memory://record/" + str(uuid.uuid4()) + "/revisions/01", "leading zeros"),
    ],
)
def test_non_canonical_addresses_are_rejected_with_the_rule(uri: str, rule: str) -> None:
    with pytest.raises(ToolError) as caught:
        parse_address(uri)
    assert caught.value.code == "invalid_argument"
    assert rule in caught.value.message, caught.value.message


def test_record_and_revision_addresses() -> None:
    rid = uuid.uuid4()
    assert parse_address(f"memory://record/{rid}") == IdAddress(rid)
    assert parse_address(f"memory://record/{rid}/revisions/12") == RevisionAddress(rid, 12)


def test_prefixes_end_at_segment_boundaries() -> None:
    assert parse_prefix("memory://workspace/skills/").kind == "skills"
    assert parse_prefix("memory://me/memories/projects/").folder == "projects/"
    assert parse_prefix(None).namespace is None
    for bad in (
        "memory://me/memories/proj",
        "memory://them/",
        "memory://me/x/",
        "memory://me/notes/../",
    ):
        with pytest.raises(ToolError):
            parse_prefix(bad)
