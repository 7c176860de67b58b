"""Search: ranked, in view, within budget, and never silently empty on failure."""

from __future__ import annotations

import json
import math

import psycopg
import pytest
from memory_server.domain.arguments import SearchArgs
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import ToolError
from memory_server.domain.ranking import Candidate, DeterministicRanker
from memory_server.operations import memory_search
from memory_server.operations.store import Store
from memory_server.protocol.budget import RESPONSE_MAX_BYTES, jsonrpc_tool_result_size

from tests.builders import table_locked


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
    # Only a negation: nothing to look for, so nothing is found.
    assert agent.search(query="-noon")["hits"] == []
    assert {h["id"] for h in agent.search(query='-"leaves at noon" release')["hits"]} == {
        loose["id"]
    }
    assert {h["id"] for h in agent.search(query="O'Brien")["hits"]} == {odd["id"]}
    assert {h["id"] for h in agent.search(query="ünïcödé")["hits"]} == {odd["id"]}
    assert {h["id"] for h in agent.search(query="temp")["hits"]} == {odd["id"]}
    assert agent.search(query="the and of")["hits"] == []  # only stop words: nothing, not an error


def search(agent, query: str, **raw):  # type: ignore[no-untyped-def]
    return agent.search(query=query, **raw)["hits"]


def test_any_meaningful_term_matches_and_more_terms_rank_higher(world) -> None:  # type: ignore[no-untyped-def]
    """A question finds records holding any of its words, in other word forms, and the
    record that answers more of it comes first; AND semantics would find nothing."""
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    lease = agent.write(
        uri="memory://me/memories/flat.md",
        content="Priya wants to sign the Lisbon lease by April 30",
        expected_revision=0,
    )
    lisbon = agent.write(
        uri="memory://me/memories/trip.md",
        content="Booked a table in Lisbon for Friday",
        expected_revision=0,
    )
    agent.write(uri="memory://me/memories/other.md", content="nothing here", expected_revision=0)
    hits = search(agent, "when is Priya signing the leases for the flat in Lisbon?")
    assert [h["id"] for h in hits] == [lease["id"], lisbon["id"]]
    assert hits[0]["score"] > hits[1]["score"] > 0
    assert search(agent, "zzzunknown qqqwords") == []


def test_paths_are_searched_and_weigh_between_titles_and_bodies(world) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    body = agent.write(
        uri="memory://workspace/notes/misc/a.md",
        content="# Notes\nthe ocelot escaped",
        expected_revision=0,
    )
    path = agent.write(
        uri="memory://workspace/notes/ocelot-care/b.md",
        content="# Notes\nfeeding times",
        expected_revision=0,
    )
    title = agent.write(
        uri="memory://workspace/notes/misc/c.md",
        content="# Ocelot\nfeeding times",
        expected_revision=0,
    )
    assert [h["id"] for h in search(agent, "ocelot")] == [title["id"], path["id"], body["id"]]
    assert [h["id"] for h in search(agent, "care")] == [path["id"]]


def test_an_old_exact_match_beats_many_newer_weak_ones(world, cluster) -> None:  # type: ignore[no-untyped-def]
    """No recency window: a two-year-old record holding every word of the question
    outranks 40 records written today that hold one common word of it."""
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    old = agent.write(
        uri="memory://me/memories/old.md",
        content="The pangolin sanctuary moved to Kuching in March",
        expected_revision=0,
    )
    for i in range(40):
        agent.write(
            uri=f"memory://me/memories/new{i}.md",
            content=f"moved the desk {i} in the office",
            expected_revision=0,
        )
    with psycopg.connect(cluster.admin_url, autocommit=True) as admin:
        admin.execute(
            "UPDATE memory.memories SET updated_at = now() - interval '730 days' WHERE id = %s",
            (old["id"],),
        )
    hits = search(agent, "where was the pangolin sanctuary moved")
    assert hits[0]["id"] == old["id"] and len(hits) == 8
    # Among equal matches the newer record wins, by a small margin.
    assert hits[1]["score"] - hits[-1]["score"] < 0.3


PRIOR, HALF_LIFE_DAYS, K1, B, REFERENCE_LENGTH = 0.25, 60.0, 1.2, 0.75, 64.0
WEIGHTS = {"A": 3, "B": 2, "C": 0, "D": 1}


