"""Search: ranked, in view, within budget, and never silently empty on failure."""

from __future__ import annotations

import json

import psycopg
import pytest
from memory_server.budget import RESPONSE_MAX_BYTES, jsonrpc_tool_result_size
from memory_server.caller import Deadline
from memory_server.errors import ToolError
from memory_server.models import SearchArgs
from memory_server.operations import memory_search
from memory_server.ranking import Candidate, DeterministicRanker
from memory_server.store import Store

from tests.support import table_locked


def test_title_matches_rank_above_body_matches(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    body = agent.write(
        uri="memory://workspace/notes/b.md",
        content="# Other\nthe kestrel flew",
        expected_revision=0,
    )
    title = agent.write(
        uri="memory://workspace/notes/t.md", content="# Kestrel\nbirds", expected_revision=0
    )
    agent.write(
        uri="memory://workspace/notes/c.md", content="# Unrelated\nnothing", expected_revision=0
    )
    hits = agent.search(query="kestrel")["hits"]
    assert [h["id"] for h in hits] == [title["id"], body["id"]]
    assert hits[0]["score"] >= hits[1]["score"] and "kestrel" in hits[1]["excerpt"]
    assert agent.search(query="kestrel", namespace="personal")["hits"] == []
    # Skills only when asked.
    skill = agent.write(
        uri="memory://workspace/skills/kestrel/SKILL.md",
        content="---\nname: kestrel\ndescription: watch kestrel\n---\n",
        expected_revision=0,
    )
    assert skill["id"] not in {h["id"] for h in agent.search(query="kestrel")["hits"]}
    assert skill["id"] in {h["id"] for h in agent.search(query="kestrel", kinds=["skills"])["hits"]}


@pytest.mark.parametrize("unit", ["日本語のテキスト", "🙂🚀✨", "ascii words here", 'é"\\<>'])
def test_budget_holds_with_multibyte_text(world, unit: str) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    for i in range(20):
        long_name = f"budget{i:02d}" + "x" * 40
        content = f"# {unit * 20} meerkat {long_name}\n" + (f"meerkat {unit} " * 400)[:60000]
        agent.write(
            uri=f"memory://workspace/memories/deep/er/{long_name}.md",
            content=content,
            expected_revision=0,
        )
    result = agent.search(query="meerkat")
    assert 1 <= len(result["hits"]) <= 8
    assert result["truncated"] is True
    assert jsonrpc_tool_result_size(result) <= RESPONSE_MAX_BYTES
    for hit in result["hits"]:
        encoded = hit["excerpt"].encode("utf-8")  # would raise on a broken character
        assert len(encoded) <= 500
        assert len(hit["title"].encode("utf-8")) <= 200
    # Also exact under the unescaped encoding an SDK might send.
    raw = json.dumps(result, ensure_ascii=False).encode()
    assert len(raw) <= RESPONSE_MAX_BYTES


def test_small_results_are_not_truncated(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    agent.write(
        uri="memory://workspace/notes/a.md", content="the wombat sleeps", expected_revision=0
    )
    result = agent.search(query="wombat")
    assert result["truncated"] is False and len(result["hits"]) == 1
    assert result["trust"] == "recorded-data"
    assert agent.search(query="zzzzunmatched")["hits"] == []
    # tsquery metacharacters are data, not syntax.
    for query in ("wombat & !", "'; DROP TABLE memory.memories; --", "a:* | b <-> c", "\\"):
        agent.search(query=query)


def test_a_statement_timeout_is_an_error_not_an_empty_result(world, cluster) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    agent.write(uri="memory://workspace/notes/a.md", content="the narwhal", expected_revision=0)
    with table_locked(cluster.owner_url, "memory.search_documents"):
        with pytest.raises(ToolError) as caught:
            memory_search(
                agent.store, agent.caller, SearchArgs(query="narwhal"), Deadline.after(0.3)
            )
        assert caught.value.code == "timeout"
    assert len(agent.search(query="narwhal")["hits"]) == 1
    with pytest.raises(ToolError) as caught:
        memory_search(agent.store, agent.caller, SearchArgs(query="narwhal"), Deadline.after(-1))
    assert caught.value.code == "timeout"


class InjectingRanker(DeterministicRanker):
    """A compromised ranker that slips in a record from outside the caller's view."""

    def __init__(self, planted: str) -> None:
        self.planted = planted

    def rank(self, query, candidates, limit):  # type: ignore[no-untyped-def]
        return [
            Candidate(__import__("uuid").UUID(self.planted), 99.0),
            *super().rank(query, candidates, limit - 1),
        ]


def test_a_compromised_ranker_fails_the_request(world, store) -> None:  # type: ignore[no-untyped-def]
    ws, other = world.workspace(), world.workspace()
    agent = ws.agent(ws.person("alice"))
    bob = ws.agent(ws.person("bob"))
    foreign = other.agent(other.person("mallory")).write(
        uri="memory://workspace/notes/x.md", content="stolen aardvark", expected_revision=0
    )
    personal = bob.write(uri="memory://me/notes/x.md", content="bob aardvark", expected_revision=0)
    agent.write(uri="memory://workspace/notes/y.md", content="aardvark", expected_revision=0)
    for planted in (foreign["id"], personal["id"]):
        evil = Store(store.db, store.cursor_secret, ranker=InjectingRanker(planted))
        with pytest.raises(ToolError) as caught:
            memory_search(evil, agent.caller, SearchArgs(query="aardvark"))
        assert caught.value.code == "unavailable" and "integrity" in caught.value.message


def test_phrases_quotes_and_odd_lexemes_survive_workspace_scoping(world) -> None:  # type: ignore[no-untyped-def]
    ws, other = world.workspace(), world.workspace()
    agent = ws.agent(ws.person("alice"))
    stranger = other.agent(other.person("eve"))
    phrase = agent.write(
        uri="memory://workspace/notes/p.md",
        content="the release train leaves at noon",
        expected_revision=0,
    )
    loose = agent.write(
        uri="memory://workspace/notes/q.md",
        content="train the team before the release",
        expected_revision=0,
    )
    odd = agent.write(
        uri="memory://workspace/notes/o.md",
        content="O'Brien wrote C:\\temp\\x and 'quoted' ünïcödé",
        expected_revision=0,
    )
    stranger.write(
        uri="memory://workspace/notes/p.md",
        content="the release train leaves at noon",
        expected_revision=0,
    )
    assert {h["id"] for h in agent.search(query="release train")["hits"]} == {
        phrase["id"],
        loose["id"],
    }
    assert {h["id"] for h in agent.search(query='"release train"')["hits"]} == {phrase["id"]}
    assert {h["id"] for h in agent.search(query="release -noon")["hits"]} == {loose["id"]}
    # Only a negation: every visible record without the word (none of the stranger's).
    assert {h["id"] for h in agent.search(query="-noon")["hits"]} == {loose["id"], odd["id"]}
    assert {h["id"] for h in agent.search(query="O'Brien")["hits"]} == {odd["id"]}
    assert {h["id"] for h in agent.search(query="ünïcödé")["hits"]} == {odd["id"]}
    assert {h["id"] for h in agent.search(query="temp")["hits"]} == {odd["id"]}
    assert agent.search(query="the and of")["hits"] == []  # only stop words: nothing, not an error


def test_the_ranked_window_is_the_newest_visible_matches_at_any_age(world, cluster) -> None:  # type: ignore[no-untyped-def]
    """The search function finds its window by probing recency stages (2 days up to
    about two years, then any time): whichever stage answers, the window must be
    exactly the newest visible matches, and records outside the view must neither
    appear nor take a place in it."""
    ws, other = world.workspace(), world.workspace()
    alice, bob = ws.person("alice"), ws.person("bob")
    ws.register("dm:U01ALICE", alice, bob)
    agent = ws.agent(alice)
    ages = [0.1, 0.6, 3, 4, 5, 6, 20, 40, 50, 100, 150, 300, 500, 900, 2000]  # days
    visible = []
    for i, _ in enumerate(ages):
        ns = "me" if i % 3 == 0 else "workspace"
        visible.append(
            agent.write(
                uri=f"memory://{ns}/notes/p{i}.md", content="the pangolin", expected_revision=0
            )["id"]
        )
    hidden = [
        ws.agent(bob).write(uri="memory://me/notes/h.md", content="pangolin", expected_revision=0),
        ws.agent(alice, "dm:U01ALICE").write(
            uri="memory://workspace/notes/h.md", content="pangolin", expected_revision=0
        ),
        other.agent(other.person("eve")).write(
            uri="memory://workspace/notes/h.md", content="pangolin", expected_revision=0
        ),
    ]
    with psycopg.connect(cluster.admin_url, autocommit=True) as admin:
        for record, age in zip(visible, ages, strict=True):
            admin.execute(
                "UPDATE memory.memories SET updated_at = now() - make_interval(secs => %s) "
                "WHERE id = %s",
                (age * 86400, record),
            )
        # The hidden records are the newest of all.
        admin.execute(
            "UPDATE memory.memories SET updated_at = now() + interval '1 minute' WHERE id = ANY (%s)",
            ([h["id"] for h in hidden],),
        )
    caller = agent.caller
    for window in range(1, len(ages) + 3):
        with agent.store.db.transaction(caller, Deadline(), read_only=True) as conn:
            rows = conn.execute(
                "SELECT memory_id FROM memory.search_candidates(%s, %s, %s, %s, %s)",
                ("pangolin", caller.visible_owners(), ["notes"], window, 100),
            ).fetchall()
        assert {str(r["memory_id"]) for r in rows} == set(visible[:window]), window


@pytest.mark.parametrize(
    "query", ["heron", "heron marsh", '"grey heron"', "heron -marsh", "heron or egret"]
)
def test_scores_are_the_plain_documents_scores_in_every_cell(world, cluster, query: str) -> None:  # type: ignore[no-untyped-def]
    """Scoping lexemes by cell must not change ranking: each candidate's score is
    ts_rank_cd of the record's own unscoped document against the plain query, whichever
    of the caller's cells (personal or shared, kind, context) the record lives in."""
    ws = world.workspace()
    alice = ws.person("alice")
    root, channel = ws.agent(alice), ws.agent(alice, "channel:marsh")
    texts = [
        "# Grey heron\nthe grey heron waits in the marsh",
        "a heron, an egret and a heron again",
        "# Egret\nno herons here, only an egret by the marsh",
        "heron heron heron in the reeds",
        "the marsh at dawn; later a grey heron",
    ]
    for i, text in enumerate(texts):
        for agent, ns, kind in ((root, "workspace", "notes"), (root, "me", "memories")):
            agent.write(uri=f"memory://{ns}/{kind}/r{i}.md", content=text, expected_revision=0)
        channel.write(uri=f"memory://workspace/notes/c{i}.md", content=text, expected_revision=0)
    caller = channel.caller
    with channel.store.db.transaction(caller, Deadline(), read_only=True) as conn:
        rows = conn.execute(
            "SELECT memory_id, score FROM memory.search_candidates(%s, %s, %s, %s, %s)",
            (query, caller.visible_owners(), ["memories", "notes"], 500, 100),
        ).fetchall()
    assert rows, query
    with psycopg.connect(cluster.admin_url, autocommit=True) as admin:
        plain = dict(
            admin.execute(
                "SELECT id, ts_rank_cd(search_vector, websearch_to_tsquery('english', %s)) "
                "FROM memory.memories WHERE id = ANY (%s)",
                (query, [r["memory_id"] for r in rows]),
            ).fetchall()
        )
    assert {r["memory_id"]: r["score"] for r in rows} == plain
    assert [r["score"] for r in rows] == sorted(plain.values(), reverse=True)
