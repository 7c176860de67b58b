"""Content rules of records: text PostgreSQL can hold, byte limits, sources, SKILL.md."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_server.data.records import view
from memory_server.domain.addresses import RecordAddress
from memory_server.domain.caller import SHARED_OWNER, Caller
from memory_server.domain.content import (
    check_content,
    check_source,
    check_text,
    derive_title,
    front_matter,
)
from memory_server.domain.contexts import parse_context
from memory_server.domain.errors import ToolError
from memory_server.domain.limits import CONTENT_MAX_BYTES
from memory_server.domain.summaries import iso, summary

NOTE = RecordAddress("workspace", "notes", "a.md")
SKILL = RecordAddress("workspace", "skills", "deploy/SKILL.md")


def refused(fn, *args, code: str = "invalid_argument") -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(ToolError) as caught:
        fn(*args)
    assert caught.value.code == code
    return caught.value.message


# -- check_text ---------------------------------------------------------------------


def test_check_text_returns_the_value_unchanged() -> None:
    for value in ("", "plain", "é🙂\r\n\t", "x" * 10):
        assert check_text(value, what="field", max_bytes=40) is value


def test_check_text_counts_utf8_bytes_with_an_inclusive_limit() -> None:
    assert check_text("é" * 5, what="query", max_bytes=10) == "é" * 5
    message = refused(
        lambda: check_text("é" * 5 + "x", what="query", max_bytes=10), code="too_large"
    )
    assert message == "query is 11 bytes; the limit is 10"
    message = refused(lambda: check_text("🙂" * 3, what="fact", max_bytes=11), code="too_large")
    assert message == "fact is 12 bytes; the limit is 11"


@pytest.mark.parametrize("value", ["\x00", "a\x00b", "end\x00"])
def test_check_text_refuses_nul(value: str) -> None:
    message = refused(lambda: check_text(value, what="content", max_bytes=100))
    assert message == "content may not contain NUL characters"


@pytest.mark.parametrize("value", ["\ud800", "a\udfffb", "\udc80"])
def test_check_text_refuses_lone_surrogates(value: str) -> None:
    message = refused(lambda: check_text(value, what="source", max_bytes=100))
    assert message == "source is not valid Unicode (lone surrogate)"


def test_nul_is_reported_before_size() -> None:
    message = refused(lambda: check_text("\x00" * 50, what="content", max_bytes=10))
    assert "NUL" in message


@given(st.text(), st.integers(min_value=0, max_value=64))
def test_check_text_accepts_exactly_the_encodable_nul_free_text_within_the_limit(
    value: str, limit: int
) -> None:
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        size = None
    acceptable = size is not None and "\x00" not in value and size <= limit
    try:
        assert check_text(value, what="v", max_bytes=limit) == value
        accepted = True
    except ToolError as exc:
        assert exc.code in ("invalid_argument", "too_large")
        accepted = False
    assert accepted == acceptable


# -- check_source -------------------------------------------------------------------


def test_check_source_passes_none_and_printable_text() -> None:
    assert check_source(None) is None
    for source in ("chat with alice", "https://example.com/a?b=c#d", "Ünïcödé 🙂", "x" * 1024):
        assert check_source(source) == source


@pytest.mark.parametrize("char", ["\n", "\r", "\t", "\x1b", "\x01", "\x1f", "\x7f"])
def test_check_source_refuses_control_characters(char: str) -> None:
    message = refused(lambda: check_source(f"a{char}b"))
    assert message == "source may not contain control characters"


def test_check_source_limit_is_1024_bytes() -> None:
    assert check_source("é" * 512) == "é" * 512
    message = refused(lambda: check_source("é" * 512 + "x"), code="too_large")
    assert message == "source is 1025 bytes; the limit is 1024"


def test_check_source_keeps_text_rules() -> None:
    assert refused(lambda: check_source("a\x00")) == "source may not contain NUL characters"
    assert "surrogate" in refused(lambda: check_source("a\ud800"))


# -- check_content ------------------------------------------------------------------


def test_content_limit_is_65536_utf8_bytes() -> None:
    assert CONTENT_MAX_BYTES == 65536
    assert check_content(NOTE, "x" * 65536) == "x" * 65536
    assert check_content(NOTE, "é" * 32768) == "é" * 32768
    message = refused(lambda: check_content(NOTE, "é" * 32768 + "x"), code="too_large")
    assert message == "content is 65537 bytes; the limit is 65536"
    # What the argument model lets through (65536 characters) can still be too large.
    message = refused(lambda: check_content(NOTE, "🙂" * 65536), code="too_large")
    assert message == "content is 262144 bytes; the limit is 65536"


def test_content_may_not_hold_nul_or_lone_surrogates() -> None:
    assert refused(lambda: check_content(NOTE, "a\x00")) == "content may not contain NUL characters"
    assert "surrogate" in refused(lambda: check_content(NOTE, "\udc00"))


def test_ordinary_records_need_no_front_matter() -> None:
    for address in (
        NOTE,
        RecordAddress("me", "memories", "prefs.md"),
        RecordAddress("workspace", "skills", "deploy/notes.md"),  # not a SKILL.md
        RecordAddress("workspace", "skills", "deploy/skill.md"),  # case matters
        RecordAddress("workspace", "notes", "deploy/SKILL.md"),  # not under skills
    ):
        assert check_content(address, "no front matter") == "no front matter"


@pytest.mark.parametrize(
    "content",
    [
        "---\nname: deploy\ndescription: Ship a release\n---\n# Deploy\n",
        "---\nname: deploy\ndescription: Ship a release\n---",
        "---\nname: 'deploy'\ndescription: \"Ship\"\n---\n",
        "---\ndescription: Ship\nlicense: MIT\nname:   deploy  \nmetadata:\n  a: b\n---\nbody",
    ],
)
def test_a_skill_with_name_and_description_is_accepted(content: str) -> None:
    assert check_content(SKILL, content) == content


@pytest.mark.parametrize(
    "content",
    [
        "# Deploy\n",
        "",
        "---\nname: deploy\n---\n",  # no description
        "---\ndescription: Ship\n---\n",  # no name
        "---\nname: \ndescription: Ship\n---\n",  # empty name
        "---\nname: deploy\ndescription: ''\n---\n",  # empty description
        "---\n  name: deploy\n  description: Ship\n---\n",  # nested, not top-level keys
        "\n---\nname: deploy\ndescription: Ship\n---\n",  # front matter must open the file
        "---\r\nname: deploy\r\ndescription: Ship\r\n---\r\n",  # CRLF is not a delimiter
        "---\nname: deploy\ndescription: Ship\n",  # never closed
        "---\nname: deploy\ndescription: Ship\n---x\n",  # closing line is not '---'
    ],
)
def test_a_skill_without_name_and_description_is_refused(content: str) -> None:
    message = refused(lambda: check_content(SKILL, content))
    assert message == "a SKILL.md needs YAML front matter with name and description"


def test_a_skill_name_must_match_its_folder() -> None:
    content = "---\nname: release\ndescription: Ship\n---\n"
    message = refused(lambda: check_content(SKILL, content))
    assert message == "SKILL.md front matter name must match its folder ('deploy')"
    nested = RecordAddress("me", "skills", "ops/release/SKILL.md")
    assert check_content(nested, content) == content
    upper = "---\nname: Deploy\ndescription: Ship\n---\n"
    assert "must match its folder" in refused(lambda: check_content(SKILL, upper))


def test_skill_size_is_checked_before_front_matter() -> None:
    message = refused(lambda: check_content(SKILL, "x" * 65537), code="too_large")
    assert message.startswith("content is 65537 bytes")


# -- front matter and titles --------------------------------------------------------


def test_front_matter_reads_top_level_scalars() -> None:
    text = "---\nname: a: b\n'q': \"x\"\n  nested: no\n\tnested: no\nbare\n: empty key\n---\nrest"
    assert front_matter(text) == {"name": "a: b", "'q'": "x"}
    assert front_matter("---\n---\n") == {}
    assert front_matter("no front matter") == {}
    assert front_matter("---\nk: v\n---\n---\nk: w\n---\n") == {"k": "v"}


@pytest.mark.parametrize(
    ("kind", "path", "content", "title"),
    [
        (
            "skills",
            "deploy/SKILL.md",
            "---\nname: deploy\ndescription: d\n---\n# Heading\n",
            "deploy",
        ),
        ("skills", "deploy/notes.md", "# Heading\n", "Heading"),
        (
            "notes",
            "a/b.md",
            "---\nname: ignored\n---\n## Second level ##\n# Later\n",
            "Second level",
        ),
        ("notes", "a/b.md", "text\n  # indented is not a heading\n#also not\n", "b.md"),
        ("notes", "a/b.md", "#######  seven\n", "b.md"),
        ("memories", "x.md", "intro\n###\tTabbed  \t\n", "Tabbed"),
        ("memories", "x.md", "", "x.md"),
    ],
)
def test_derive_title(kind: str, path: str, content: str, title: str) -> None:
    assert derive_title(kind, path, content) == title


def test_derived_titles_are_cut_to_200_bytes_on_a_character_boundary() -> None:
    title = derive_title("notes", "a.md", "# " + "é" * 150 + "\n")
    assert title == "é" * 100
    title = derive_title("notes", "a.md", "# x" + "🙂" * 60 + "\n")
    assert len(title.encode()) == 197 and title == "x" + "🙂" * 49


# -- timestamps and summaries -------------------------------------------------------


def test_iso_is_utc_with_milliseconds_and_z() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert iso(moment) == "2026-01-02T03:04:05.678Z"
    east = moment.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert iso(east) == "2026-01-02T03:04:05.678Z"
    assert iso(datetime(2026, 1, 2, tzinfo=UTC)) == "2026-01-02T00:00:00.000Z"


def _caller(personal: bool) -> Caller:
    return Caller(
        workspace_id=uuid.UUID(int=1),
        workspace="acme",
        principal_id=uuid.UUID(int=2),
        principal_kind="person",
        handle="alice",
        grants=frozenset({"read"}),
        context=parse_context("channel:eng/thread:7"),
        personal_namespace=personal,
        request_id="req-1",
    )


def test_view_passes_the_callers_view_as_parameters() -> None:
    params = view(_caller(True))
    assert params == {
        "workspace_id": uuid.UUID(int=1),
        "owners": [SHARED_OWNER, uuid.UUID(int=2)],
        "contexts": ["channel:eng/thread:7", "channel:eng", "workspace"],
        "principal_id": uuid.UUID(int=2),
        "request_id": "req-1",
    }
    assert view(_caller(False))["owners"] == [SHARED_OWNER]


def test_summary_names_the_record_by_the_callers_namespace_and_never_its_body() -> None:
    row = {
        "id": uuid.UUID(int=9),
        "owner_id": uuid.UUID(int=2),
        "kind": "notes",
        "path": "a/b.md",
        "title": "B",
        "context_key": "channel:eng",
        "revision": 4,
        "updated_at": datetime(2026, 1, 1, tzinfo=UTC),
        "body": "secret body",
    }
    item = summary(_caller(True), row)
    assert item == {
        "uri": "memory://me/notes/a/b.md",
        "id": str(uuid.UUID(int=9)),
        "kind": "notes",
        "title": "B",
        "context": "channel:eng",
        "revision": 4,
        "updated_at": "2026-01-01T00:00:00.000Z",
    }
    shared = summary(_caller(True), {**row, "owner_id": SHARED_OWNER})
    assert shared["uri"] == "memory://workspace/notes/a/b.md"