def bm25_by_hand(admin, ids: list[str], view: dict, query_words: str) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """BM25 as docs/contract.md states it, computed here from PostgreSQL's own lexemes
    of every record in the view (title and body from search_vector, path words from
    to_tsvector), with statistics counted from those records."""
    rows = admin.execute(
        "SELECT id::text, path, updated_at, extract(epoch FROM now() - updated_at) AS age "
        "FROM memory.memories WHERE workspace_id = %(ws)s AND owner_id = ANY (%(owners)s) "
        "AND context_key = ANY (%(contexts)s)",
        view,
    ).fetchall()
    terms: dict[str, dict[str, float]] = {}
    lengths: dict[str, int] = {}
    for record, path, _, _ in rows:
        words = path.removesuffix(".md")
        for sep in "/_.-":
            words = words.replace(sep, " ")
        lexemes = admin.execute(
            "SELECT u.lexeme, u.weights FROM memory.memories m, "
            "unnest(m.search_vector || setweight(to_tsvector('english', %s), 'B')) u "
            "WHERE m.id = %s",
            (words, record),
        ).fetchall()
        terms[record] = {lex: float(sum(WEIGHTS[w] for w in weights)) for lex, weights in lexemes}
        lengths[record] = sum(len(weights) for _, weights in lexemes)
    query = [
        r[0]
        for r in admin.execute(
            "SELECT unnest(tsvector_to_array(to_tsvector('english', %s)))", (query_words,)
        ).fetchall()
    ]
    n = len(rows)
    ages = {record: age for record, _, _, age in rows}
    scores = {}
    for record in ids:
        score = PRIOR * 0.5 ** (max(float(ages[record]), 0.0) / 86400 / HALF_LIFE_DAYS)
        for lexeme in query:
            df = sum(1 for t in terms.values() if lexeme in t)
            tf = terms[record].get(lexeme, 0.0)
            if tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                norm = K1 * (1 - B + B * lengths[record] / REFERENCE_LENGTH)
                score += idf * tf * (K1 + 1) / (tf + norm)
        scores[record] = score
    return scores


@pytest.mark.parametrize("query", ["heron", "grey heron marsh", "herons in the reeds at dawn"])
def test_scores_are_bm25_over_the_view_alone(world, cluster, query: str) -> None:  # type: ignore[no-untyped-def]
    """Each score is BM25 (plus the prior) with document frequencies counted over the
    records the caller can see: records in another person's namespace, another
    context or another workspace change nothing."""
    ws, other = world.workspace(), world.workspace()
    alice, bob = ws.person("alice"), ws.person("bob")
    root, channel = ws.agent(alice), ws.agent(alice, "channel:marsh")
    texts = [
        "# Grey heron\nthe grey heron waits in the marsh",
        "a heron, an egret and a heron again",
        "# Egret\nno herons here, only an egret by the marsh",
        "heron heron heron in the reeds",
        "the marsh at dawn; later a grey heron",
        "reeds and rushes",
    ]
    for i, text in enumerate(texts):
        root.write(uri=f"memory://workspace/notes/r{i}.md", content=text, expected_revision=0)
        root.write(uri=f"memory://me/memories/heron-{i}.md", content=text, expected_revision=0)
        channel.write(uri=f"memory://workspace/notes/c{i}.md", content=text, expected_revision=0)

    def scores() -> dict[str, float]:
        return {h["id"]: h["score"] for h in search(root, query)}

    before = scores()
    # Hidden from root's view: bob's personal notes, another channel, another workspace.
    for i in range(6):
        ws.agent(bob).write(uri=f"memory://me/notes/h{i}.md", content="heron", expected_revision=0)
        channel.write(uri=f"memory://workspace/notes/x{i}.md", content="heron", expected_revision=0)
        other.agent(other.person(f"eve{i}")).write(
            uri=f"memory://workspace/notes/h{i}.md", content="heron marsh", expected_revision=0
        )
    after = scores()
    assert after.keys() == before.keys() and len(after) == 8
    assert after == pytest.approx(before, abs=1e-5)
    caller = root.caller
    view = {
        "ws": caller.workspace_id,
        "owners": caller.visible_owners(),
        "contexts": list(caller.context.ancestors),
    }
    with psycopg.connect(cluster.admin_url, autocommit=True) as admin:
        expected = bm25_by_hand(admin, list(after), view, query)
    assert after == pytest.approx(expected, abs=1e-5)
    ranked = sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))
    assert list(after) == [record for record, _ in ranked]


