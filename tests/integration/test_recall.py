"""A slice of the recall-quality set (bench/recall_set.py) as a regression guard.

The full benchmark is ``python -m bench.recall_bench`` (docs/performance.md); here 40
of its questions are asked of about 240 of its memories, written through the tools
into a fresh workspace, and the search must keep finding their evidence far more
often than the every-word search it replaced.
"""

from __future__ import annotations

import psycopg
from memory_server.protocol.tools import ToolTable

from bench.recall_bench import and_search, load, metrics, outcomes, product_search
from bench.recall_set import COLLEAGUES, READER, generate


def test_questions_find_their_evidence(world, cluster) -> None:  # type: ignore[no-untyped-def]
    recall = generate().slice(40)
    ws = world.workspace()
    agents = {handle: ws.agent(ws.person(handle)) for handle in (READER, *COLLEAGUES)}
    writers = {handle: agent._run for handle, agent in agents.items()}
    reader = agents[READER]
    with psycopg.connect(cluster.admin_url, autocommit=True) as admin:
        ids = load(recall, writers, admin)
        new = metrics(
            outcomes(recall.questions, ids, product_search(ToolTable(reader.store), reader.caller))
        )
        old = metrics(outcomes(recall.questions, ids, and_search(admin, reader.caller)))
    assert new["questions"] == 40
    assert new["no_result"] == 0.0
    assert new["hit@5"] >= 0.7, new
    assert new["hit@5"] >= old["hit@5"] + 0.4, (new, old)
    assert new["mrr"] > old["mrr"], (new, old)
