"""Export and import through the MCP tools: the file format, and a full round trip."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import yaml
from hypothesis import given
from hypothesis import strategies as st
from memory_cli import transfer
from memory_server.edge.service import McpService

from tests.admin.conftest import ALL_SCOPES, call
from tests.builders import Principal, Workspace
from tests.endpoint.conftest import event, tool_call

META = {
    "uri": "memory://workspace/skills/notes/SKILL.md",
    "id": "0b9f3c1e-0000-4000-8000-000000000000",
    "context": "channel:eng",
    "kind": "skills",
    "revision": 3,
    "source": 'a "quoted"\nsource',
    "created_at": "2026-01-01T00:00:00.000Z",
    "created_by": "alice",
    "updated_at": "2026-01-02T00:00:00.000Z",
    "updated_by": None,
}

contents = st.one_of(
    st.text(),
    st.builds(lambda fm, rest: f"---\n{fm}\n---\n{rest}", st.text(), st.text()),
    st.builds(lambda fm: f"---\n{fm}\n---", st.text()),
    st.sampled_from(
        [
            "",
            "---",
            "---\n",
            "---\n---\n",
            "---\n\n---\n",
            "---\n---\n---\n",
            "\r\n---\r\n",
            '---\nmemory:\n  uri: "x"\n---\nbody',
            "x\nmemory:\n  a: 1\n---\n",
        ]
    ),
)


@given(contents)
def test_render_then_parse_gives_back_the_content_exactly(content: str) -> None:
    meta, back = transfer.parse(transfer.render(META, content))
    assert back == content
    assert {k: meta[k] for k in META} == META


def test_a_skill_keeps_its_own_front_matter_first() -> None:
    skill = "---\nname: notes\ndescription: Take notes\n---\n# Notes\n"
    text = transfer.render(META, skill)
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["name"] == "notes" and front["description"] == "Take notes"
    assert front["memory"]["uri"] == META["uri"] and front["memory"]["embedded"] is True
    assert text.endswith("---\n# Notes\n")
    plain = yaml.safe_load(transfer.render(META, "# Hi\n").split("---\n")[1])
    assert plain["memory"]["source"] == META["source"] and plain["memory"]["embedded"] is False


class ServiceTools:
    """``ToolCaller`` over the in-process MCP endpoint (the real handler, v2 events)."""

    def __init__(self, service: McpService, ws: Workspace, who: Principal) -> None:
        self.service, self.ws, self.who = service, ws, who

    def call(self, tool: str, arguments: dict[str, Any], *, context: str) -> dict[str, Any]:
        answer = self.service.invoke(
            event(
                self.ws.slug,
                sub=self.who.subject,
                scopes=ALL_SCOPES,
                body=tool_call(tool, **arguments),
                headers={"memory-context": context, "mcp-protocol-version": "2025-11-25"},
            )
        )
        if answer["statusCode"] == 403:
            raise transfer.ContextRefused(context)
        assert answer["statusCode"] == 200, answer
        return dict(json.loads(answer["body"])["result"]["structuredContent"])


def seed(ws: Workspace, alice: Principal) -> dict[tuple[str, str], str]:
    """Records across contexts, including a path held in both a channel and the workspace."""
    records = {
        # The channel's copy first: from the channel, the workspace's would answer.
        ("channel:eng", "memory://workspace/notes/same.md"): "# Channel copy\n",
        ("workspace", "memory://workspace/notes/same.md"): "# Workspace copy\n",
        ("channel:eng/thread:t1", "memory://workspace/memories/thread.md"): "- in a thread\n",
        ("dm:ab", "memory://workspace/notes/dm.md"): "between us\r\nCRLF kept\n",
        (
            "workspace",
            "memory://workspace/skills/review/SKILL.md",
        ): "---\nname: review\ndescription: Review a change\n---\n1. Read it.\n",
        ("workspace", "memory://workspace/notes/big/ünï/cödé.md"): "é" * 30000,
        ("workspace", "memory://workspace/notes/dashes.md"): "---\nnot front matter\n",
    }
    for (context, uri), content in records.items():
        ws.agent(alice, context).write(
            uri=uri, content=content, expected_revision=0, source=f"seed {context}", context=context
        )
    ws.agent(alice).write(uri="memory://me/notes/mine.md", content="personal", expected_revision=0)
    return records


def snapshot(
    ws: Workspace, who: Principal, contexts: list[str]
) -> dict[tuple[str, str], tuple[str, str | None]]:
    """(context, uri) → (content, source) of every workspace record, read back."""
    found = {}
    for context in contexts:
        agent = ws.agent(who, context)
        for item in transfer.list_records(_AgentTools(agent), "workspace", context):
            record = agent.read(uri=f"memory://record/{item['id']}", max_bytes=65536)
            found[(context, record["uri"])] = (record["content"], record["source"])
    return found


class _AgentTools:
    def __init__(self, agent: Any) -> None:
        self.agent = agent

    def call(self, tool: str, arguments: dict[str, Any], *, context: str) -> dict[str, Any]:
        return dict(getattr(self.agent, tool.removeprefix("memory_"))(**arguments))


CONTEXTS = ["workspace", "channel:eng", "channel:eng/thread:t1", "dm:ab"]


def test_export_then_import_reproduces_every_record_and_reimport_is_a_no_op(
    world, admin_service, owner: psycopg.Connection, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    source = world.workspace()
    alice = source.person("alice")
    source.register("dm:ab", alice)
    records = seed(source, alice)

    usage = call(admin_service, source.slug, "GET", "/contexts", alice).body["in_use"]
    contexts = [u["context"] for u in usage]
    assert sorted(contexts) == sorted(CONTEXTS)
    seen: list[tuple[int, int | None]] = []
    registered = [
        c["context"]
        for c in call(admin_service, source.slug, "GET", "/contexts", alice).body["contexts"]
    ]
    report = transfer.export_namespace(
        ServiceTools(admin_service, source, alice),
        "workspace",
        tmp_path,
        contexts,
        private_contexts=registered,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert transfer.private_in_export(tmp_path) == ["dm:ab"]
    assert report.records == len(records) and report.skipped_contexts == []
    # Counted while listing (no total yet), then every record read out of the total.
    counting = [done for done, total in seen if total is None]
    assert counting and counting == sorted(counting) and counting[-1] == len(records)
    reading = [(done, total) for done, total in seen if total is not None]
    assert reading == [(n, len(records)) for n in range(1, len(records) + 1)]
    assert (
        (tmp_path / "workspace/skills/review/SKILL.md").read_text().startswith("---\nname: review")
    )
    assert (tmp_path / "contexts/channel%3Aeng/workspace/notes/same.md").exists()
    assert not list(tmp_path.rglob("mine.md"))  # another namespace

    target = world.workspace()
    admin = target.person("alice2")
    target.register("dm:ab", admin)
    tools = ServiceTools(admin_service, target, admin)
    imported = transfer.import_folder(tools, tmp_path, registered=["dm:ab"])
    assert imported.count("created") == len(records), imported.to_dict()
    assert snapshot(target, admin, CONTEXTS) == {
        key: (content, f"seed {key[0]}") for key, content in records.items()
    }
    mapping = {f.source_id: f.id for f in imported.files}
    assert len(mapping) == len(records) and None not in mapping.values()

    changes = "SELECT count(*) FROM memory.revisions WHERE workspace_id = %s"
    before = owner.execute(changes, (target.id,)).fetchone()
    again = transfer.import_folder(tools, tmp_path, registered=["dm:ab"])
    assert again.count("unchanged") == len(records), again.to_dict()
    assert owner.execute(changes, (target.id,)).fetchone() == before

    # A record changed in the target is reported, never overwritten.
    target.agent(admin, "channel:eng").write(
        uri="memory://workspace/notes/same.md",
        content="edited",
        expected_revision=1,
        context="channel:eng",
    )
    third = transfer.import_folder(tools, tmp_path, registered=["dm:ab"])
    conflicts = [f for f in third.files if f.outcome == "conflict"]
    assert [(f.context, f.uri) for f in conflicts] == [
        ("channel:eng", "memory://workspace/notes/same.md")
    ]
    assert "revision 2" in (conflicts[0].reason or "")
    assert (
        snapshot(target, admin, ["channel:eng"])[
            ("channel:eng", "memory://workspace/notes/same.md")
        ][0]
        == "edited"
    )


def test_contexts_the_principal_cannot_hear_are_skipped_and_reported(
    world, admin_service, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice, bob = ws.person("alice"), ws.person("bob")
    ws.register("channel:leads", alice)
    ws.agent(alice, "channel:leads").write(
        uri="memory://workspace/notes/l.md", content="x", expected_revision=0
    )
    report = transfer.export_namespace(
        ServiceTools(admin_service, ws, bob), "workspace", tmp_path, ["channel:leads"]
    )
    assert report.records == 0 and report.skipped_contexts == ["channel:leads"]
    transfer.export_namespace(
        ServiceTools(admin_service, ws, alice),
        "workspace",
        tmp_path,
        ["channel:leads"],
        private_contexts=["channel:leads"],
    )
    # In a workspace where channel:leads is not registered it would be open to all:
    # skipped, with the reason; once registered (with the importer), imported.
    other = world.workspace()
    carol = other.person("carol")
    tools = ServiceTools(admin_service, other, carol)
    skipped = transfer.import_folder(tools, tmp_path, registered=[])
    assert [(f.outcome, f.reason) for f in skipped.files] == [
        ("skipped", "channel:leads was private in the export and is not registered here")
    ]
    other.register("channel:leads", carol)
    done = transfer.import_folder(tools, tmp_path, registered=["channel:leads"])
    assert [f.outcome for f in done.files] == ["created"]


def test_an_export_that_does_not_know_what_was_private_opens_no_context(
    world, admin_service, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A member who is not an admin exports without knowing which contexts were
    private (``private_contexts: null``); importing that must not turn any of them into
    an open channel: only the workspace's records, and contexts the target registers,
    are imported."""
    ws = world.workspace()
    alice, bob = ws.person("alice"), ws.person("bob", ("read", "write:shared"))
    ws.register("channel:leads", alice, bob)
    ws.agent(bob, "channel:leads").write(
        uri="memory://workspace/notes/l.md", content="leads only", expected_revision=0
    )
    ws.agent(bob, "channel:eng").write(
        uri="memory://workspace/notes/e.md", content="eng", expected_revision=0
    )
    ws.agent(bob).write(uri="memory://workspace/notes/w.md", content="all", expected_revision=0)
    transfer.export_namespace(
        ServiceTools(admin_service, ws, bob),
        "workspace",
        tmp_path,
        ["channel:leads", "channel:eng"],
        private_contexts=None,
    )
    assert transfer.private_in_export(tmp_path) is None
    other = world.workspace()
    carol = other.person("carol")
    tools = ServiceTools(admin_service, other, carol)
    first = transfer.import_folder(tools, tmp_path, registered=[])
    outcomes = {f.context: (f.outcome, f.reason) for f in first.files}
    assert outcomes["workspace"] == ("created", None)
    for held in ("channel:leads", "channel:eng"):
        assert outcomes[held][0] == "skipped" and "register it here" in str(outcomes[held][1])
    other.register("channel:leads", carol)
    second = transfer.import_folder(tools, tmp_path, registered=["channel:leads"])
    assert {f.context: f.outcome for f in second.files} == {
        "workspace": "unchanged",
        "channel:leads": "created",
        "channel:eng": "skipped",
    }