def recount_differences(admin) -> list[tuple]:  # type: ignore[no-untyped-def]
    """Rows where search_statistics differs from a recount over memories (a zero count
    is a difference too: it would keep a deleted record's words)."""
    return admin.execute(
        "WITH recount AS ("
        "  SELECT workspace_id, owner_id, context_key, l AS lexeme, count(*)::int AS documents"
        "  FROM memory.memories, unnest(memory.search_lexemes(search_vector, path)) AS l"
        "  GROUP BY 1, 2, 3, 4), kept AS ("
        "  SELECT workspace_id, owner_id, context_key, lexeme, documents"
        "  FROM memory.search_statistics) "
        "(SELECT 'missing', * FROM recount EXCEPT SELECT 'missing', * FROM kept) UNION ALL "
        "(SELECT 'extra', * FROM kept EXCEPT SELECT 'extra', * FROM recount)"
    ).fetchall()


def test_statistics_follow_writes_moves_and_deletes(world, cluster) -> None:  # type: ignore[no-untyped-def]
    ws = world.workspace()
    alice = ws.person("alice")
    agent, channel = ws.agent(alice), ws.agent(alice, "channel:birds")
    a = agent.write(uri="memory://me/notes/a.md", content="kestrel owl", expected_revision=0)
    b = channel.write(uri="memory://workspace/notes/b.md", content="owl", expected_revision=0)
    agent.write(uri="memory://me/notes/a.md", content="kestrel kestrel wren", expected_revision=1)
    agent.remember(uri="memory://me/notes/a.md", fact="a heron too", idempotency_key="stats-key-1")
    agent.move(
        uri="memory://me/notes/a.md", new_uri="memory://me/memories/hawk/a.md", expected_revision=3
    )
    channel.delete(uri="memory://workspace/notes/b.md", expected_revision=1)
    with psycopg.connect(cluster.admin_url, autocommit=True) as admin:
        assert recount_differences(admin) == []
        counts = dict(
            admin.execute(
                "SELECT lexeme, documents FROM memory.search_statistics WHERE workspace_id = %s "
                "AND owner_id = %s AND lexeme IN ('', 'kestrel', 'owl', 'hawk', 'heron')",
                (ws.id, alice.id),
            ).fetchall()
        )
        assert counts == {"": 1, "kestrel": 1, "hawk": 1, "heron": 1}  # no owl left
        assert b["id"] not in {
            r[0] for r in admin.execute("SELECT memory_id FROM memory.search_documents").fetchall()
        }
        # A deleted workspace takes its statistics along.
        world.owner.execute("DELETE FROM memory.workspaces WHERE id = %s", (ws.id,))
        left = admin.execute(
            "SELECT count(*) FROM memory.search_statistics WHERE workspace_id = %s", (ws.id,)
        ).fetchone()
        assert left == (0,) and recount_differences(admin) == []
    assert a["id"]


def test_a_spent_budget_returns_the_best_of_what_it_fetched(world, cluster) -> None:  # type: ignore[no-untyped-def]
    """With room to finish, the result is exactly the top of an exhaustive ranking; with
    a budget too small to prove it, the best of the fetched records, still in the view."""
    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    for i in range(60):
        agent.write(
            uri=f"memory://me/memories/m{i}.md",
            content=("lark " * (1 + i % 4)) + ("finch " * (i % 3)) + ("filler word " * (i % 7)),
            expected_revision=0,
        )
    caller = agent.caller

    def candidates(budget: int) -> list[tuple[str, float]]:
        with agent.store.db.read(caller, Deadline()) as tx:
            return [
                (str(r["memory_id"]), r["score"])
                for r in tx.conn.execute(
                    "SELECT memory_id, score FROM memory.search_candidates("
                    "%s, '{}', '{}', %s, %s, %s, %s, %s)",
                    ("lark finch", caller.visible_owners(), ["memories"], 8, budget, 100_000),
                ).fetchall()
            ]

    full = candidates(10_000)
    with psycopg.connect(cluster.admin_url, autocommit=True) as admin:
        exhaustive = bm25_by_hand(
            admin,
            [
                r[0]
                for r in admin.execute(
                    "SELECT id::text FROM memory.memories WHERE workspace_id = %s", (ws.id,)
                ).fetchall()
            ],
            {"ws": ws.id, "owners": caller.visible_owners(), "contexts": ["workspace"]},
            "lark finch",
        )
    best = sorted(exhaustive.items(), key=lambda kv: (-kv[1], kv[0]))[:8]
    assert [r for r, _ in full] == [r for r, _ in best]
    small = candidates(5)
    assert 1 <= len(small) <= 8 and {r for r, _ in small} <= set(exhaustive)
    assert [s for _, s in small] == sorted((s for _, s in small), reverse=True)


