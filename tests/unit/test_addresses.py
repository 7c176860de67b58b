"""Address parsing: canonical forms round-trip, nothing accepted escapes its namespace."""

from __future__ import annotations

import unicodedata
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memory_server.domain.addresses import (
    IdAddress,
    Prefix,
    RecordAddress,
    RevisionAddress,
    parse_address,
    parse_path,
    parse_path_address,
    parse_prefix,
    parse_record_address,
)
from memory_server.domain.errors import ToolError

from tests.unit.fakes import refusal_message

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
        # Fixed ids: a test's name must be the same in every process that collects it.
        ("memory://record/2F2B7AF6-1455-463A-84ED-B66C6E98625F", "UUID"),
        ("memory://record/ebbaafcc-44c0-43e8-b329-c03e5a56108e/revisions/01", "leading zeros"),
    ],
)
def test_non_canonical_addresses_are_rejected_with_the_rule(uri: str, rule: str) -> None:
    message = refusal_message(parse_address, uri)
    assert rule in message, message


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


# -- boundaries, the address kinds, and prefixes in detail ---------------------------


def test_limits_are_inclusive() -> None:
    eight = "/".join(["a"] * 7 + ["b.md"])
    assert parse_path(eight) == eight
    assert "more than 8 segments" in refusal_message(parse_path, "a/" + eight)
    long_segment = "a" * 64
    assert parse_path(f"{long_segment}/b.md") == f"{long_segment}/b.md"
    assert "longer than 64" in refusal_message(parse_path, f"a{long_segment}/b.md")
    # 84 + 84 + 80 bytes of two-byte characters, three slashes, a 5-byte file name.
    path = "/".join(["é" * 42, "é" * 42, "é" * 40, "xy.md"])
    assert len(path.encode()) == 256 and parse_path(path) == path
    assert "256 UTF-8 bytes" in refusal_message(parse_path, "x" + path)


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("", "non-empty string"),
        (".md", "extension"),
        ("..md", "extension"),
        ("a.", "extension"),
        ("notes", "extension"),
        ("a/b", "extension"),
        ("/a.md", "start or end"),
        ("a:b.md", "':' (U+003A COLON)"),
        ("a+b.md", "'+' (U+002B PLUS SIGN)"),
        ("a\u00a0b.md", "U+00A0 (control, space or invisible"),
        ("a\x07.md", "U+0007 (control, space or invisible"),
        ("a%20b.md", "percent-escapes are not allowed"),
        ("\u1100\u1161.md", "NFC"),  # two letters that NFC composes into one
        ("\uf900.md", "NFC"),  # a compatibility ideograph NFC replaces
    ],
)
def test_path_rules_name_what_is_wrong(path: str, rule: str) -> None:
    assert rule in refusal_message(parse_path, path)


def test_accepted_paths_keep_their_spelling() -> None:
    for path in (
        "a.md",
        "a.b.c",
        "-_.x/y.md",
        "日本/ノート.md",
        "é/ü.md",
        "v1.2/release-notes.txt",
    ):
        assert parse_path(path) == path
    assert parse_path("a.md", what="new_uri path") == "a.md"
    assert refusal_message(lambda: parse_path("a//b.md", what="new_uri path")).startswith(
        "new_uri path"
    )


def test_skills_need_a_folder_and_other_kinds_do_not() -> None:
    skill = parse_address("memory://me/skills/review/SKILL.md")
    assert skill == RecordAddress("me", "skills", "review/SKILL.md")
    assert parse_address("memory://me/memories/top.md") == RecordAddress("me", "memories", "top.md")
    assert "skills live in a folder" in refusal_message(parse_address, "memory://me/skills/x.md")


@pytest.mark.parametrize(
    ("uri", "rule"),
    [
        (None, "must start with memory://"),
        (5, "must start with memory://"),
        ("memory://", "namespace must be one of"),
        ("memory://workspace", "kind must be one of"),
        ("memory://workspace/Notes/a.md", "kind must be one of"),
        ("memory://team/notes/a.md", "namespace must be one of"),
        ("memory://record/", "UUID"),
        ("memory://record/{id}/revisions/0", "positive integer"),
        ("memory://record/{id}/revisions/12345678901", "positive integer"),
        ("memory://record/{id}/revisions/-1", "positive integer"),
        ("memory://record/{id}/revisions", "memory://record/{{id}}"),
        ("memory://record/{id}/history/1", "memory://record/{{id}}"),
        ("memory://record/{id}/", "memory://record/{{id}}"),
        ("memory://record/{id}/revisions/1/x", "memory://record/{{id}}"),
    ],
)
def test_malformed_addresses(uri: object, rule: str) -> None:
    rid = "0b9f3c1e-0000-4000-8000-000000000000"
    if isinstance(uri, str):
        uri = uri.replace("{id}", rid)
        rule = rule.replace("{{id}}", "{id}")
    assert rule in refusal_message(parse_address, uri)