def test_pin_and_expiry_travel_and_an_expired_export_is_not_brought_back(
    world, admin_service, owner: psycopg.Connection, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.person("alice")
    later = (datetime.now(UTC) + timedelta(days=30)).isoformat().replace("+00:00", "Z")
    agent = ws.agent(alice)
    agent.write(
        uri="memory://workspace/notes/pinned.md", content="pin", expected_revision=0, pinned=True
    )
    made = agent.write(
        uri="memory://workspace/notes/lapsing.md",
        content="lapse",
        expected_revision=0,
        expires_at=later,
    )
    agent.write(
        uri="memory://workspace/notes/gone.md",
        content="gone by import time",
        expected_revision=0,
        expires_at=(datetime.now(UTC) + timedelta(days=1)).isoformat(),
    )
    transfer.export_namespace(ServiceTools(admin_service, ws, alice), "workspace", tmp_path)
    exported, _ = transfer.parse((tmp_path / "workspace/notes/pinned.md").read_text())
    assert (exported["pinned"], exported["expires_at"]) == (True, None)
    # Who wrote it travels with the kind beside each handle.
    writers = [exported[f] for f in ("created_by", "created_by_kind", "updated_by_kind")]
    assert writers == ["alice", "person", "person"]
    lapsing, _ = transfer.parse((tmp_path / "workspace/notes/lapsing.md").read_text())
    assert lapsing["pinned"] is False and lapsing["expires_at"].startswith(later[:16])
    # The third one's time passes before the import.
    gone = tmp_path / "workspace/notes/gone.md"
    meta, content = transfer.parse(gone.read_text())
    gone.write_text(transfer.render({**meta, "expires_at": "2026-01-01T00:00:00.000Z"}, content))

    target = world.workspace()
    bob = target.person("bob")
    imported = transfer.import_folder(ServiceTools(admin_service, target, bob), tmp_path)
    outcomes = {f.uri: (f.outcome, f.reason) for f in imported.files}
    assert outcomes["memory://workspace/notes/gone.md"] == (
        "skipped",
        "expired at 2026-01-01T00:00:00.000Z",
    )
    reader = target.agent(bob)
    assert reader.read(uri="memory://workspace/notes/pinned.md")["pinned"] is True
    copied = reader.read(uri="memory://workspace/notes/lapsing.md")
    assert copied["expires_at"].startswith(later[:16]) and copied["id"] != made["id"]
