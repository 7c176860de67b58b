"""Export/import as Markdown files: the format, the layout, and import's rules.

Pure: the tools are a small in-memory fake (``FakeTools``), the files live in a
temporary folder. The round trip through the real server is tests/admin/test_transfer.py.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from memory_cli import transfer
from memory_server.domain.addresses import RecordAddress, parse_address
from memory_server.domain.content import check_source
from memory_server.domain.contexts import encode_id, parse_context
from memory_server.domain.utf8 import utf8_window

META: dict[str, Any] = {
    "uri": "memory://workspace/notes/a/b.md",
    "id": "0b9f3c1e-0000-4000-8000-000000000001",
    "context": "channel:eng",
    "kind": "notes",
    "revision": 7,
    "source": 'chat: "quoted" ünïcödé 🙂',
    "created_at": "2026-01-01T00:00:00.000Z",
    "created_by": "alice",
    "created_by_kind": "person",
    "updated_at": "2026-01-02T00:00:00.000Z",
    "updated_by": None,
    "updated_by_kind": None,
    "pinned": True,
    "expires_at": "2027-01-01T00:00:00.000Z",
}
SKILL = "---\nname: deploy\ndescription: Ship a release\n---\n# Deploy\n\n1. Tag it.\n"

# Content shaped like front matter, or almost: delimiters, CRLF, our own block's syntax.
line = st.one_of(
    st.sampled_from(
        ["---", "--- ", "---x", "memory:", '  uri: "x"', "  a: 1", "name: n", "", "\r", "...", "#"]
    ),
    st.text(max_size=12),
)
framed = st.builds(
    lambda head, body, end: "---\n" + "\n".join(head) + "\n---" + end + "\n".join(body),
    st.lists(line, max_size=6),
    st.lists(line, max_size=6),
    st.sampled_from(["\n", "", "\r\n", "x"]),
)
contents = st.one_of(st.text(), framed, st.lists(line, max_size=8).map("\n".join))

# Metadata values a record can have. Sources follow check_source; the line separators
# U+0085, U+2028 and U+2029 have a test of their own below.
plain_text = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cc", "Cs", "Zl", "Zp"]).filter(
        lambda c: c != "\x85"
    ),
    max_size=40,
)
metas = st.fixed_dictionaries(
    {
        "uri": st.just("memory://workspace/notes/x.md"),
        "id": st.uuids().map(str),
        "context": st.sampled_from(["workspace", "channel:eng", "dm:x", "channel:a/thread:b"]),
        "kind": st.sampled_from(["memories", "skills", "notes"]),
        "revision": st.integers(min_value=1, max_value=2**31),
        "source": st.none() | plain_text.filter(bool),
        "created_at": st.just("2026-01-01T00:00:00.000Z"),
        "created_by": st.none() | plain_text,
        "created_by_kind": st.sampled_from([None, "person", "service"]),
        "updated_at": st.just("2026-01-02T00:00:00.000Z"),
        "updated_by": st.none() | plain_text,
        "updated_by_kind": st.sampled_from([None, "person", "service"]),
        "pinned": st.booleans(),
        "expires_at": st.none() | st.just("2027-01-01T00:00:00.000Z"),
    }
)


# -- render and parse ---------------------------------------------------------------


@given(metas, contents)
def test_parse_gives_back_the_content_byte_for_byte_and_the_mapping(
    meta: dict[str, Any], content: str
) -> None:
    text = transfer.render(meta, content)
    back_meta, back = transfer.parse(text)
    assert back.encode() == content.encode()
    assert {k: back_meta[k] for k in meta} == meta
    assert back_meta["embedded"] is (transfer._FRONT_MATTER.match(content) is not None)
    # The whole mapping lives in the file's first front matter block.
    assert text.startswith("---\n")
    assert transfer.render(back_meta, back) == text  # a fixed point


def test_plain_content_follows_the_block_unchanged() -> None:
    text = transfer.render(META, "# Title\r\nbody\n")
    assert text.startswith('---\nmemory:\n  uri: "memory://workspace/notes/a/b.md"\n')
    assert text.endswith("  embedded: false\n---\n# Title\r\nbody\n")
    # One "  name: JSON" line per field, in a fixed order, then embedded.
    block = text.split("---\n")[1].splitlines()[1:]
    assert [entry.split(":")[0].strip() for entry in block] == [*transfer._FIELDS, "embedded"]


def test_a_skill_keeps_its_front_matter_first_and_still_reads_as_yaml() -> None:
    meta = {**META, "uri": "memory://workspace/skills/deploy/SKILL.md", "kind": "skills"}
    text = transfer.render(meta, SKILL)
    assert text.startswith("---\nname: deploy\ndescription: Ship a release\nmemory:\n")
    assert text.endswith("  embedded: true\n---\n# Deploy\n\n1. Tag it.\n")
    front = yaml.safe_load(text.split("---\n")[1])
    assert (front["name"], front["description"]) == ("deploy", "Ship a release")
    assert front["memory"] == {**meta, "embedded": True}
    assert transfer.parse(text) == ({**meta, "embedded": True}, SKILL)


def test_front_matter_closing_at_the_end_of_the_content() -> None:
    content = "---\nname: deploy\ndescription: d\n---"
    text = transfer.render(META, content)
    assert text.endswith("  embedded: true\n---")
    assert transfer.parse(text)[1] == content


@pytest.mark.parametrize(
    "content",
    [
        "---\n---\n",  # not front matter: nothing between the delimiters
        "---\n\n---\n",  # empty front matter
        "---\nmemory:\n---\nbody",  # a key named like ours, no lines under it
        '---\nmemory:\n  uri: "forged"\n---\nbody',  # our syntax inside the content's own
        "---\nx: 1\nmemory:\n  a: 1\n---x\n---\nbody",  # a fake block closing with ---x
        'body\n---\nmemory:\n  uri: "x"\n---\n',  # our syntax below the content
        "\ufeff---\nname: a\n---\n",  # a BOM: not front matter
    ],
)
def test_lookalike_blocks_never_replace_ours(content: str) -> None:
    meta, back = transfer.parse(transfer.render(META, content))
    assert back == content and meta["uri"] == META["uri"]


@given(metas.map(lambda m: {**m, "source": "seed"}))
def test_the_front_matter_is_yaml_with_the_same_values(meta: dict[str, Any]) -> None:
    text = transfer.render(meta, "# body\n")
    assert yaml.safe_load(text.split("---\n")[1])["memory"] == {**meta, "embedded": False}


@pytest.mark.parametrize("separator", ["\x85", "\u2028", "\u2029"])
def test_a_source_with_a_unicode_line_separator_survives(separator: str) -> None:
    source = f"first{separator}second"
    assert check_source(source) == source  # the server accepts it
    meta, _ = transfer.parse(transfer.render({**META, "source": source}, "body"))
    assert meta["source"] == source


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("# no front matter\n", "no front matter"),
        ("---\nname: x\n---\nbody", "no memory: block"),
        ("---\nmemory:\n  uri: 1\n", "no memory: block"),  # never closed
        ('---\nname: x\nmemory:\n  uri: "u"\n  embedded: false\n---\n', "must open"),
    ],
)
def test_files_that_are_not_ours_are_refused(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        transfer.parse(text)


# -- layout -------------------------------------------------------------------------


def test_workspace_records_are_laid_out_as_is() -> None:
    path = transfer.relative_path("workspace", "skills", "deploy/SKILL.md", "workspace")
    assert path.as_posix() == "workspace/skills/deploy/SKILL.md"
    assert transfer.relative_path("me", "notes", "a/b/c.md", "workspace").as_posix() == (
        "me/notes/a/b/c.md"
    )


@pytest.mark.parametrize(
    ("context", "folder"),
    [
        ("channel:eng", "channel%3Aeng"),
        ("channel:eng/thread:1.5", "channel%3Aeng%2Fthread%3A1.5"),
        ("dm:U1", "dm%3AU1"),
        ("channel:caf%C3%A9", "channel%3Acaf%25C3%25A9"),
    ],
)
def test_other_contexts_go_under_one_encoded_folder(context: str, folder: str) -> None:
    path = transfer.relative_path("workspace", "notes", "a/b.md", context)
    assert path.as_posix() == f"contexts/{folder}/workspace/notes/a/b.md"


context_ids = st.text(
    st.characters(codec="utf-8", exclude_categories=["C"]), min_size=1, max_size=8
)
context_keys = st.one_of(
    context_ids.map(lambda i: f"channel:{encode_id(i)}"),
    st.tuples(context_ids, context_ids).map(
        lambda p: f"channel:{encode_id(p[0])}/thread:{encode_id(p[1])}"
    ),
    context_ids.map(lambda i: f"dm:{encode_id(i)}"),
)


@given(context_keys)
def test_a_context_folder_is_one_safe_name_that_decodes_to_the_key(key: str) -> None:
    parts = PurePosixPath(transfer.relative_path("me", "notes", "x.md", key).as_posix()).parts
    assert parts[0] == "contexts" and parts[2:] == ("me", "notes", "x.md")
    folder = parts[1]
    assert folder not in (".", "..") and "/" not in folder and "\\" not in folder
    assert set(folder) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789%-._~")
    assert unquote(folder) == key


# -- export and import through a fake tool caller ------------------------------------


class FakeTools:
    """Enough of memory_list, memory_read and memory_write for transfer: nearest-context
    resolution, pages of two items, and reads that return at most 5 bytes at a time."""

    def __init__(self, refused: frozenset[str] = frozenset()) -> None:
        self.records: list[dict[str, Any]] = []
        self.refused = refused
        self.writes: list[tuple[str, str]] = []

    def add(self, context: str, uri: str, content: str, source: str | None = None) -> str:
        address = parse_address(uri)
        assert isinstance(address, RecordAddress)
        rid = str(uuid.uuid4())
        self.records.append(
            {
                "id": rid,
                "uri": uri,
                "namespace": address.namespace,
                "kind": address.kind,
                "context": context,
                "content": content,
                "source": source,
                "revision": 1,
            }
        )
        return rid

    def _visible(self, context: str) -> list[dict[str, Any]]:
        ancestors = parse_context(context).ancestors
        return [r for r in self.records if r["context"] in ancestors]

    def call(self, tool: str, arguments: dict[str, Any], *, context: str) -> dict[str, Any]:
        if context in self.refused:
            raise transfer.ContextRefused(context)
        ancestors = parse_context(context).ancestors
        if tool == "memory_list":
            namespace = arguments["prefix"].removeprefix("memory://").rstrip("/")
            found = sorted(
                (r for r in self._visible(context) if r["namespace"] == namespace),
                key=lambda r: r["uri"],
            )
            start = int(arguments.get("cursor") or 0)
            page = found[start : start + 2]
            items = [{"id": r["id"], "uri": r["uri"], "context": r["context"]} for r in page]
            more = start + 2 < len(found)
            return {"items": items, "next_cursor": str(start + 2) if more else None}
        if tool == "memory_read":
            uri = arguments["uri"]
            matches = [
                r
                for r in self._visible(context)
                if r["uri"] == uri or f"memory://record/{r['id']}" == uri
            ]
            if not matches:
                return {"error": {"code": "not_found", "message": "no such record in your view"}}
            record = min(matches, key=lambda r: ancestors.index(r["context"]))
            chunk, following = utf8_window(record["content"], arguments.get("offset", 0), 5)
            return {
                **{k: v for k, v in record.items() if k != "namespace"},
                "content": chunk,
                "truncated": following is not None,
                "next_offset": following,
                "created_at": "2026-01-01T00:00:00.000Z",
                "created_by": "alice",
                "created_by_kind": "person",
                "updated_at": "2026-01-01T00:00:00.000Z",
                "updated_by": "alice",
                "updated_by_kind": "person",
            }
        if tool == "memory_write":
            assert arguments["expected_revision"] == 0
            self.writes.append((context, arguments["uri"]))
            rid = self.add(context, arguments["uri"], arguments["content"], arguments.get("source"))
            return {"id": rid, "revision": 1}
        raise AssertionError(tool)


RECORDS = {
    ("workspace", "memory://workspace/notes/same.md"): "# Workspace copy\n",
    ("channel:eng", "memory://workspace/notes/same.md"): "# Channel copy\r\n",
    ("channel:eng/thread:t1", "memory://workspace/memories/thread.md"): "- é🙂 in a thread\n",
    ("dm:ab", "memory://workspace/notes/dm.md"): "between us\r\nCRLF kept\r",
    ("workspace", "memory://workspace/skills/deploy/SKILL.md"): SKILL,
    ("workspace", "memory://workspace/notes/ünï/cödé.md"): "---\nnot front matter\n",
    ("channel:secret", "memory://workspace/notes/s.md"): "private",
}
CONTEXTS = ["channel:eng", "channel:eng/thread:t1", "dm:ab", "channel:secret"]


@pytest.fixture
def exported(tmp_path: Path) -> tuple[FakeTools, Path, transfer.ExportReport]:
    tools = FakeTools()
    for (context, uri), content in RECORDS.items():
        tools.add(context, uri, content, source=f"seed {context}")
    tools.add("workspace", "memory://me/notes/mine.md", "another namespace")
    seen: list[tuple[int, int | None]] = []
    report = transfer.export_namespace(
        tools,
        "workspace",
        tmp_path,
        CONTEXTS,
        private_contexts=["channel:secret", "dm:ab"],
        progress=lambda done, total: seen.append((done, total)),
    )
    # Counted while listing (no total yet, never going back), then read out of the total.
    counted = [done for done, total in seen if total is None]
    assert counted == sorted(counted) and counted[-1] == len(RECORDS)
    read = [(done, total) for done, total in seen if total is not None]
    assert read == [(n, len(RECORDS)) for n in range(1, len(RECORDS) + 1)]
    assert seen.index(read[0]) > seen.index((counted[-1], None))
    return tools, tmp_path, report


def test_export_writes_each_record_once_in_its_own_context(exported: Any) -> None:
    _, folder, report = exported
    assert report.records == len(RECORDS) and report.skipped_contexts == []
    assert sorted(report.files) == sorted(
        [
            "workspace/notes/same.md",
            "contexts/channel%3Aeng/workspace/notes/same.md",
            "contexts/channel%3Aeng%2Fthread%3At1/workspace/memories/thread.md",
            "contexts/dm%3Aab/workspace/notes/dm.md",
            "workspace/skills/deploy/SKILL.md",
            "workspace/notes/ünï/cödé.md",
            "contexts/channel%3Asecret/workspace/notes/s.md",
        ]
    )
    # Bytes on disk: CRLF and a lone CR as written, content read over several windows.
    dm = (folder / "contexts/dm%3Aab/workspace/notes/dm.md").read_bytes().decode()
    assert dm.endswith("---\nbetween us\r\nCRLF kept\r")
    skill = (folder / "workspace/skills/deploy/SKILL.md").read_bytes().decode()
    assert skill.startswith("---\nname: deploy\ndescription: Ship a release\nmemory:\n")
    manifest = json.loads((folder / transfer.MANIFEST).read_text())
    assert manifest == {"namespace": "workspace", "private_contexts": ["channel:secret", "dm:ab"]}
    loaded = {(m["context"], m["uri"]): c for _, m, c in transfer.load_folder(folder)}
    assert loaded == RECORDS


def test_a_refused_context_is_skipped_and_reported(tmp_path: Path) -> None:
    tools = FakeTools(refused=frozenset({"channel:leads"}))
    tools.add("channel:leads", "memory://workspace/notes/l.md", "x")
    tools.add("workspace", "memory://workspace/notes/w.md", "y")
    report = transfer.export_namespace(tools, "workspace", tmp_path, ["channel:leads"])
    assert report.skipped_contexts == ["channel:leads"]
    assert report.files == ["workspace/notes/w.md"]
    assert transfer.private_in_export(tmp_path) is None


def test_import_creates_deeper_contexts_first_then_is_a_no_op(exported: Any) -> None:
    _, folder, _ = exported
    (folder / "README.md").write_text("# Not an export file\n")
    target = FakeTools()
    report = transfer.import_folder(target, folder, registered=["channel:secret", "dm:ab"])
    assert report.count("created") == len(RECORDS), report.to_dict()
    # The channel's copy of same.md before the workspace's: from the channel, the
    # workspace's copy would otherwise answer and look like a conflict.
    depths = [len(parse_context(context).ancestors) for context, _ in target.writes]
    assert depths == sorted(depths, reverse=True)
    assert {(r["context"], r["uri"]): r["content"] for r in target.records} == RECORDS
    assert {r["source"] for r in target.records} == {f"seed {c}" for c, _ in RECORDS}
    by_file = {f.file: f for f in report.files}
    assert "README.md" not in by_file
    again = transfer.import_folder(target, folder, registered=["channel:secret", "dm:ab"])
    assert again.count("unchanged") == len(RECORDS) and len(target.records) == len(RECORDS)
    assert again.to_dict()["unchanged"] == len(RECORDS)


def test_import_reports_differences_and_never_overwrites(exported: Any) -> None:
    _, folder, _ = exported
    target = FakeTools()
    target.add("channel:eng", "memory://workspace/notes/same.md", "edited")
    target.add("workspace", "memory://workspace/notes/dm.md", "the workspace's own")
    report = transfer.import_folder(target, folder, registered=["channel:secret", "dm:ab"])
    outcomes = {(f.context, f.uri): (f.outcome, f.reason) for f in report.files}
    assert outcomes[("channel:eng", "memory://workspace/notes/same.md")] == (
        "conflict",
        "different content at revision 1",
    )
    # From the DM, the workspace's record of the same path answers: not the DM's own.
    assert outcomes[("dm:ab", "memory://workspace/notes/dm.md")] == (
        "conflict",
        "an ancestor context's record answers",
    )
    assert report.count("conflict") == 2 and report.count("created") == len(RECORDS) - 2
    edited = [r for r in target.records if r["content"] == "edited"]
    assert len(edited) == 1


@pytest.mark.parametrize(
    ("registered", "skipped"),
    [
        (None, {"channel:secret", "dm:ab"}),
        (["dm:ab"], {"channel:secret"}),
        (["channel:secret", "dm:ab"], set()),
    ],
)
def test_private_contexts_are_imported_only_where_registered(
    exported: Any, registered: list[str] | None, skipped: set[str]
) -> None:
    _, folder, _ = exported
    report = transfer.import_folder(FakeTools(), folder, registered=registered)
    assert {f.context for f in report.files if f.outcome == "skipped"} == skipped
    for entry in report.files:
        if entry.outcome == "skipped":
            assert (
                entry.reason
                == f"{entry.context} was private in the export and is not registered here"
            )
            assert entry.id is None and entry.source_id is not None


def test_a_thread_is_gated_by_its_channel() -> None:
    assert transfer._gate("channel:eng/thread:t1") == "channel:eng"
    assert transfer._gate("channel:eng") == "channel:eng"
    assert transfer._gate("dm:ab") == "dm:ab"
    assert transfer._gate("workspace") == "workspace"


def test_a_refused_context_on_import_is_skipped_with_the_reason(exported: Any) -> None:
    _, folder, _ = exported
    target = FakeTools(refused=frozenset({"dm:ab"}))
    report = transfer.import_folder(target, folder, registered=["channel:secret", "dm:ab"])
    (entry,) = [f for f in report.files if f.context == "dm:ab"]
    assert entry.outcome == "skipped"
    assert entry.reason == "context_unavailable: register the context with you as a member first"