@pytest.mark.parametrize(
    "tail",
    [str(2**31), "9999999999", str(2**63), "1\n", "12\n", "1 ", "\n1", "１"],
)
def test_a_revision_beyond_the_sql_integer_or_not_whole_digits_is_refused(tail: str) -> None:
    """A revision is stored as an SQL integer: 2**31 and beyond name no revision (and
    must not reach a statement); a trailing newline is not canonical either."""
    rid = "0b9f3c1e-0000-4000-8000-000000000000"
    message = refusal_message(parse_address, f"memory://record/{rid}/revisions/{tail}")
    assert (
        message == "uri revision must be a positive integer (1 to 2147483647) without leading zeros"
    )


def test_the_largest_revision_is_an_address() -> None:
    rid = uuid.UUID("0b9f3c1e-0000-4000-8000-000000000000")
    largest = parse_address(f"memory://record/{rid}/revisions/{2**31 - 1}")
    assert largest == RevisionAddress(rid, 2**31 - 1)


@pytest.mark.parametrize("tail", ["\n", "/revisions/1\n", "\n/revisions/1"])
def test_a_record_id_with_a_trailing_newline_is_refused(tail: str) -> None:
    """(It once passed the pattern and broke uuid.UUID, an unanswered exception.)"""
    rid = "0b9f3c1e-0000-4000-8000-000000000000"
    message = refusal_message(parse_address, f"memory://record/{rid}{tail}")
    assert "UUID" in message or "positive integer" in message, message


def test_the_name_of_the_argument_is_in_the_message() -> None:
    assert refusal_message(lambda: parse_address("x", what="new_uri")) == (
        "new_uri must start with memory://"
    )


def test_uris_are_rebuilt_exactly() -> None:
    rid = uuid.UUID("0b9f3c1e-0000-4000-8000-000000000000")
    assert IdAddress(rid).uri == f"memory://record/{rid}"
    assert RevisionAddress(rid, 3).uri == f"memory://record/{rid}/revisions/3"
    assert RecordAddress("me", "notes", "a/b.md").uri == "memory://me/notes/a/b.md"
    revision = parse_address(f"memory://record/{rid}/revisions/1234567890")
    assert revision == RevisionAddress(rid, 1234567890)


def test_revisions_are_read_only_and_ids_are_not_paths() -> None:
    rid = uuid.uuid4()
    assert parse_record_address(f"memory://record/{rid}") == IdAddress(rid)
    assert parse_record_address("memory://me/notes/a.md") == RecordAddress("me", "notes", "a.md")
    message = refusal_message(parse_record_address, f"memory://record/{rid}/revisions/2")
    assert message == "uri names a revision, which is read-only"
    assert parse_path_address("memory://workspace/notes/a.md").namespace == "workspace"
    for uri in (f"memory://record/{rid}", f"memory://record/{rid}/revisions/2"):
        message = refusal_message(parse_path_address, uri)
        assert message == "uri must be a memory://me/… or memory://workspace/… path"


def test_prefix_forms() -> None:
    assert parse_prefix("") == Prefix() == parse_prefix("memory://")
    assert parse_prefix("memory://me/") == Prefix("me")
    assert parse_prefix("memory://workspace/notes/") == Prefix("workspace", "notes", "")
    seven = "memory://me/notes/" + "a/" * 7
    assert parse_prefix(seven).folder == "a/" * 7
    assert "more than 7 folder segments" in refusal_message(parse_prefix, seven + "a/")


@pytest.mark.parametrize(
    ("prefix", "rule"),
    [
        ("workspace/", "must start with memory://"),
        (7, "must start with memory://"),
        ("memory://me", "segment boundary"),
        ("memory://me/notes/a.md", "segment boundary"),
        ("memory://record/", "namespace must be me or workspace"),
        ("memory://me/files/", "kind must be one of"),
        ("memory://me/notes//", "empty segment"),
        ("memory://me/notes/a b/", "space or invisible"),
        ("memory://me/notes/./", "'.' or '..'"),
        ("memory://me/notes/\u1100\u1161/", "NFC"),
    ],
)
def test_prefix_rules(prefix: object, rule: str) -> None:
    assert rule in refusal_message(parse_prefix, prefix)