def test_search_never_scans_a_table_sequentially(world, cluster) -> None:  # type: ignore[no-untyped-def]
    """The search function's plans are cached per session, made once from the table
    statistics of the moment. A new database's tables look empty until analysed, and
    a sequential scan planned then stayed for the session: every document read and
    its index expression computed, hundreds of milliseconds a question once a thousand
    records were written. Here the planner is told that sequential reads cost nothing;
    the search must still go through its indexes."""
    from memory_server.data.pool import request_settings
    from memory_server.data.statements import query

    from bench.search_bench import search_params

    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    for i in range(5):
        agent.write(
            uri=f"memory://workspace/notes/heron-{i}.md",
            content=f"# Heron {i}\nthe grey heron waded near the weir",
            expected_revision=0,
        )
    with psycopg.connect(cluster.owner_url) as conn:
        conn.execute(query("request_settings"), request_settings(agent.caller, 60_000))
        for cost in ("seq_page_cost", "cpu_tuple_cost", "cpu_operator_cost"):
            conn.execute(f"SET LOCAL {cost} = 0")
        found = conn.execute(
            query("search_candidates"), search_params(agent.caller, "grey heron weir")
        ).fetchall()
        scans = dict(
            conn.execute(
                "SELECT relname, seq_scan FROM pg_stat_xact_user_tables "
                "WHERE schemaname = 'memory' AND relname IN "
                "('search_documents', 'search_statistics')"
            ).fetchall()
        )
    assert len(found) == 5
    assert scans == {"search_documents": 0, "search_statistics": 0}, scans


def test_each_candidate_carries_the_querys_full_score(world) -> None:  # type: ignore[no-untyped-def]
    """The full score the fusion scales the words by (operations/memory_search.py,
    fuse): the sum of the query words' idf over the view, a word no record holds
    included; a record holding every word in its title scores above it, a long one
    holding a single word once below it."""
    from memory_server.data import search
    from memory_server.data.search import Terms
    from memory_server.domain.limits import SEARCH_FETCH_BUDGET, SEARCH_SCORE_BUDGET

    ws = world.workspace()
    agent = ws.agent(ws.person("alice"))
    bodies = {
        "both": "# Heron weir\nthe heron fishes at the weir",
        # Longer than the reference length of 64 terms: one word counts less there.
        "heron": "# Birds\na heron stood still; " + "the mill race ran cold past reeds " * 15,
        "weir-1": "# River\nthe old weir",
        "weir-2": "# Mill\nwater over a weir",
        "other-1": "# Lunch\nsoup and bread",
        "other-2": "# Tools\na hammer and a saw",
    }
    ids = {
        name: agent.write(
            uri=f"memory://workspace/notes/{name}.md", content=body, expected_revision=0
        )["id"]
        for name, body in bodies.items()
    }

    def candidates(words: str) -> search.WordMatches:
        with agent.store.db.read(agent.caller, Deadline()) as tx:
            return search.candidates(
                tx,
                Terms(words, [], []),
                owners=agent.caller.visible_owners(),
                kinds=["notes"],
                limit=8,
                fetch_budget=SEARCH_FETCH_BUDGET,
                score_budget=SEARCH_SCORE_BUDGET,
            ).get()

    def idf(df: int, n: int = len(bodies)) -> float:
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    found = candidates("heron weir")
    assert found.full_score == pytest.approx(idf(2) + idf(3))
    scores = {str(s.id): s.score for s in found.scored}
    assert set(scores) == {ids[n] for n in ("both", "heron", "weir-1", "weir-2")}
    assert scores[ids["both"]] > found.full_score > scores[ids["heron"]] > 0
    assert candidates("heron weir otter").full_score == pytest.approx(idf(2) + idf(3) + idf(0))
    assert candidates("otter").full_score == 0.0  # no row to carry it
